#pragma once
// HttpServerCore: the shared state behind an HttpServer (acceptor, routes,
// sessions, counters) and the gate through which timer tasks and late replies
// reach a session's strand. Private to http_server.cc and http_session.cc.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/timer/timer.h>

#include "http_server.h"
#include "http_session.h"
#include "log.h"

namespace wheelrpc::admin::detail {

class HttpSession;

/// @par Thread Safety
/// Every method is safe from any thread. `mu_` guards the acceptor, the session
/// table and every session's Timeout handle, so that once `stop()` has set
/// `stopped_` nothing touches the timer or posts to a strand again.
class HttpServerCore : public std::enable_shared_from_this<HttpServerCore> {
 public:
  HttpServerCore(boost::asio::any_io_executor ex, timer::Timer& timer, HttpServerOptions options);

  const HttpServerOptions& options() const noexcept { return options_; }

  void add(std::string method, std::string path, Handler h, bool prefix);
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& ep);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void stop();
  HttpServer::Stats stats() const;

  /// The handler for a request, or the answer when there is none (404, 405).
  struct Routed {
    Handler handler;
    bool head = false;  ///< a HEAD served by the GET route: leave the body out
    std::optional<HttpResponse> refusal;
  };
  Routed route(const HttpRequest& req) const;

  /// (Re)schedules session `id`'s one timeout: cancels the pending one, then
  /// runs `task` after `delay` on the timer. No-op once the session is
  /// forgotten or the server stopped.
  template <class Task>
  void arm(std::uint64_t id, Task&& task, std::chrono::milliseconds delay);
  /// Cancels session `id`'s timeout, if any.
  void disarm(std::uint64_t id);
  /// Posts `f` to `ex` unless stopped; under `mu_`, so that stop() waits for a
  /// post in progress and none starts after it.
  template <class Executor, class F>
  bool post_if_running(const Executor& ex, F&& f);
  /// Posts `f(session)` to session `id`'s strand unless it is closed or the
  /// server stopped. For timer tasks and replies, from any thread: they hold
  /// only the id, never the session, so that a session is never destroyed on
  /// the timer's thread or a handler's (where its strand and socket could
  /// outlive their io_context); the posted function holds it instead.
  template <class F>
  void post_to_session(std::uint64_t id, F&& f);
  /// Drops session `id` (closed): cancels its timeout; `counted` sessions free a
  /// connection slot.
  void forget(std::uint64_t id, bool counted);

  void count_request() noexcept { requests_.fetch_add(1, std::memory_order_relaxed); }
  void count_bad_request() noexcept { bad_requests_.fetch_add(1, std::memory_order_relaxed); }
  void count_timeout() noexcept { timeouts_.fetch_add(1, std::memory_order_relaxed); }

 private:
  using MethodMap = std::map<std::string, Handler>;  // ordered: the Allow header lists it
  struct Entry {
    std::shared_ptr<HttpSession> session;
    timer::Timeout timeout;
  };

  void accept_locked() WHEELRPC_REQUIRES(mu_);
  void on_accept(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);

  const boost::asio::any_io_executor ex_;
  timer::Timer& timer_;
  const HttpServerOptions options_;

  mutable common::SharedMutex routes_mu_;
  std::map<std::string, MethodMap> exact_ WHEELRPC_GUARDED_BY(routes_mu_);
  std::map<std::string, MethodMap> prefixes_ WHEELRPC_GUARDED_BY(routes_mu_);

  mutable common::Mutex mu_;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool listening_ WHEELRPC_GUARDED_BY(mu_) = false;
  boost::asio::ip::tcp::acceptor acceptor_ WHEELRPC_GUARDED_BY(mu_);
  boost::asio::ip::tcp::endpoint endpoint_ WHEELRPC_GUARDED_BY(mu_);
  timer::Timeout accept_retry_ WHEELRPC_GUARDED_BY(mu_);
  std::uint64_t next_id_ WHEELRPC_GUARDED_BY(mu_) = 1;
  std::size_t open_ WHEELRPC_GUARDED_BY(mu_) = 0;
  std::unordered_map<std::uint64_t, Entry> sessions_ WHEELRPC_GUARDED_BY(mu_);

  std::atomic<std::uint64_t> accepted_{0}, rejected_{0}, requests_{0}, bad_requests_{0}, timeouts_{0};
};

template <class Task>
void HttpServerCore::arm(std::uint64_t id, Task&& task, std::chrono::milliseconds delay) {
  common::LockGuard lock(mu_);
  if (stopped_) return;
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  it->second.timeout.cancel();
  std::error_code ec;
  it->second.timeout = timer_.new_timeout(std::forward<Task>(task), delay, ec);
  if (ec) {
    // The timer is stopped or full: this connection goes without a timeout.
    it->second.timeout = {};
    logger()->warn("conn={} admin HTTP timeout not scheduled: {}", id, ec.message());
  }
}

template <class Executor, class F>
bool HttpServerCore::post_if_running(const Executor& ex, F&& f) {
  common::LockGuard lock(mu_);
  if (stopped_) return false;
  boost::asio::post(ex, std::forward<F>(f));
  return true;
}

template <class F>
void HttpServerCore::post_to_session(std::uint64_t id, F&& f) {
  common::LockGuard lock(mu_);
  if (stopped_) return;
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  const std::shared_ptr<HttpSession>& s = it->second.session;
  boost::asio::post(s->executor(), [s, f = std::forward<F>(f)]() mutable { f(*s); });
}

}  // namespace wheelrpc::admin::detail
