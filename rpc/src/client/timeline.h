#pragma once
/// The timeline of a call that timed out: where its time went, in one short
/// text appended to its error message and kept in its /timeouts record
/// (docs/timeouts.md, "Where the time went"). Built only when a call times
/// out; the hot path records no more than the times it already has.

#include <string>

#include <wheelrpc/timer/clock.h>

namespace wheelrpc::rpc::detail {

/// What is known of a timed-out call's time. A default TimePoint ({}) means
/// "did not happen" (never sent, no late reply, not ended by a timer).
struct TimelineFacts {
  using TimePoint = timer::Clock::time_point;
  TimePoint start;         ///< the call started (queued)
  TimePoint first_sent;    ///< its first attempt was handed to a connection
  TimePoint last_sent;     ///< its latest attempt was, when it sent more than one ({} otherwise)
  TimePoint socket_wrote;  ///< the latest attempt's connection last wrote to its socket (if after last_sent)
  TimePoint reply;         ///< a reply arrived after the deadline (before the timer ran)
  TimePoint deadline;      ///< the call's deadline
  TimePoint fired;         ///< the deadline's timer ran on the timer's worker
  TimePoint completed;     ///< the call completed
};

/// "timeline: queued 0.0 ms, sent 0.1, socket wrote 0.2, timer fired 50.3
/// (0.3 late), completed 50.4": milliseconds since the start, one decimal.
/// "late" is how far after the deadline the timer's worker ran it (tick
/// rounding included); a starved worker shows here.
std::string timeline_text(const TimelineFacts& f);

struct Call;
/// The timeline of `call`, completed at `t`, from its books. `steady_clock`:
/// the client reads steady_clock (no ClientOptions::clock), so its socket's
/// last write is comparable and shown.
std::string call_timeline(const Call& call, timer::Clock::time_point t, bool steady_clock);

}  // namespace wheelrpc::rpc::detail
