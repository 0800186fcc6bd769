#pragma once
// Whether the calling thread runs an executor: a blocking wait there would
// wait for itself.

#include <boost/asio/any_io_executor.hpp>

namespace wheelrpc::rpc::detail {

/// True if the calling thread runs `ex` (io_context, thread_pool, and
/// strands of either or of any_io_executor); other executor types are
/// assumed not to run here.
bool runs_in_this_thread(const boost::asio::any_io_executor& ex);

}  // namespace wheelrpc::rpc::detail
