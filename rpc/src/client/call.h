#pragma once
// One call in flight. Shared (boost::intrusive_ptr, CallPtr) by the code that
// may complete it: a reply (a connection's strand), its deadline and its aux
// timeout (posted from the timer's worker to the executor), the caller's
// cancellation slot, a lost connection, and close().
//
// Exactly once: `done` is set under `mu` by whoever completes the call
// (mark_done); everyone else finds it set and backs off.
//
// The host's lifetime: `host` (the client's core, call_host.h) is a plain
// pointer, valid while the call is not done (close() completes every call
// before it returns, and completing takes `mu`). Code that holds only the
// call and must reach the host from outside it (the timer's worker, the
// cancellation slot) pins the call first (`CallPin`): once pinned and not
// done, the host stays alive until unpinned, because completing a call waits
// for its pins to drop (they are held for O(1) work only: a post, a
// share_host()).
//
// A call makes one or more attempts (retries, hedges); each sent attempt has
// its own request id in its connection's pending table. The call's deadline
// is covered one of two ways (`cover`): a call sent at once has it kept in
// its attempt's table entry, which the connection's one sweep timeout finds
// (no wheel entry per call: Subchannel::sweep); a call that waits, backs off
// or loses that attempt before it completes gets its own deadline on the
// wheel for the rest of its life. Plus at most one "aux" timeout for the
// nearest of: an attempt's own timeout, the next hedge, the end of a retry
// backoff.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/rpc/routing_tag.h>
#include <wheelrpc/rpc/trace.h>
#include <wheelrpc/timer/timeout.h>

#include "client/attempt_policy.h"
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/rpc/detail/recycled.h>
#include <wheelrpc/common/ref_count.h>

namespace wheelrpc::rpc::detail {

class CallHost;
class StreamCore;
class ClientInterception;
class Subchannel;
class MethodCells;

struct Call;
using CallPtr = boost::intrusive_ptr<Call>;

struct Call : Recycled<Call> {
  // intercepting: interceptors work on it before it is sent (per call, or
  // per attempt with no other attempt in flight); in the books like backoff.
  enum class Phase : std::uint8_t { idle, waiting, sent, backoff, intercepting };

  /// One attempt that was sent and awaits its reply.
  struct Attempt {
    std::uint64_t id = 0;  // its pending-table key on the provider's connection
    // The provider it went to: kept alive while the attempt is, even if the
    // provider leaves the client's set meanwhile.
    std::shared_ptr<Subchannel> conn;
    TimePoint sent;
    TimePoint expires = kNever;  // its own timeout, when earlier than the call's deadline
    int number = 0;              // 1-based
    bool swept = false;          // its table entry carries the call's deadline (Cover::swept)
    // Its attempt interceptors (ClientOptions::attempt_interceptors; null
    // without): their on_complete runs when it ends.
    std::shared_ptr<ClientInterception> interception;
  };

  /// What puts an end to the call at its deadline.
  enum class Cover : std::uint8_t {
    none,   // nothing yet (or no deadline)
    swept,  // the table entry of its `swept` attempt, found by that connection's sweep
    own,    // `deadline_timeout` on the wheel
  };

  Call() = default;
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // ---- fixed at start (read without the lock)
  CallHost* host = nullptr;
  // The stream this call opens (its request is the stream's OPEN; the reply
  // that answers it, the server's acceptance or refusal); null for a unary call.
  std::shared_ptr<StreamCore> stream;
  std::string method;
  TimePoint start;
  AttemptPlan plan;
  bool wait_for_ready = false;
  bool inherited = false;  // the deadline is that of the request being served
  // Who set CallOptions::timeout, and for a runtime override where it came
  // from ("runtime override /wheelrpc/echo/rules/slow rev 4712"): named by
  // the message of a call that times out, and by its /timeouts record.
  Layer timeout_layer = Layer::built_in;
  std::shared_ptr<const std::string> timeout_origin;
  // The deadline in force where the call started (the request being served),
  // put back in force while the completion runs.
  std::optional<TimePoint> context;
  // Its method's metric cells (null: ClientOptions::metrics off).
  MethodCells* cells = nullptr;
  // CallOptions::compression and compression_level (clamped: levels go no
  // further than -128 .. 127 in any algorithm).
  transport::Compression compression = transport::Compression::identity;
  std::int8_t compression_level = 0;
  // Its trace (the traceparent it carries), and the trace in force where it
  // started, put back in force while the completion runs.
  TraceContext trace;
  std::optional<TraceContext> trace_context;
  // The routing tag in force where it started (put back for the completion),
  // and the one it carries (for tag routing; none: untagged).
  RoutingTag tag_context;
  RoutingTag tag;

  // ---- the exactly-once gate and the pins (atomics)
  std::atomic<bool> done{false};
  std::atomic<int> pins{0};

  // ---- guarded by `mu`
  common::SpinLock mu;
  // Something that pins (a timeout on the wheel, the caller's cancellation
  // slot) was given a reference to it. Set before that reference exists,
  // never cleared: while false, nobody can pin the call, and marking it done
  // needs no fence against pins (mark_done).
  bool pinnable = false;
  std::string payload;                 // kept for retries and hedges
  transport::Attachments attachments;  // the caller's
  // The traceparent every attempt carries after the caller's attachments
  // (lent to the frame, not copied into them); unsent when `send_trace` is
  // false (the caller put its own in `attachments`, or it would not fit).
  std::array<char, TraceContext::kTraceparentSize> traceparent{};
  bool send_trace = false;
  boost::asio::any_completion_handler<Client::Signature> handler;
  timer::Timeout deadline_timeout;
  Cover cover = Cover::none;
  Phase phase = Phase::idle;
  bool waited = false;                              // went through the waiting list
  int attempts = 0;                                 // started so far
  boost::container::small_vector<Attempt, 1> live;  // sent, awaiting a reply
  // Providers tried, and that of the latest failed attempt: identities only,
  // compared with the current set's members, never dereferenced.
  boost::container::small_vector<const Subchannel*, 2> tried;
  const Subchannel* last_failed = nullptr;
  // Provider of the latest attempt (for messages): alive while that attempt
  // is in `live`, which holds it; when the attempt leaves `live` its hold
  // moves to `latest_hold` (no reference count per attempt for messages).
  const Subchannel* latest = nullptr;
  std::shared_ptr<const Subchannel> latest_hold;
  boost::system::error_code last_ec;  // of the latest failed attempt
  std::string last_error;
  TimePoint retry_at = kNever;  // phase backoff: when the next attempt starts
  TimePoint hedge_at = kNever;  // phase sent: when the next hedge starts
  timer::Timeout aux;
  TimePoint aux_at = kNever;
  // Where it was when it timed out, when complete() cannot tell (the reply
  // that said the server timed out too has left `live`).
  std::optional<TimeoutPhase> timeout_phase;
  // For the timeline of a call that times out (timeline.h): when its first
  // attempt was handed to a connection and its latest, when there were more
  // ({}: none), when a reply came after the deadline, and when the timer
  // that ended it ran on the timer's worker ({}: not by a timer).
  TimePoint first_sent{};
  TimePoint last_sent{};
  TimePoint late_reply{};
  TimePoint fired{};
  // Interceptors (null without any): the call's (ClientOptions::
  // interceptors), ended with the call; and the attempt interceptors at work
  // on its next attempt, before it is placed.
  std::shared_ptr<ClientInterception> interception;
  std::shared_ptr<ClientInterception> attempt_interception;

  /// Another reference to a call that no other thread can see yet (just
  /// made): counted with a plain store instead of a locked add.
  friend CallPtr share_unpublished(Call& c) noexcept;

 private:
  friend void intrusive_ptr_add_ref(Call* c) noexcept { c->refs_.fetch_add(1, std::memory_order_relaxed); }
  friend void intrusive_ptr_release(Call* c) noexcept {
    if (common::drop_reference(c->refs_)) delete c;
  }
  std::atomic<int> refs_{0};
};

inline CallPtr share_unpublished(Call& c) noexcept {
  common::add_unpublished_reference(c.refs_);
  return CallPtr(&c, /*add_ref=*/false);
}

/// A reference for something that may pin the call (a timeout on the wheel,
/// the caller's cancellation slot): marks the call pinnable before the
/// reference exists. Call with `mu` held.
inline CallPtr share_with_pinner(Call& c) noexcept {
  c.pinnable = true;
  return CallPtr(&c);
}

/// Scoped pin of a call (see above). `alive()`: the call was not done when
/// pinned, so its host may be used until the pin is released.
class CallPin {
 public:
  explicit CallPin(Call& c) noexcept : call_(c) {
    call_.pins.fetch_add(1);      // sequentially consistent: pairs with
    alive_ = !call_.done.load();  // complete()'s done store and pins load
  }
  ~CallPin() { call_.pins.fetch_sub(1, std::memory_order_release); }
  CallPin(const CallPin&) = delete;
  CallPin& operator=(const CallPin&) = delete;
  bool alive() const noexcept { return alive_; }

 private:
  Call& call_;
  bool alive_;
};

/// Marks the call done (false if it was already); then waits for pins taken
/// before that to drop. Call with `mu` held.
inline bool mark_done(Call& c) noexcept {
  if (!c.pinnable) {
    // Only a pin reads `done` without `mu`; with no pin possible, a plain
    // store under `mu` (held here) is enough.
    if (c.done.load(std::memory_order_relaxed)) return false;
    c.done.store(true, std::memory_order_relaxed);
    return true;
  }
  if (c.done.exchange(true)) return false;
  while (c.pins.load() != 0) std::this_thread::yield();
  return true;
}

}  // namespace wheelrpc::rpc::detail
