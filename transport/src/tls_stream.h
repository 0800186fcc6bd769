#pragma once
// What TLS adds to a channel, private to the transport: the SSL context
// behind a TlsContext, a channel's SSL stream over its socket, and the words
// for what went wrong in a handshake.

#include <cstdint>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/tls.h>

namespace wheelrpc::transport {

struct TlsContext::Impl {
  Impl(TlsOptions o, TlsRole r);
  TlsOptions options;
  TlsRole role;
  // Immutable once made; OpenSSL's SSL_CTX may be shared by threads.
  mutable boost::asio::ssl::context ssl;
};

// The SSL stream of one channel, over the channel's own socket (a reference:
// the channel closes the socket, which ends any TLS operation). Strand only.
struct Channel::Tls {
  Tls(const TlsContext& context, boost::asio::ip::tcp::socket& socket)
      : ctx(context), stream(socket, context.impl().ssl) {}
  TlsContext ctx;  // keeps the SSL_CTX alive
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream;
  std::string verified_name;  // client: the name the server's certificate must carry
  bool handshaking = true;
  std::uint8_t first_byte = 0;  // server: the peer's first byte, peeked before the handshake
};

namespace detail {

// The first byte of a TLS record: a handshake (ClientHello, ServerHello) and an alert.
inline constexpr std::uint8_t kTlsHandshakeRecord = 0x16;
inline constexpr std::uint8_t kTlsAlertRecord = 0x15;

// Prepares `tls` for its handshake: the name a client verifies (and sends as
// SNI): `server_name`, or the peer's address when empty.
// A client offers ALPN `h2` when `http2`, else `wheelrpc`.
void prepare_tls(Channel::Tls& tls, TlsRole role, const std::string& server_name,
                 const boost::asio::ip::tcp::endpoint& peer, bool http2);

// Why a TLS operation failed, in words that name the reason (unknown CA,
// name mismatch, expired certificate, a peer that does not speak TLS, a
// missing client certificate), and the transport errc it counts as.
struct TlsFailure {
  boost::system::error_code ec;
  std::string reason;
};
TlsFailure describe_tls_failure(const boost::system::error_code& ec, Channel::Tls& tls, TlsRole role,
                                bool in_handshake);

// Whether bytes that failed to decode as a frame at the start of a
// connection are a TLS record ("\x16\x03" or "\x15\x03"); the reason to give
// if so, else empty.
std::string tls_record_reason(const std::uint8_t* data, std::size_t n);

}  // namespace detail
}  // namespace wheelrpc::transport
