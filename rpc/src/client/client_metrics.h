#pragma once
// A client's counters, per-method metrics and recent timeouts.
//
// Thread-safety: everything here may be added to from any thread. The two
// counters every call adds to are per thread slot (no locked add); the rest
// count rarer events with relaxed atomic adds. A snapshot is a moment's view.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/common/thread_slot.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/introspection.h>

#include "client/attempt_policy.h"
#include "base/method_metrics.h"

namespace wheelrpc::rpc::detail {

struct Call;

class ClientMetrics {
 public:
  using Counter = std::atomic<std::uint64_t>;

  void count_ok() noexcept { hot_.add(kOkCounter); }
  void count_attempt() noexcept { hot_.add(kAttemptsCounter); }
  static void count(Counter& c, std::uint64_t n = 1) noexcept { c.fetch_add(n, std::memory_order_relaxed); }

  /// A call that failed (counted, and as a timeout if it is one).
  void count_failed(const boost::system::error_code& ec) noexcept;
  /// Adds `call`'s timeout to the recent timeouts (and logs it at debug
  /// level); `provider`: the peer of its latest attempt ("": none);
  /// `connecting`: a provider was being connected meanwhile.
  void record_timeout(const Call& call, std::string_view provider, CallCode code, TimePoint t, std::string timeline,
                      bool connecting);

  /// The counters of ClientStats that live here (the failback queue's and
  /// the providers' task counts are the caller's to add).
  void fill(ClientStats& s) const noexcept;

  MethodTable methods;
  TimeoutLog timeout_log;
  Counter failed{0}, timeouts{0}, late{0}, connects{0}, connect_failures{0}, pending{0}, retries{0}, hedges{0},
      refusals{0}, attempts_unplaced{0}, cancelled_attempts{0}, attempt_timeouts{0}, provider_sets{0},
      providers_added{0}, providers_removed{0}, empty_sets_ignored{0}, rule_updates{0}, rule_errors{0},
      forgotten_heartbeats{0}, forgotten_idle_closes{0}, load_reports{0};

 private:
  static constexpr std::size_t kOkCounter = 0, kAttemptsCounter = 1;
  common::SlotCounters<2> hot_;
};

/// Who set `call`'s timeout, with its value: "timeout 200 ms (runtime
/// override /wheelrpc/echo/rules/slow rev 4712)", "timeout 5000 ms (call)".
/// For a call with a deadline of its own (not inherited).
std::string timeout_source(const Call& call);

}  // namespace wheelrpc::rpc::detail
