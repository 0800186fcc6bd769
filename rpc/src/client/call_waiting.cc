// CallDriver's waiting calls and books: the calls that wait for a provider
// (wait for ready, or until every provider is known to be in backoff), what
// fails them fast, and the books a client's close takes.
#include "client/call_driver.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "client/client_context.h"
#include "client/provider_pool.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {
using Phase = Call::Phase;
using CallLock = common::LockGuard<common::SpinLock>;

bool CallDriver::any_slot(const ProviderSet& set) const noexcept {
  const std::size_t cap = ctx_.options.max_active_per_provider;
  return std::any_of(set.conns.begin(), set.conns.end(), [cap](const auto& c) { return c->has_slot(cap); });
}

bool CallDriver::nothing_to_wait_for(const ProviderSet& set) noexcept {
  if (set.conns.empty()) return set.known || !set.source_error.empty();
  return std::all_of(set.conns.begin(), set.conns.end(), [](const auto& c) { return c->in_backoff(); });
}

void CallDriver::fail_unavailable(Call& call, const ProviderSet& set, Completion& done) {
  std::string why;
  if (set.conns.empty() && !set.known) {
    why = "unavailable (no provider yet: " + set.source_error + ")";
  } else if (set.conns.empty()) {
    why = "unavailable (no provider: " + (set.empty_why.empty() ? set.peers + " has none" : set.empty_why) + ")";
  } else {
    why = "unavailable (every provider is in backoff after a failed connect";
    for (const auto& c : set.conns) {
      if (auto error = c->last_error(); !error.empty()) why += "; " + error;
    }
    why += ")";
  }
  call.phase = Phase::idle;
  ++call.attempts;
  ctx_.metrics.count_attempt();
  ClientMetrics::count(ctx_.metrics.attempts_unplaced);  // an attempt on no provider
  attempt_failed(call, nullptr, Failure::unavailable, errc::unavailable, describe(call, why), done);
}

void CallDriver::fail_unroutable(Call& call, const ProviderSet& set, Completion& done) {
  call.phase = Phase::idle;
  ++call.attempts;
  ctx_.metrics.count_attempt();
  ClientMetrics::count(ctx_.metrics.attempts_unplaced);  // an attempt on no provider
  std::string message = describe(call, "unavailable (" + set.no_route_why(call.tag.view()) + ")");
  if (call.last_ec) message += "; earlier attempt: " + call.last_error;
  complete(call, errc::unavailable, Response{{}, {}, std::move(message)}, Origin::other, done);
}

void CallDriver::fail_fast_waiting() {
  if (ctx_.closed.load(std::memory_order_acquire)) return;
  const auto set = pool_.current();
  const bool none = nothing_to_wait_for(*set);
  if (!none && set->strict_tags.empty()) return;
  std::vector<CallPtr> batch;
  {
    common::LockGuard books(books_mu_);
    // wait_for_ready and the tag are fixed when a call starts: read without its lock.
    auto keep = std::partition(waiting_.begin(), waiting_.end(), [&](const CallPtr& c) {
      return c->wait_for_ready || (!none && !set->unroutable(c->tag.view()));
    });
    batch.assign(std::make_move_iterator(keep), std::make_move_iterator(waiting_.end()));
    waiting_.erase(keep, waiting_.end());
  }
  for (auto& ptr : batch) {
    Completion done;
    {
      Call& call = *ptr;
      CallLock lock(call.mu);
      if (!call.done.load(std::memory_order_relaxed) && call.phase == Phase::waiting) {
        const auto now_set = pool_.current();
        if (now_set->unroutable(call.tag.view())) {
          fail_unroutable(call, *now_set, done);
        } else if (none) {
          fail_unavailable(call, *now_set, done);
        } else {
          dispatch(call, done);  // its tag has a way again (the set changed meanwhile)
        }
      }
    }
    deliver(done, ctx_);
  }
}

void CallDriver::dispatch_waiting() {
  std::vector<CallPtr> batch;
  {
    common::LockGuard books(books_mu_);
    batch.swap(waiting_);
  }
  for (auto& ptr : batch) {
    Completion done;
    {
      Call& call = *ptr;
      CallLock lock(call.mu);
      if (!call.done.load(std::memory_order_relaxed) && call.phase == Phase::waiting) dispatch(call, done);
    }
    deliver(done, ctx_);
  }
}

bool CallDriver::calls_waiting() {
  common::LockGuard books(books_mu_);
  return !waiting_.empty();
}

void CallDriver::take_books(std::vector<CallPtr>& calls) {
  common::LockGuard books(books_mu_);
  for (auto& c : waiting_) calls.push_back(std::move(c));
  waiting_.clear();
  for (auto& [key, c] : backoff_) calls.push_back(c);
}

void CallDriver::leave_backoff(Call& call) {
  common::LockGuard books(books_mu_);
  backoff_.erase(&call);
}

}  // namespace wheelrpc::rpc::detail
