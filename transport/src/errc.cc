#include <wheelrpc/transport/errc.h>

#include <string>

namespace wheelrpc::transport {
namespace {

// boost::system::error_category has a protected non-virtual destructor on
// purpose (categories are never deleted through a base pointer), which
// -Wnon-virtual-dtor flags in every derived class; Boost silences it the same
// way around its own categories.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#endif

class TransportCategory final : public boost::system::error_category {
 public:
  // A fixed 64-bit id makes codes from copies of this category (one per shared
  // library that links the transport statically) compare equal; Boost compares
  // categories by id when one is given, by address otherwise.
  constexpr TransportCategory() noexcept : boost::system::error_category(0xb3c2'5e71'0a94'd6f1ULL) {}

  const char* name() const noexcept override { return "wheelrpc.transport"; }

  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::bad_magic: return "bad magic number: the peer does not speak the wheelrpc protocol";
      case errc::unsupported_version: return "unsupported wheelrpc protocol version";
      case errc::body_too_large: return "frame body exceeds the configured size limit";
      case errc::malformed_frame: return "malformed frame: a length in the body overruns the body";
      case errc::closed: return "the channel was closed";
      case errc::write_queue_full: return "the write queue is full";
      case errc::connect_timeout: return "the connection attempt timed out";
      case errc::idle_timeout: return "the connection was closed after being idle for too long";
      case errc::protocol_error: return "the peer violated the wheelrpc protocol";
      case errc::tls_handshake_failed: return "the TLS handshake failed";
      case errc::tls_required: return "the peer speaks TLS and this end plaintext";
      case errc::tls_not_spoken: return "the peer does not speak TLS";
      case errc::decompressed_too_large: return "the compressed payload inflates past the size or ratio limit";
      case errc::corrupt_compression: return "the compressed payload is not a valid stream of its algorithm";
    }
    return "unknown wheelrpc.transport error " + std::to_string(ev);
  }
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

}  // namespace

const boost::system::error_category& transport_category() noexcept {
  static const TransportCategory category;
  return category;
}

}  // namespace wheelrpc::transport
