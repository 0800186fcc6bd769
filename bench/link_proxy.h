#pragma once
/// rpc_bench client's `--via-proxy-kbps N`: a slow link between the client
/// and the server, made by an in-process FaultProxy (docs/fault_proxy.md)
/// with a `bandwidth` toxic of N KB/s (1 KB = 1000 bytes) on both
/// directions, on an io_context and thread of its own so that it takes
/// nothing from the client's event loop (its CPU counts in the client
/// process's, as `client_cpu_s`).

#include <cstdint>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/fault/fault_proxy.h>

namespace wheelrpc::bench {

/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe (one owner; the proxy
/// runs on its own thread).
class LinkProxy {
 public:
  /// Listens on 127.0.0.1 (a free port) and forwards to `upstream` at
  /// `kb_per_s` each way. Throws std::runtime_error when it cannot listen.
  LinkProxy(const boost::asio::ip::tcp::endpoint& upstream, std::uint64_t kb_per_s);
  /// Stops the proxy (closing its connections) and joins its thread.
  ~LinkProxy();
  LinkProxy(const LinkProxy&) = delete;
  LinkProxy& operator=(const LinkProxy&) = delete;

  /// Where the client connects.
  boost::asio::ip::tcp::endpoint endpoint() const { return proxy_.local_endpoint(); }
  fault::ProxyStats stats() const { return proxy_.stats(); }

 private:
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  fault::FaultProxy proxy_;
  std::thread thread_;
};

}  // namespace wheelrpc::bench
