// The TLS side of Channel: a server's check of the peer's first byte, the
// handshake, and the last words to a peer that speaks the other protocol.
// The read and write loops (channel.cc) use the SSL stream once this is done.

#include <wheelrpc/transport/channel.h>

#include <cassert>
#include <cstdint>
#include <string>

#include <boost/asio/bind_executor.hpp>
#include <fmt/format.h>
#include <openssl/ssl.h>

#include <wheelrpc/transport/errc.h>

#include "log.h"
#include "tls_stream.h"

namespace wheelrpc::transport {
namespace asio = boost::asio;
using boost::system::error_code;

void Channel::do_tls_peek() {
  assert(strand_.running_in_this_thread());
  // A TLS client's first byte opens a handshake record; anything else is a
  // plaintext peer, told so in the only words it may understand (a TLS
  // alert it can recognize) instead of OpenSSL's "wrong version number".
  socket_.async_receive(
      asio::buffer(&tls_->first_byte, 1), asio::socket_base::message_peek,
      asio::bind_executor(strand_, [self = shared_from_this()](const error_code& ec, std::size_t n) {
        if (!self->is_open()) return;
        if (ec || n == 0) {
          self->do_close(ec ? ec : asio::error::eof, ec == asio::error::eof || !ec
                                                         ? std::string("closed by peer before the TLS handshake")
                                                         : "read failed before the TLS handshake: " + ec.message());
          return;
        }
        if (self->tls_->first_byte != detail::kTlsHandshakeRecord) {
          // A fatal protocol_version alert (TLS 1.2 record): "this port speaks TLS".
          // What the peer sent is read first, so the close is a FIN after
          // the alert, not a reset that could overtake it.
          self->drain_now();
          self->write_now(std::string("\x15\x03\x03\x00\x02\x02\x46", 7));
          self->do_close(make_error_code(errc::tls_required),
                         fmt::format("plaintext peer on a TLS port: its first byte 0x{:02x} does not open a TLS "
                                     "handshake record (0x16)",
                                     self->tls_->first_byte));
          return;
        }
        self->do_tls_handshake();
      }));
}

void Channel::do_tls_handshake() {
  assert(strand_.running_in_this_thread());
  if (!is_open()) return;
  tls_->stream.async_handshake(
      tls_->ctx.role() == TlsRole::server ? asio::ssl::stream_base::server : asio::ssl::stream_base::client,
      asio::bind_executor(strand_, [self = shared_from_this()](const error_code& ec) { self->on_tls_handshake(ec); }));
}

void Channel::on_tls_handshake(const error_code& ec) {
  assert(strand_.running_in_this_thread());
  if (!is_open()) return;  // closed meanwhile (the owner's timeout): that close said why
  if (ec) {
    auto failure = detail::describe_tls_failure(ec, *tls_, tls_->ctx.role(), true);
    do_close(failure.ec, failure.reason);
    return;
  }
  tls_->handshaking = false;
  SSL* ssl = tls_->stream.native_handle();
  detail::logger()->debug("conn={} peer={} TLS handshake done: {} {}", id_, remote_, SSL_get_version(ssl),
                          SSL_get_cipher_name(ssl));
  if (tls_->ctx.role() == TlsRole::server && options_.accept_http2) {
    const unsigned char* alpn = nullptr;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    if (alpn_len == 2 && alpn[0] == 'h' && alpn[1] == '2' && !switch_to_http2("ALPN h2")) return;
  }
  do_write();  // what was sent meanwhile (or writing_ = false)
  do_read();
}

void Channel::drain_now() {
  error_code ec;
  socket_.non_blocking(true, ec);
  std::uint8_t sink[4096];
  for (int i = 0; i < 16 && !ec; ++i) socket_.read_some(asio::buffer(sink), ec);
}

void Channel::write_now(const std::string& bytes) {
  error_code ec;
  socket_.non_blocking(true, ec);
  if (!ec) socket_.write_some(asio::buffer(bytes), ec);
}

}  // namespace wheelrpc::transport
