// StreamCore's four timers (stream_core.h): armed on the shared wheel, whose
// worker only posts; checked and expired on the stream's executor.

#include <algorithm>
#include <chrono>

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/introspection.h>

#include "base/log.h"
#include "base/method_metrics.h"
#include "stream/stream_core.h"
#include "stream/stream_pending.h"

namespace wheelrpc::rpc::detail {
using boost::system::error_code;
namespace asio = boost::asio;

void StreamCore::arm(StreamTimer which, TimePoint at) {
  const StreamSide& side = *s_.side;
  if (!side.timer) return;
  const auto i = index(which);
  std::error_code tec;
  const auto delay = std::max<std::chrono::nanoseconds>(at - now(), std::chrono::nanoseconds(0));
  if (!timeouts_) timeouts_ = std::make_unique<std::array<timer::Timeout, 4>>();
  // The worker only posts: the stream, held weakly, runs the check on its
  // executor. What the task needs besides is the stream's side, reached
  // through the stream (no executor copied into each task).
  (*timeouts_)[i] = side.timer->new_timeout(
      [weak = weak_from_this(), which]() {
        auto self = weak.lock();
        if (!self) return;
        const StreamSide& shared = *self->s_.side;
        common::WorkGate::Scope in(*shared.gate);
        if (!in) return;
        const TimePoint fired = self->now();
        asio::post(shared.ex, [self = std::move(self), which, fired] { self->on_timer(which, fired); });
      },
      delay, tec);
  armed_[i] = !tec;
  if (tec)
    logger()->warn("stream '{}': its {} timer could not be armed: {}", s_.method, to_string(which), tec.message());
}

void StreamCore::on_timer(StreamTimer which, TimePoint fired) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return;
    armed_[index(which)] = false;
    switch (which) {
      case StreamTimer::deadline: expire(which, start_, fired, p); break;
      case StreamTimer::first_message:
        if (received_ == 0 && !peer_done_) expire(which, start_, fired, p);
        break;
      case StreamTimer::message_idle: {
        if (peer_done_) break;  // nothing more will come
        const TimePoint due = last_message_ + s_.message_timeout;
        if (fired >= due) {
          expire(which, last_message_, fired, p);
        } else {
          arm(which, due);
        }
        break;
      }
      case StreamTimer::write_stall: {
        if (!write_) break;  // re-armed by the next write that waits
        const TimePoint due = stall_since_ + s_.stall_timeout;
        if (fired >= due) {
          expire(which, stall_since_, fired, p);
        } else {
          arm(which, due);
        }
        break;
      }
    }
  }
  run(p);
}

void StreamCore::expire(StreamTimer which, TimePoint since, TimePoint fired, Pending& p) {
  fired_ = which;
  fired_elapsed_ = ms_between(since, fired);
  std::chrono::milliseconds setting{0};
  error_code ec;
  StreamEnd cause{};
  std::string what;
  switch (which) {
    case StreamTimer::deadline:
      setting =
          deadline_at_ ? std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_at_ - start_) : s_.deadline;
      ec = s_.side->client ? make_error_code(errc::timeout) : make_error_code(errc::server_timeout);
      cause = StreamEnd::deadline;
      what = "the stream's deadline passed";
      break;
    case StreamTimer::message_idle:
      setting = s_.message_timeout;
      ec = make_error_code(errc::message_timeout);
      cause = StreamEnd::message_idle;
      what = received_ == 0 ? "no message received" : "no message received since the last one";
      break;
    case StreamTimer::write_stall:
      setting = s_.stall_timeout;
      ec = make_error_code(errc::write_stall);
      cause = StreamEnd::write_stall;
      // Whether the peer reads at all: a peer that stopped, or one slower than the timer.
      what = last_credit_ ? fmt::format(
                                "a write of {} bytes waited for the peer's credit; the last credit came {} ms "
                                "before (the peer reads slower than this timer allows, or stopped reading)",
                                write_msg_.size(), ms_between(*last_credit_, fired).count())
                          : fmt::format(
                                "a write of {} bytes waited for the peer's credit; none came since the stream "
                                "opened (the peer reads nothing)",
                                write_msg_.size());
      break;
    case StreamTimer::first_message:
      setting = s_.first_message_timeout;
      ec = make_error_code(errc::first_message_timeout);
      cause = StreamEnd::first_message;
      what = "no first message";
      break;
  }
  end_locked(ec,
             fmt::format("{} timeout after {} ms: {} (timer {} ms)", to_string(which), fired_elapsed_.count(), what,
                         setting.count()),
             cause, s_.side->client ? Wire::reset : Wire::end, p);
  if (s_.side->timeout_log) {
    TimeoutRecord r;
    r.time = std::chrono::system_clock::now();
    r.server_side = !s_.side->client;
    r.method = s_.method;
    r.provider = peer_;
    r.phase = TimeoutPhase::streaming;
    r.code = call_code(ec);
    r.budget = setting;
    r.elapsed = fired_elapsed_;
    r.attempts = 1;
    r.stream_timer = std::string(to_string(which));
    s_.side->timeout_log->add(std::move(r));
  }
}

}  // namespace wheelrpc::rpc::detail
