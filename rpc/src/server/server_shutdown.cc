#include "server/server_shutdown.h"

#include <algorithm>
#include <future>
#include <memory>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include "base/executor_thread.h"
#include "base/log.h"
#include "server/health_registry.h"
#include "server/server_host.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// Completes `h` with `ec` on its associated executor, through `ex` (never
// inline: the caller may hold the server's state).
void complete_later(const asio::any_io_executor& ex, asio::any_completion_handler<Server::ShutdownSignature> h,
                    error_code ec) {
  if (!h) return;
  auto assoc = asio::get_associated_executor(h, ex);
  asio::post(ex, asio::bind_executor(assoc, [h = std::move(h), ec]() mutable { std::move(h)(ec); }));
}

// The end of the unregister grace: posts the drain (the wheel only decides).
struct GraceTask {
  std::weak_ptr<ServerHost> host;
  std::chrono::milliseconds drain_timeout;
  void operator()() const {
    auto self = host.lock();
    if (!self) return;
    common::WorkGate::Scope in(self->timer_work());
    if (!in) return;  // stopped meanwhile
    asio::post(self->executor(), [self, d = drain_timeout] { self->shutdown().begin_drain(d); });
  }
};

// The drain timeout: posts the end of the shutdown (the wheel only decides).
struct DrainTimeoutTask {
  std::weak_ptr<ServerHost> host;
  void operator()() const {
    auto self = host.lock();
    if (!self) return;
    common::WorkGate::Scope in(self->timer_work());
    if (!in) return;  // stopped meanwhile
    asio::post(self->executor(), [self] { self->shutdown().finish(make_error_code(errc::timeout)); });
  }
};
}  // namespace

ServerState ServerShutdown::state() const {
  const auto& announcer = host_.options().announcer;
  ServerState s;
  s.listening = listening_.load();
  s.online = !offline_.load();
  s.disabled_by_rule = disabled_by_rule_.load();
  s.draining = started_.load();
  s.announced = announced_.load() && announcer && announcer->in_force();
  s.has_announcer = announcer != nullptr;
  return s;
}

error_code ServerShutdown::announce(const asio::ip::tcp::endpoint& endpoint, std::string& message) {
  const auto& announcer = host_.options().announcer;
  if (!announcer) return {};
  // Announced once listening: the announcer bounds its own wait.
  auto promise = std::make_shared<std::promise<std::pair<error_code, std::string>>>();
  auto answer = promise->get_future();
  announcer->announce(endpoint, [promise](error_code ec, std::string why) {
    promise->set_value({ec, std::move(why)});
  });
  if (answer.wait_for(std::chrono::seconds(0)) != std::future_status::ready && runs_in_this_thread(host_.executor())) {
    announcer->withdraw([](error_code, std::string) {});
    host_.stop(false);
    message =
        "Server::listen with an announcer that does not answer at once (e.g. check = true) cannot wait on a "
        "thread that runs the server's executor: call it from another thread";
    return make_error_code(errc::bad_request);
  }
  auto [ec, why] = answer.get();
  if (ec) {
    host_.stop(false);
    message = why.empty() ? ec.message() : why;
    return ec;
  }
  announced_.store(true);
  return {};
}

void ServerShutdown::set_online(bool online) { set_offline_reason(kOfflineByCall, !online); }

void ServerShutdown::set_disabled_by_rule(bool disabled) { set_offline_reason(kOfflineByRule, disabled); }

void ServerShutdown::set_offline_reason(std::uint8_t reason, bool on) {
  bool online = false;
  std::uint8_t reasons = 0;
  {
    common::LockGuard lock(offline_mu_);
    const bool was_offline = offline_reasons_ != 0;
    offline_reasons_ = on ? (offline_reasons_ | reason) : (offline_reasons_ & ~reason);
    reasons = offline_reasons_;
    disabled_by_rule_.store((reasons & kOfflineByRule) != 0);
    if (was_offline == (reasons != 0)) return;  // no change
    online = reasons == 0;
    offline_.store(!online);
  }
  host_.health_registry().server_changed();
  const auto endpoint = host_.local_endpoint();
  logger()->info(
      "server {}: {}", endpoint.port(),
      online ? "online" : ((reasons & kOfflineByRule) != 0 ? "offline (disabled by a provider rule)" : "offline"));
  const auto& announcer = host_.options().announcer;
  if (!announcer || !listening_.load() || started_.load()) return;
  if (!online) {
    if (announced_.exchange(false)) withdraw({});
    return;
  }
  announcer->announce(endpoint, [weak = host_.weak_host()](error_code ec, std::string why) {
    auto self = weak.lock();
    if (!self) return;
    if (ec) {
      logger()->warn("announcing the server again failed: {}", why.empty() ? ec.message() : why);
      return;
    }
    // Still online and running: announced. (Offline meanwhile: withdraw again.)
    ServerShutdown& s = self->shutdown();
    if (!s.offline_.load() && s.listening_.load() && !s.started_.load()) {
      s.announced_.store(true);
    } else {
      s.withdraw({});
    }
  });
}

void ServerShutdown::withdraw(std::function<void()> done) {
  host_.options().announcer->withdraw([done = std::move(done)](error_code ec, std::string why) {
    if (ec) logger()->warn("withdrawing the server's announcement failed: {}", why.empty() ? ec.message() : why);
    if (done) done();
  });
}

void ServerShutdown::start(std::chrono::milliseconds drain_timeout,
                           asio::any_completion_handler<Server::ShutdownSignature> handler) {
  bool first = false;
  {
    common::LockGuard lock(shutdown_mu_);
    if (!host_.stopped() && !started_.load()) {  // the server's mu_ inside shutdown_mu_: the lock order
      first = true;
      // Not `handler_ = std::move(handler)`: Boost 1.81's move assignment of
      // any_completion_handler wraps the handler in itself.
      handler_.swap(handler);
      started_.store(true);
    }
  }
  if (!first) {  // a second shutdown, or one after stop(): nothing to wait for
    complete_later(host_.executor(), std::move(handler), {});
    return;
  }
  // NOT_SERVING first, before the withdraw and its grace: the balancers that
  // watch the health service stop sending before the registry says we left.
  host_.health_registry().server_changed();
  drain_timeout = std::max(drain_timeout, std::chrono::milliseconds(1));
  if (!announced_.exchange(false)) {
    begin_drain(drain_timeout);
    return;
  }
  // Withdrawn first; then serving on for the grace, so clients see it leave
  // before it refuses anything; then the drain.
  const auto grace = host_.options().unregister_grace;
  logger()->info("shutting down: withdrawing the announcement, then serving for {} ms more", grace.count());
  withdraw([weak = host_.weak_host(), grace, drain_timeout] {
    auto self = weak.lock();
    if (!self) return;
    ServerShutdown& s = self->shutdown();
    std::error_code tec;
    if (grace.count() > 0) {
      common::LockGuard lock(s.shutdown_mu_);
      if (!s.finished_.load()) {
        s.drain_timeout_ = self->timer().new_timeout(GraceTask{weak, drain_timeout}, grace, tec);
        if (!tec) return;
      }
    }
    asio::post(self->executor(), [self, drain_timeout] { self->shutdown().begin_drain(drain_timeout); });
  });
}

void ServerShutdown::begin_drain(std::chrono::milliseconds drain_timeout) {
  if (finished_.load() || draining_.exchange(true)) return;  // from now on every new request is refused
  host_.health_registry().drain();  // its watches end (after their NOT_SERVING): they hold no drain
  host_.close_acceptor();
  host_.announce_drain();
  std::error_code tec;
  {
    common::LockGuard lock(shutdown_mu_);
    drain_timeout_ = host_.timer().new_timeout(DrainTimeoutTask{host_.weak_host()}, drain_timeout, tec);
  }
  logger()->info("shutting down: {} calls in flight, {} streams open, drain timeout {} ms", host_.in_flight(),
                 host_.open_streams(), drain_timeout.count());
  // A request counts itself before it reads draining_: one that check_drained()
  // does not see reads draining_ set and is refused; the last answer of the
  // ones before checks again (recheck_drained), as does each connection that closes.
  asio::post(host_.executor(), [self = host_.shared_host(), tec] {
    if (tec) {
      self->shutdown().finish(make_error_code(errc::timeout));
    } else {
      self->shutdown().check_drained();
    }
  });
}

void ServerShutdown::recheck_drained() {
  if (draining_.load()) {
    asio::post(host_.executor(), [self = host_.shared_host()] { self->shutdown().check_drained(); });
  }
}

asio::any_completion_handler<Server::ShutdownSignature> ServerShutdown::take_handler() {
  asio::any_completion_handler<Server::ShutdownSignature> handler;
  common::LockGuard lock(shutdown_mu_);
  handler.swap(handler_);
  drain_timeout_.cancel();
  return handler;
}

void ServerShutdown::check_drained() {
  if (finished_.load()) return;
  // stop() came first (it completes the shutdown, aborted), or calls are in
  // flight: in-process ones (the gateway) run to their replies too.
  if (!host_.drained()) return;
  finish({});
}

void ServerShutdown::finish(error_code ec) {
  if (finished_.exchange(true)) return;
  auto handler = take_handler();
  if (ec) {
    logger()->warn("shutdown: {} calls in flight and {} streams open after the drain timeout; closing",
                   host_.in_flight(), host_.open_streams());
  }
  host_.stop(/*flush=*/!ec);
  complete_later(host_.executor(), std::move(handler), ec);
}

void ServerShutdown::on_stopped() {
  if (announced_.exchange(false)) withdraw({});  // not waited for
  // stop() during a graceful shutdown ends it: its handler completes, aborted.
  if (started_.load() && !finished_.exchange(true))
    complete_later(host_.executor(), take_handler(), asio::error::operation_aborted);
}

}  // namespace wheelrpc::rpc::detail
