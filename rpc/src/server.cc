// Server: the public face of ServerCore (server_core.h).
#include <wheelrpc/rpc/server.h>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/health.h>
#include <wheelrpc/rpc/service.h>

#include "base/metadata_split.h"
#include "server/server_options.h"
#include "server/server_core.h"
#include "wires.h"

namespace wheelrpc::rpc {
namespace asio = boost::asio;
using boost::system::error_code;

// ---------------------------------------------------------------- Server

namespace {
// The options the server runs with: the deprecated fields folded in, checked.
ServerOptions validated(const ServerOptions& o) {
  ServerOptions r = detail::resolved(o);
  validate(r);
  return r;
}
}  // namespace

Server::Server(asio::any_io_executor ex, timer::Timer& timer, ServerOptions options)
    : core_(std::make_shared<detail::ServerCore>(std::move(ex), timer, validated(options),
                                                 &detail::make_server_connection)) {}

Server::~Server() { stop(); }

void Server::add_service(Service& service) { core_->add_service(service); }

const ServiceMethod* Server::service_method(std::string_view path) const { return core_->service_method(path); }
std::vector<const Service*> Server::services() const { return core_->services(); }
bool Server::is_stream_method(std::string_view method) const { return core_->is_stream_method(std::string(method)); }

void Server::handle(std::string method, Handler handler, MethodOptions options) {
  core_->handle(std::move(method), std::move(handler), options);
}
void Server::handle_stream(std::string method, StreamHandler handler, MethodOptions options) {
  core_->handle_stream(std::move(method), std::move(handler), options);
}
error_code Server::listen(const asio::ip::tcp::endpoint& endpoint) {
  std::string message;
  return core_->listen(endpoint, message);
}
error_code Server::listen(const asio::ip::tcp::endpoint& endpoint, std::string& message) {
  return core_->listen(endpoint, message);
}
asio::ip::tcp::endpoint Server::local_endpoint() const { return core_->local_endpoint(); }
void Server::stop() { core_->stop(); }
void Server::start_shutdown(std::chrono::milliseconds drain_timeout,
                            boost::asio::any_completion_handler<ShutdownSignature> handler) {
  core_->shutdown().start(drain_timeout, std::move(handler));
}
ServerStats Server::stats() const { return core_->stats(); }
std::vector<MethodStats> Server::method_stats() const { return core_->method_stats(); }
std::vector<TimeoutRecord> Server::recent_timeouts() const { return core_->recent_timeouts(); }
std::vector<ConnectionInfo> Server::connections() const { return core_->connections(); }
void Server::set_online(bool online) { core_->shutdown().set_online(online); }
void Server::apply_rules(std::shared_ptr<const ServerRules> rules) { core_->apply_rules(std::move(rules)); }
std::shared_ptr<const ServerRules> Server::rules() const { return core_->rules(); }
ServerState Server::state() const { return core_->shutdown().state(); }
Health& Server::health() noexcept { return core_->health(); }
void Server::set_application_utilization(double utilization) noexcept {
  core_->load_reporter().set_application_utilization(utilization);
}

void Server::start_invoke(std::string method, std::string payload, std::chrono::milliseconds timeout,
                          boost::asio::any_completion_handler<InvokeSignature> handler,
                          transport::Attachments metadata) {
  auto shared = std::make_shared<boost::asio::any_completion_handler<InvokeSignature>>();
  shared->swap(handler);
  auto ex = core_->executor();
  auto done = [shared, ex](Status status, std::string body, transport::Attachments attached) {
    Response r;
    const auto ec = status_error(status);
    if (ec) {
      r.error_message = std::move(body);
    } else {
      detail::take_reply(body, attached, false, r);
    }
    auto assoc = asio::get_associated_executor(*shared, ex);
    asio::post(ex, asio::bind_executor(
                       assoc, [shared, ec, r = std::move(r)]() mutable { std::move (*shared)(ec, std::move(r)); }));
  };
  // Handlers run on the executor, as for a request read from a connection.
  asio::post(ex, [core = core_, m = std::move(method), p = std::move(payload), a = std::move(metadata), timeout,
                  done = std::move(done)]() mutable {
    core->invoke(std::move(m), std::move(p), std::move(a), timeout, std::move(done));
  });
}

}  // namespace wheelrpc::rpc
