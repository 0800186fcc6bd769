#include "client_context.h"

namespace wheelrpc::rpc::detail {

ClientContext::ClientContext(boost::asio::any_io_executor executor, timer::Timer& t, ClientOptions opts)
    : ex(std::move(executor)),
      io_ex(ex.target<boost::asio::io_context::executor_type>()),
      timer(t),
      options(std::move(opts)),
      clock(options.clock) {
  if (options.tls.enabled) tls = transport::TlsContext::make(options.tls, transport::TlsRole::client);
}

}  // namespace wheelrpc::rpc::detail
