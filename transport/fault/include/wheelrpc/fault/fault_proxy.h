#pragma once
/// FaultProxy: a loopback TCP proxy that injects faults (toxics) between a
/// client and a server, modelled on Toxiproxy. A test tool, not a hot path.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/fault/errc.h>
#include <wheelrpc/fault/toxic.h>

namespace wheelrpc::fault {

namespace detail {
class ProxyState;
}

/// Tuning of a FaultProxy; the defaults suit tests.
struct FaultProxyOptions {
  /// How long a connection to the upstream may take before the client's
  /// connection is closed. Default 5 s.
  std::chrono::milliseconds connect_timeout{5000};
  /// Largest single read from either socket (bytes); each read is one chunk
  /// for the toxics. Default 16 KiB.
  std::size_t read_size = std::size_t{16} << 10;
  /// Bytes read but not yet written, per direction, beyond which the proxy
  /// stops reading that direction (TCP back-pressure reaches the sender).
  /// Default 1 MiB.
  std::size_t max_buffered = std::size_t{1} << 20;
};

/// Counters since construction. Byte counts: "in" = read from the sender,
/// "out" = written to the receiver; in - out - dropped = bytes still held.
struct ProxyStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_active = 0;         ///< accepted and not yet closed
  std::uint64_t upstream_connect_failures = 0;  ///< refused, timed out, ...
  std::uint64_t bytes_upstream_in = 0;          ///< read from clients
  std::uint64_t bytes_upstream_out = 0;         ///< written to the server
  std::uint64_t bytes_downstream_in = 0;        ///< read from the server
  std::uint64_t bytes_downstream_out = 0;       ///< written to clients
  std::uint64_t bytes_dropped = 0;              ///< discarded by toxics or by a close
  std::uint64_t toxics_applied = 0;             ///< sum of ToxicInfo::applied, including removed toxics
  std::uint64_t resets = 0;                     ///< connections closed with RST by reset_peer
  std::uint64_t limit_closes = 0;               ///< connections closed by limit_data
  bool up = false;                              ///< accepting connections
};

/// Listens on `listen` and forwards each accepted connection to `upstream`
/// through one upstream connection, bytes pumped both ways on a strand per
/// connection pair, through the toxics of that direction.
///
/// Toxics form a chain per direction in the order they were added; a toxic
/// added while traffic flows joins the end of the chain of every existing
/// connection (so bytes another toxic still holds pass through it too) and
/// starts the chain of new ones. Removing a toxic takes it out of every chain
/// at once: bytes it holds (latency, bandwidth, slicer) go on to the next toxic
/// immediately, in order; bytes a blackhole or limit_data discarded are gone;
/// a pending reset_peer is cancelled.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: every public method is safe to call from any thread,
/// including from handlers running on `ex`. Requires `ex` to be run by at least
/// one thread. The destructor calls `stop()`; connections then close on `ex`.
class FaultProxy {
 public:
  /// `listen` port 0 picks a free port at `start()`; `down()`/`up()` keep it.
  FaultProxy(boost::asio::any_io_executor ex, boost::asio::ip::tcp::endpoint listen,
             boost::asio::ip::tcp::endpoint upstream, FaultProxyOptions options = {});
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  /// Binds (SO_REUSEADDR), listens and starts accepting. errc::stopped after
  /// `stop()`; a no-op when already up.
  boost::system::error_code start();
  /// Stops accepting and closes every connection, for good. Idempotent.
  void stop();

  /// The listening endpoint, with the real port once started.
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  boost::asio::ip::tcp::endpoint upstream_endpoint() const;

  /// Adds a toxic to the proxy, its existing connections and new ones.
  /// errc::invalid_toxic (see `validate`), errc::toxic_exists.
  boost::system::error_code add_toxic(Toxic toxic);
  /// Removes a toxic by name; errc::no_such_toxic when there is none.
  boost::system::error_code remove_toxic(std::string_view name);
  /// The toxics, in the order they were added.
  std::vector<ToxicInfo> toxics() const;

  /// Refuses new connections (closes the listening socket: clients see
  /// connection refused) and closes every existing one. Toxics stay.
  void down();
  /// Listens again on the same port. errc::stopped after `stop()`,
  /// errc::not_started before `start()`; a bind error when the port was taken.
  boost::system::error_code up();
  /// True between start()/up() and down()/stop().
  bool is_up() const;

  ProxyStats stats() const;

 private:
  std::shared_ptr<detail::ProxyState> state_;
};

}  // namespace wheelrpc::fault
