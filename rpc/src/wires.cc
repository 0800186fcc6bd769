#include "wires.h"

#include <type_traits>

#include "wire/grpc/grpc_client_transport.h"
#include "wire/grpc/grpc_server_connection.h"
#include "wire/native/native_client_transport.h"
#include "wire/native/native_server_connection.h"

namespace wheelrpc::rpc::detail {

// ---- client

std::shared_ptr<ClientTransport> make_client_transport(boost::asio::ip::tcp::socket socket,
                                                       std::shared_ptr<ClientTransportEvents> events,
                                                       std::shared_ptr<const ClientWireSettings> settings,
                                                       const std::string& peer) {
  if (settings->protocol == WireProtocol::grpc) {
    std::string authority = settings->server_name.empty() ? peer : settings->server_name;
    return GrpcClientTransport::create(std::move(socket), std::move(events), std::move(settings), std::move(authority));
  }
  return NativeClientTransport::create(std::move(socket), std::move(events), std::move(settings));
}
static_assert(std::is_same_v<decltype(&make_client_transport), ClientWireFactory>);

// ---- server

namespace {
// The native wire's HTTP/2 hand-off: gRPC takes the channel over.
std::shared_ptr<transport::ChannelHandler> grpc_takes_over(const ConnContextPtr& context,
                                                           const std::shared_ptr<transport::Channel>& channel,
                                                           std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms) {
  return GrpcServerConnection::create(context, channel, std::move(heartbeat_ms));
}
static_assert(std::is_same_v<decltype(&grpc_takes_over), Http2Handoff>);
}  // namespace

AcceptedConnection make_server_connection(boost::asio::ip::tcp::socket socket,
                                          const std::shared_ptr<ServerEvents>& events, timer::Timer& timer,
                                          const transport::TlsContext* tls) {
  auto handler = std::make_shared<ServerConnection>(events, &grpc_takes_over);
  auto channel = transport::Channel::create(std::move(socket), handler, events->wire_settings().channel, tls);
  handler->attach(handler, channel);
  handler->start_hello_timeout(timer, channel);
  return {channel, handler->heartbeat_ms(), handler->context()};
}
static_assert(std::is_same_v<decltype(&make_server_connection), ServerWireFactory>);

}  // namespace wheelrpc::rpc::detail
