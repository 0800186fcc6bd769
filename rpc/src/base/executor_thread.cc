#include "base/executor_thread.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

namespace wheelrpc::rpc::detail {

bool runs_in_this_thread(const boost::asio::any_io_executor& ex) {
  namespace asio = boost::asio;
  if (const auto* io = ex.target<asio::io_context::executor_type>()) return io->running_in_this_thread();
  if (const auto* pool = ex.target<asio::thread_pool::executor_type>()) return pool->running_in_this_thread();
  if (const auto* strand = ex.target<asio::strand<asio::io_context::executor_type>>()) {
    return strand->get_inner_executor().running_in_this_thread();
  }
  if (const auto* strand = ex.target<asio::strand<asio::any_io_executor>>()) {
    return runs_in_this_thread(strand->get_inner_executor());
  }
  return false;
}

}  // namespace wheelrpc::rpc::detail
