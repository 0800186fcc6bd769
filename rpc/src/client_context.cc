#include "client_context.h"

namespace wheelrpc::rpc::detail {

ClientContext::ClientContext(boost::asio::any_io_executor executor, timer::Timer& t, ClientOptions opts)
    : ex(std::move(executor)),
      io_ex(ex.target<boost::asio::io_context::executor_type>()),
      timer(t),
      options(std::move(opts)),
      clock(options.clock),
      coding{options.compression.threshold, options.compression.accept, options.compression.max_ratio} {
  if (options.tls.enabled) tls = transport::TlsContext::make(options.tls, transport::TlsRole::client);
  if (!options.interceptors.empty()) {
    interceptors = std::make_shared<const std::vector<std::shared_ptr<ClientInterceptor>>>(options.interceptors);
  }
  if (!options.attempt_interceptors.empty()) {
    attempt_interceptors =
        std::make_shared<const std::vector<std::shared_ptr<ClientInterceptor>>>(options.attempt_interceptors);
  }
}

}  // namespace wheelrpc::rpc::detail
