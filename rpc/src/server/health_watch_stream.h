#pragma once
// One grpc.health.v1.Health/Watch stream: reads its request, then writes
// its service's status each time it changes, keeping only the newest one
// not yet written (a client that reads slowly gets the latest status, never
// a queue), and ends with OK when a graceful shutdown drains.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/health.h>
#include <wheelrpc/rpc/server_stream.h>

namespace wheelrpc::rpc::detail {

class StreamCore;

/// Its stream's work (the read, the writes, the finish) runs on the stream's
/// executor (the connection's, or ServerOptions::handler_executor), one step
/// at a time: offer() and close() may be called from any thread (the
/// registry's, under its lock) and only post that work. `mu_` is a leaf.
class HealthWatchStream : public std::enable_shared_from_this<HealthWatchStream> {
 public:
  /// Where a watch is kept (HealthRegistry, through HealthService): `add`
  /// once its request was read (false: the server stopped, it ends with
  /// UNAVAILABLE); `remove` once its stream ended, however.
  struct Keeper {
    std::function<bool(const std::shared_ptr<HealthWatchStream>&)> add;
    std::function<void(const HealthWatchStream*)> remove;
  };
  /// `core`: the Watch stream just accepted.
  HealthWatchStream(std::shared_ptr<StreamCore> core, Keeper keeper);

  /// Starts it: learns of the stream's end, reads the request; then its
  /// keeper adds it. Where the stream's handler runs.
  void start();

  /// The service watched (set once the request was read, before add()).
  const std::string& service() const noexcept { return service_; }
  /// `status` is its service's status now: true if the caller must start()
  /// a write (post_step) once it let go of its lock. Any thread.
  bool offer(ServingStatus status);
  /// Ends it with OK once its last offered status went out: true if the
  /// caller must post_step(). Any thread.
  bool close();
  /// Posts the next step (a write, or the finish) to the stream's executor.
  void post_step();

 private:
  void on_request(const boost::system::error_code& ec, std::optional<std::string> message);
  /// The next step, on the stream's executor: writes the newest status not
  /// yet written, or finishes when closing, or goes idle.
  void step();
  void on_written(const boost::system::error_code& ec);
  void on_end();

  std::shared_ptr<StreamCore> core_;  // for wait_end; the stream itself is stream_
  ServerStream stream_;
  const Keeper keeper_;
  std::string service_;  // written once, by on_request, before the registry sees it

  common::Mutex mu_;
  std::optional<ServingStatus> latest_ WHEELRPC_GUARDED_BY(mu_);  // the newest status offered
  std::optional<ServingStatus> sent_ WHEELRPC_GUARDED_BY(mu_);    // the last one written (or being written)
  bool busy_ WHEELRPC_GUARDED_BY(mu_) = false;                    // a step is posted, or a write in progress
  bool closing_ WHEELRPC_GUARDED_BY(mu_) = false;                 // finish once up to date
  bool ended_ WHEELRPC_GUARDED_BY(mu_) = false;                   // the stream ended (or is being finished)
};

}  // namespace wheelrpc::rpc::detail
