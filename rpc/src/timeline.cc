#include "timeline.h"

#include <fmt/format.h>

namespace wheelrpc::rpc::detail {

namespace {

double ms(timer::Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

std::string timeline_text(const TimelineFacts& f) {
  using TimePoint = TimelineFacts::TimePoint;
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

}  // namespace wheelrpc::rpc::detail
