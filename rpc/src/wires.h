#pragma once
// The wire factory: the one place that names every wire. The client and the
// server ask it for a connection's wire (through the pointers they are
// given: ClientWireFactory, ServerWireFactory) and never name one; adding a
// protocol means a wire folder and a few lines here.

#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "wire/client_transport.h"
#include "wire/server_wire_factory.h"
#include "wire/wire_settings.h"

namespace wheelrpc::rpc::detail {

// ---- client

/// A ClientWireFactory: the transport of a connection made to `peer` on
/// `socket`, native or gRPC as `settings->protocol` says (gRPC's :authority
/// is settings->server_name, else `peer`). Not started. Any thread.
std::shared_ptr<ClientTransport> make_client_transport(boost::asio::ip::tcp::socket socket,
                                                       std::shared_ptr<ClientTransportEvents> events,
                                                       std::shared_ptr<const ClientWireSettings> settings,
                                                       const std::string& peer);

// ---- server

/// A ServerWireFactory: the wire of a connection the server accepted on
/// `socket`, the native protocol's, which hands a client that opens with
/// HTTP/2 to the gRPC wire (when ServerWireSettings::grpc.enabled). Its
/// channel is not started; its HELLO timeout is armed on `timer`. Where
/// the acceptor delivers (the server's executor).
AcceptedConnection make_server_connection(boost::asio::ip::tcp::socket socket,
                                          const std::shared_ptr<ServerEvents>& events, timer::Timer& timer,
                                          const transport::TlsContext* tls);

}  // namespace wheelrpc::rpc::detail
