#include <wheelrpc/rpc/client.h>

#include <future>
#include <stdexcept>
#include <string>

#include <wheelrpc/rpc/backoff.h>

#include "client/client_core.h"
#include "base/executor_thread.h"
#include "wires.h"

namespace wheelrpc::rpc {

Client::Client(executor_type ex, timer::Timer& timer, std::vector<boost::asio::ip::tcp::endpoint> servers,
               ClientOptions options) {
  if (servers.empty()) throw std::invalid_argument("wheelrpc::rpc::Client needs at least one server");
  validate(options);
  core_ =
      std::make_shared<detail::ClientCore>(std::move(ex), timer, std::move(options), &detail::make_client_transport);
  core_->init(servers);
}

Client::Client(executor_type ex, timer::Timer& timer, std::shared_ptr<ProviderSource> source, ClientOptions options) {
  if (!source) throw std::invalid_argument("wheelrpc::rpc::Client needs a provider source (got null)");
  validate(options);
  core_ =
      std::make_shared<detail::ClientCore>(std::move(ex), timer, std::move(options), &detail::make_client_transport);
  core_->init(std::move(source));
}

Client::~Client() { close(); }

void Client::start_call(std::string method, std::string payload, CallOptions options,
                        boost::asio::any_completion_handler<Signature> handler) {
  core_->start_call(std::move(method), std::move(payload), std::move(options), std::move(handler));
}

using detail::runs_in_this_thread;

Response Client::call(std::string method, std::string payload, CallOptions options) {
  if (runs_in_this_thread(get_executor())) {
    throw CallError(errc::bad_request,
                    "Client::call('" + method +
                        "') on a thread that runs the client's executor would wait for "
                        "itself (the reply and the deadline need that thread): not sent; use async_call there");
  }
  std::promise<std::pair<boost::system::error_code, Response>> promise;
  auto future = promise.get_future();
  async_call(std::move(method), std::move(payload), std::move(options),
             [&promise](boost::system::error_code ec, Response r) {
               promise.set_value({ec, std::move(r)});
             });
  auto [ec, response] = future.get();
  if (ec) throw CallError(ec, std::move(response.error_message));
  return std::move(response);
}

void Client::send_failback(std::string method, std::string payload, CallOptions options) {
  core_->send_failback(detail::RetryTimerTask::Delivery{std::move(method), std::move(payload), std::move(options), 1});
}

void Client::connect() { core_->connect_all(); }
std::vector<ProviderStats> Client::providers() const { return core_->providers(); }
SourceState Client::source_state() const { return core_->source_state(); }

void Client::close() { core_->close(); }
ClientStats Client::stats() const { return core_->stats(); }
std::vector<MethodStats> Client::method_stats() const { return core_->method_stats(); }
MethodExplanation Client::explain(std::string_view method) const { return core_->explain(method); }
std::vector<TimeoutRecord> Client::recent_timeouts() const { return core_->recent_timeouts(); }
std::vector<ConnectionInfo> Client::connections() const { return core_->connections(); }
Client::executor_type Client::get_executor() const noexcept { return core_->executor(); }

std::shared_ptr<detail::StreamCore> Client::make_stream(const std::string& method, CallOptions& options) {
  return core_->make_stream(method, options);
}

void Client::start_stream(std::shared_ptr<detail::StreamCore> stream, std::string method, CallOptions options,
                          boost::asio::any_completion_handler<StreamSignature> handler) {
  core_->start_stream(std::move(stream), std::move(method), std::move(options), std::move(handler));
}

}  // namespace wheelrpc::rpc
