// Subscriptions: a full read of the service's prefix, then a watch from the
// read's revision + 1. A broken watch resumes from the last revision seen + 1
// (at once if it had been running, else after a FailedSubscribedTask); a
// compacted revision means a full re-read. What the subscription follows is
// its target's: the provider set (the listener hears the full sorted set, and
// only when it changed) or a service's rules (one CallRules per read or watch
// response that changed them).

#include <algorithm>
#include <cassert>

#include <boost/asio/error.hpp>
#include <spdlog/spdlog.h>

#include <wheelrpc/registry/errc.h>

#include "etcd_ops.h"
#include "etcd_registry.h"
#include "log.h"
#include "retry_tasks.h"

namespace wheelrpc::registry::detail {
using boost::system::error_code;

namespace {
// A watch that ran at least this long before it broke is resumed at once;
// one that broke sooner waits for a retry (no tight loop against a member
// that accepts watches and drops them).
constexpr std::chrono::milliseconds kStableWatch{500};
}  // namespace

EtcdRegistryImpl::Subscription* EtcdRegistryImpl::find_subscription(SubscriptionId id) {
  auto it = subs_.find(id);
  if (it == subs_.end() || it->second->cancelled.load(std::memory_order_acquire)) return nullptr;
  return it->second.get();
}

void EtcdRegistryImpl::start_subscription(std::shared_ptr<Subscription> sub) {
  assert(strand().running_in_this_thread());
  if (closed() || sub->cancelled.load(std::memory_order_acquire)) return;
  auto& s = *subs_.emplace(sub->id, std::move(sub)).first->second;
  update_stats([n = subs_.size()](RegistryStats& st) { st.subscriptions_now = n; });
  logger()->info("subscribe {} (id {})", s.prefix, s.id);
  read_prefix(s);
  schedule_watch_probe();
}

void EtcdRegistryImpl::schedule_watch_probe() {
  assert(strand().running_in_this_thread());
  if (probe_scheduled_ || closed() || subs_.empty()) return;
  const auto period =
      std::max(options_.request_timeout, std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease_ttl) / 3);
  probe_scheduled_ = call_after(period, [w = weak_from_this()] {
    if (auto self = w.lock()) self->probe_watches();
  });
}

void EtcdRegistryImpl::probe_watches() {
  assert(strand().running_in_this_thread());
  probe_scheduled_ = false;
  if (closed() || subs_.empty()) return;
  if (lease_ != 0) {  // its keepalives probe already
    schedule_watch_probe();
    return;
  }
  count_request(false);
  op_range(*client_, options_.root + "/.watch-probe/",
           [self = shared_from_this()](error_code ec, const std::string&, const RangeResult&) {
             if (ec) {
               self->count_request(true);
             } else {
               self->follow_endpoint();
             }
             self->schedule_watch_probe();
           });
}

void EtcdRegistryImpl::read_prefix(Subscription& sub) {
  sub.need_read = true;
  count_request(false);
  op_range(*client_, sub.prefix,
           [self = shared_from_this(), id = sub.id](error_code ec, const std::string& why, RangeResult r) {
             self->on_read(id, ec, why, r);
           });
}

void EtcdRegistryImpl::on_read(SubscriptionId id, error_code ec, const std::string& why, const RangeResult& r) {
  assert(strand().running_in_this_thread());
  if (ec) count_request(true);
  Subscription* sub = find_subscription(id);
  if (sub == nullptr || closed()) return;
  if (ec)
    return subscription_failed(*sub, ec, "read of " + sub->prefix + " failed: " + (why.empty() ? ec.message() : why));
  follow_endpoint();
  update_stats([](RegistryStats& s) { ++s.full_reads; });
  count(sub->target->reset(r.kvs));
  sub->revision = r.revision;
  sub->need_read = false;
  deliver(*sub);
  if (find_subscription(id) != nullptr) start_watch(*sub);
}

void EtcdRegistryImpl::start_watch(Subscription& sub) {
  assert(strand().running_in_this_thread());
  if (sub.watch) sub.watch->cancel();
  const auto gen = ++sub.watch_gen;
  sub.watch_created = false;
  sub.watch_started = std::chrono::steady_clock::now();
  count_request(false);
  // Weak: the watch holds this handler, and this object holds the watch.
  sub.watch = client_->watch(sub.prefix, sub.revision + 1,
                             [w = weak_from_this(), id = sub.id, gen](error_code ec, const WatchResponse& resp) {
                               if (auto self = w.lock()) self->on_watch(id, gen, ec, resp);
                             });
}

void EtcdRegistryImpl::on_watch(SubscriptionId id, std::uint64_t gen, error_code ec, const WatchResponse& resp) {
  assert(strand().running_in_this_thread());
  Subscription* sub = find_subscription(id);
  if (sub == nullptr || gen != sub->watch_gen || closed()) return;
  if (!ec) {
    if (resp.created) {
      sub->watch_created = true;
      sub->watch_endpoint = client_->preferred_endpoint();  // set by the watch on `created`, on this strand
    }
    if (resp.events.empty()) return;
    for (const auto& e : resp.events) sub->revision = std::max(sub->revision, e.kv.mod_revision);
    count(sub->target->apply(resp.events));  // all events of one response at once
    deliver(*sub);
    return;
  }
  sub->watch.reset();
  if (ec == boost::asio::error::operation_aborted) return;
  if (ec == errc::compacted) {
    logger()->info("subscription {}: revision {} compacted; reading the prefix again", sub->prefix, sub->revision + 1);
    read_prefix(*sub);
    return;
  }
  const auto lived = std::chrono::steady_clock::now() - sub->watch_started;
  if (sub->watch_created && lived >= kStableWatch) {
    update_stats([](RegistryStats& s) { ++s.watch_restarts; });
    logger()->info("subscription {}: watch broke ({}); resuming from revision {}", sub->prefix, ec.message(),
                   sub->revision + 1);
    start_watch(*sub);
    return;
  }
  count_request(true);  // the watch was never confirmed, or broke at once
  subscription_failed(
      *sub, ec,
      "watch of " + sub->prefix + " from revision " + std::to_string(sub->revision + 1) + " failed: " + ec.message());
}

void EtcdRegistryImpl::subscription_failed(Subscription& sub, error_code ec, const std::string& why) {
  if (sub.retry == 0) sub.retry = schedule_retry<FailedSubscribedTask>(sub.id);
  logger()->warn("subscription {}: {}; the last known set stands; retry in ~{} ms", sub.prefix, why,
                 options_.retry_period.count());
  if (sub.on_error && !sub.cancelled.load(std::memory_order_acquire)) {
    auto on_error = sub.on_error;  // it may unsubscribe (posted) from inside
    on_error(ec, why);
  }
}

void EtcdRegistryImpl::retry_subscribe(SubscriptionId id) {
  Subscription* sub = find_subscription(id);
  if (sub == nullptr) return;
  sub->retry = 0;
  if (sub->need_read) {
    read_prefix(*sub);
  } else {
    update_stats([](RegistryStats& s) { ++s.watch_restarts; });
    start_watch(*sub);
  }
}

void EtcdRegistryImpl::deliver(Subscription& sub) {
  if (sub.cancelled.load(std::memory_order_acquire)) return;
  sub.target->deliver(sub.revision);
}

void EtcdRegistryImpl::count(const TargetCounts& c) {
  if (c.bad_entries == 0 && c.rules_accepted == 0 && c.rules_refused == 0) return;
  update_stats([&](RegistryStats& s) {
    s.bad_entries += c.bad_entries;
    s.rules_accepted += c.rules_accepted;
    s.rules_refused += c.rules_refused;
  });
}

void EtcdRegistryImpl::end_subscription(SubscriptionId id) {
  assert(strand().running_in_this_thread());
  auto it = subs_.find(id);
  if (it == subs_.end()) return;
  auto& sub = *it->second;
  if (sub.watch) sub.watch->cancel();
  cancel_retry(sub.retry);
  logger()->info("unsubscribe {} (id {})", sub.prefix, id);
  subs_.erase(it);
  update_stats([n = subs_.size()](RegistryStats& st) { st.subscriptions_now = n; });
}

void EtcdRegistryImpl::follow_endpoint() {
  assert(strand().running_in_this_thread());
  if (closed() || client_->endpoints().size() < 2) return;
  const std::size_t preferred = client_->preferred_endpoint();
  for (auto& [id, sub] : subs_) {
    if (!sub->watch || !sub->watch_created || sub->watch_endpoint == preferred) continue;
    if (sub->cancelled.load(std::memory_order_acquire)) continue;
    update_stats([](RegistryStats& s) { ++s.watch_restarts; });
    logger()->info("subscription {}: requests failed over to {}; moving the watch there from revision {}", sub->prefix,
                   to_string(client_->endpoints()[preferred]), sub->revision + 1);
    start_watch(*sub);
  }
}

void EtcdRegistryImpl::finish_unsubscribe(SubscriptionId id) { end_subscription(id); }

}  // namespace wheelrpc::registry::detail
