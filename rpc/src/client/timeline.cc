#include "client/timeline.h"

#include <fmt/format.h>

#include "client/call.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {

namespace {

double ms(timer::Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

std::string timeline_text(const TimelineFacts& f) {
  const auto at = [&](TimePoint t) { return ms(t - f.start); };
  std::string out = "timeline: queued 0.0 ms";
  if (f.first_sent == TimePoint{}) {
    out += ", never sent";
  } else {
    fmt::format_to(std::back_inserter(out), ", sent {:.1f}", at(f.first_sent));
    if (f.last_sent != TimePoint{})
      fmt::format_to(std::back_inserter(out), ", last attempt sent {:.1f}", at(f.last_sent));
    if (f.socket_wrote != TimePoint{})
      fmt::format_to(std::back_inserter(out), ", socket wrote {:.1f}", at(f.socket_wrote));
  }
  if (f.reply != TimePoint{}) {
    fmt::format_to(std::back_inserter(out), ", reply arrived {:.1f} ({:.1f} after the deadline, before its timer ran)",
                   at(f.reply), ms(f.reply - f.deadline));
  }
  if (f.fired != TimePoint{}) {
    fmt::format_to(std::back_inserter(out), ", timer fired {:.1f} ({:.1f} late)", at(f.fired),
                   ms(f.fired > f.deadline ? f.fired - f.deadline : TimePoint::duration::zero()));
  }
  if (f.completed != TimePoint{} && f.completed != f.fired) {
    fmt::format_to(std::back_inserter(out), ", completed {:.1f}", at(f.completed));
  }
  return out;
}

std::string call_timeline(const Call& call, timer::Clock::time_point t, bool steady_clock) {
  TimelineFacts f;
  f.start = call.start;
  f.first_sent = call.first_sent;
  f.last_sent = call.last_sent;
  f.reply = call.late_reply;
  f.deadline = call.plan.deadline;
  f.fired = call.fired;
  f.completed = t;
  // The socket's last write is on the steady clock: comparable only when the
  // client reads that clock too (not a manual one).
  const auto sent = f.last_sent != TimelineFacts::TimePoint{} ? f.last_sent : f.first_sent;
  if (steady_clock && call.latest && sent != TimelineFacts::TimePoint{}) {
    if (const auto wrote = call.latest->last_write(); wrote && *wrote >= sent && *wrote <= t) f.socket_wrote = *wrote;
  }
  return timeline_text(f);
}

}  // namespace wheelrpc::rpc::detail
