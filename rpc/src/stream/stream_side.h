#pragma once
// What the streams of one side share (docs/streams.md): the settings every
// stream of a client, or of one server connection, would otherwise copy, held
// once and pointed to by each stream (StreamCore::Settings::side); and the
// weak cache that hands the same one to every stream while any holds it.

#include <cstdint>
#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/timer.h>

#include "base/payload_coding.h"
#include "stream/stream_counters.h"

namespace wheelrpc::rpc::detail {

class TimeoutLog;

/// Fixed once made; shared (immutable) by the streams that point to it.
struct StreamSide {
  bool client = true;
  boost::asio::any_io_executor ex;  // completions' default executor; where timer work is posted
  timer::Timer* timer = nullptr;
  const timer::Clock* clock = nullptr;   // null: the steady clock
  std::shared_ptr<const void> owner;     // keeps `gate`, `counters`, `timeout_log`, `coding` alive
  common::WorkGate* gate = nullptr;      // the owner's; timer tasks enter it
  StreamCounters* counters = nullptr;    // may be null
  TimeoutLog* timeout_log = nullptr;     // where its timers' expiries are recorded; may be null
  std::uint32_t max_message = 4u << 20;  // largest message a stream takes
  /// Told once a stream ended (with `owner.get()`), after its counters; may be null.
  void (*on_end)(const void* owner) = nullptr;
  /// This side's compression settings (null: nothing compressed either way).
  const PayloadCoding* coding = nullptr;
};

/// One shared `T` while anyone holds it: get() returns the live one, or makes
/// a new one with `make()` once the last holder let go (so a cache held by its
/// owner keeps nothing, and no cycle, alive). Thread-safe; `make` runs under
/// a leaf lock and must not call back into the cache.
template <class T>
class SharedCache {
 public:
  template <class Make>
  std::shared_ptr<T> get(Make&& make) {
    common::LockGuard lock(mu_);
    if (auto live = weak_.lock()) return live;
    std::shared_ptr<T> made = std::forward<Make>(make)();
    weak_ = made;
    return made;
  }
  /// The live one, if any (tests).
  std::shared_ptr<T> peek() const {
    common::LockGuard lock(mu_);
    return weak_.lock();
  }

 private:
  mutable common::SpinLock mu_;
  std::weak_ptr<T> weak_ WHEELRPC_GUARDED_BY(mu_);
};

}  // namespace wheelrpc::rpc::detail
