// The client's provider set: the first one, the source's reports, providers
// joining, leaving (retired: drained, then closed) and coming back.

#include "client/provider_pool.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include <wheelrpc/transport/errc.h>

#include "client/client_context.h"
#include "base/log.h"
#include "client/provider_review.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {
using boost::system::error_code;
using tcp = boost::asio::ip::tcp;
using Lock = common::LockGuard<common::Mutex>;

constexpr std::uint32_t kDefaultWeight = 100;  // ProviderInfo's
constexpr std::uint32_t kMaxWeight = 10000;

namespace {

/// "a:1=100 (default), b:2=0 (rule ...)" for the log.
std::string describe_weights(const ProviderSet& set) {
  std::string out;
  for (std::size_t i = 0; i < set.conns.size(); ++i) {
    out +=
        fmt::format("{}{}={} ({})", out.empty() ? "" : ", ", set.conns[i]->peer(), set.weights[i], set.weight_from[i]);
  }
  return out.empty() ? "none" : out;
}

std::string join_peers(const std::vector<std::shared_ptr<Subchannel>>& conns) {
  std::string out;
  for (const auto& c : conns) out += (out.empty() ? "" : ",") + c->peer();
  return out;
}

/// Gives `set` a new balancer of `policy`.
void set_balancer(ProviderSet& set, LoadBalance policy) {
  set.balancer = make_load_balancer(policy);
  set.load_aware = policy == LoadBalance::load_aware;
}

}  // namespace

ProviderPool::ProviderPool(std::shared_ptr<ClientContext> ctx) : ctx_(std::move(ctx)) {
  auto first = std::make_shared<ProviderSet>();
  set_balancer(*first, ctx_->options.load_balance);
  set_.store(std::move(first));
}

ProviderPool::~ProviderPool() = default;

void ProviderPool::init(std::weak_ptr<SubchannelListener> listener, const std::vector<tcp::endpoint>& servers) {
  listener_ = std::move(listener);
  ToClose to_close;  // nothing: no provider leaves the first set
  Lock lock(mu_);
  apply_set_locked(std::vector<ProviderInfo>(servers.begin(), servers.end()), to_close);
}

void ProviderPool::init(std::weak_ptr<SubchannelListener> listener, std::shared_ptr<ProviderSource> source,
                        ProviderSource::InfoListener on_report) {
  listener_ = std::move(listener);
  source_ = std::move(source);
  {
    Lock lock(mu_);  // a rule set may be arriving (on_rules): its balancer and weights stay
    auto empty = std::make_shared<ProviderSet>(*current());
    empty->peers = source_->describe();
    set_.store(std::move(empty));
  }
  source_->start_with_info(std::move(on_report));  // may report at once, which takes mu_
}

bool ProviderPool::on_source_report(error_code ec, std::vector<ProviderInfo> providers, std::string why) {
  if (ctx_->closed.load(std::memory_order_acquire)) return false;
  bool check_waiting = false;
  ToClose to_close;
  {
    Lock lock(mu_);
    if (ctx_->closed.load(std::memory_order_acquire)) return false;
    const auto set = current();
    if (ec) {
      // The client keeps what it has; with nothing yet, calls that do not
      // wait for ready learn why at once.
      logger()->warn("provider source {}: {}{}", source_->describe(), why.empty() ? ec.message() : why,
                     set->known ? fmt::format(" (keeping {} providers)", set->conns.size()) : "");
      if (!set->known) {
        auto next = std::make_shared<ProviderSet>(*set);
        next->source_error = source_->describe() + ": " + (why.empty() ? ec.message() : why);
        set_.store(std::move(next));
        check_waiting = true;
      }
    } else if (providers.empty() && ctx_->options.empty_protection) {
      ClientMetrics::count(ctx_->metrics.empty_sets_ignored);
      if (!set->known) {
        auto next = std::make_shared<ProviderSet>(*set);
        next->known = true;  // known to be empty: calls that do not wait for ready fail now
        next->source_error.clear();
        next->empty_why = source_->why_empty();
        set_.store(std::move(next));
        check_waiting = true;
        // Nothing was ever known, so nothing is kept: no alarm about empty
        // protection, just the fact.
        logger()->warn("{}", source_->why_empty());
      } else {
        logger()->warn("{} reported no provider: keeping the last {} (empty protection)", source_->describe(),
                       set->conns.size());
      }
    } else {
      apply_set_locked(std::move(providers), to_close);
      check_waiting = true;
    }
  }
  close_retired(to_close);
  return check_waiting;
}

SourceState ProviderPool::source_state() const {
  const auto set = current();
  SourceState s;
  s.source = source_ ? source_->describe() : set->peers;
  s.reported = set->known;
  s.providers = set->conns.size();
  if (!set->known) {
    s.error = set->source_error;
  } else if (set->conns.empty()) {
    s.error = set->empty_why;
  }
  return s;
}

ProviderPool::SetPin::SetPin(const ProviderPool& pool) {
  const std::size_t slot = common::thread_slot();
  if (slot != common::kSharedSlot) {
    Line& line = pool.set_cache_[slot];
    const std::uint64_t version = pool.set_.version();
    if (line.version != version && line.pins == 0) {  // changed, and no outer pin holds the old one
      line.set = pool.set_.load();
      line.version = version;
    }
    if (line.version == version) {
      ++line.pins;
      line_ = &line;
      set_ = line.set.get();
      return;
    }
  }
  held_ = pool.set_.load();
  set_ = held_.get();
}

void ProviderPool::wake_all(TimePoint t) {
  ctx_->started.store(true, std::memory_order_release);
  const auto set = current();
  for (auto& c : set->conns) c->want(t);
}

void ProviderPool::connect_failed(const tcp::endpoint& endpoint) {
  if (source_) source_->connect_failed(endpoint);
}

void ProviderPool::remember_left_locked(const Subchannel& sub) {
  // Its task counters live on in the client's totals.
  ClientMetrics::count(ctx_->metrics.forgotten_heartbeats, sub.heartbeats_sent());
  ClientMetrics::count(ctx_->metrics.forgotten_idle_closes, sub.idle_closes());
  auto& entry = left_[sub.endpoint()];
  if (entry.peer.empty()) left_order_.push_back(sub.endpoint());
  entry = sub.stats();
  entry.ready = false;
  entry.active = 0;
  entry.last_error.clear();
  entry.removed = true;
  if (left_order_.size() > kLeftKept) {
    left_.erase(left_order_.front());
    left_order_.erase(left_order_.begin());
  }
}

std::shared_ptr<Subchannel> ProviderPool::make_subchannel_locked(const tcp::endpoint& endpoint) {
  // Back after it left: its counters go on from where they were.
  std::optional<ProviderStats> restored;
  if (auto it = left_.find(endpoint); it != left_.end()) {
    restored = std::move(it->second);
    left_.erase(it);
    left_order_.erase(std::find(left_order_.begin(), left_order_.end(), endpoint));
  }
  auto c = std::make_shared<Subchannel>(ctx_, listener_, endpoint, next_seed_++, restored ? &*restored : nullptr);
  c->start_tasks();
  return c;
}

void ProviderPool::apply_set_locked(std::vector<ProviderInfo> providers, ToClose& to_close) {
  // Duplicates dropped, the first occurrence's order kept.
  std::vector<tcp::endpoint> unique;
  std::map<tcp::endpoint, ProviderInfo> infos;
  for (auto& p : providers) {
    if (infos.contains(p.endpoint)) continue;
    unique.push_back(p.endpoint);
    infos.emplace(p.endpoint, std::move(p));
  }
  const auto old_infos = std::exchange(infos_, std::move(infos));
  const auto old = current();
  const auto t = ctx_->now();
  auto next = std::make_shared<ProviderSet>();
  next->known = true;
  std::vector<std::shared_ptr<Subchannel>> joined;
  std::size_t added = 0, back = 0;
  for (const auto& ep : unique) {
    auto same = std::find_if(old->conns.begin(), old->conns.end(), [&](const auto& c) { return c->endpoint() == ep; });
    if (same != old->conns.end()) {
      next->conns.push_back(*same);
      // Registered anew (a restart, a lost lease renewed): its backoff from
      // the outage no longer says anything.
      const auto was = old_infos.find(ep);
      const auto epoch = infos_.at(ep).epoch;
      if (epoch != 0 && was != old_infos.end() && was->second.epoch != epoch) (*same)->reset_backoff(t);
      continue;
    }
    if (auto it = retiring_.find(ep); it != retiring_.end()) {
      auto c = std::move(it->second);
      retiring_.erase(it);
      c->revive();
      c->reset_backoff(t);  // back in the set: reported again
      next->conns.push_back(c);
      joined.push_back(std::move(c));
      ++back;
      continue;
    }
    auto c = make_subchannel_locked(ep);
    next->conns.push_back(c);
    joined.push_back(std::move(c));
    ++added;
  }
  std::vector<std::shared_ptr<Subchannel>> left;
  for (const auto& c : old->conns) {
    if (std::find(next->conns.begin(), next->conns.end(), c) == next->conns.end()) left.push_back(c);
  }
  next->peers = next->conns.empty() && source_ ? source_->describe() : join_peers(next->conns);
  if (next->conns.empty()) next->empty_why = source_ ? source_->why_empty() : "the provider list is empty";
  fill_weights_locked(*next);
  if (old->known && joined.empty() && left.empty()) {
    // The same providers: a new set only if a weight changed, keeping every
    // connection (a record that changed only in weight reconnects nothing).
    bool reweighted = false;
    for (std::size_t i = 0; i < next->conns.size() && !reweighted; ++i) {
      const auto j = std::find(old->conns.begin(), old->conns.end(), next->conns[i]) - old->conns.begin();
      reweighted = next->weights[i] != old->weights[j] || next->weight_from[i] != old->weight_from[j] ||
                   next->tags[i] != old->tags[j];
    }
    if (!reweighted) return;
    set_balancer(*next, policy_locked());
    set_.store(std::move(next));
    logger()->info("provider weights now {}", describe_weights(*set_.load()));
    return;
  }
  set_balancer(*next, policy_locked());
  set_.store(next);
  if (ctx_->review) {
    std::vector<Reviewed> reviewed;
    reviewed.reserve(next->conns.size());
    for (const auto& c : next->conns) reviewed.push_back(c->reviewed());
    ctx_->review->track(reviewed);
  }
  ClientMetrics::count(ctx_->metrics.provider_sets);
  ClientMetrics::count(ctx_->metrics.providers_added, added + back);
  ClientMetrics::count(ctx_->metrics.providers_removed, left.size());
  if (old->known) {
    logger()->info("providers now {} ({}): {} joined, {} left", next->conns.size(),
                   next->conns.empty() ? "none" : next->peers, joined.size(), left.size());
  }
  // Published first, retired after: an attempt is never sent to a provider
  // that is in no set, and a provider is never in the set and retired.
  for (const auto& c : left) {
    std::shared_ptr<ClientTransport> close_now;
    if (c->retire(close_now)) {
      retiring_[c->endpoint()] = c;  // it drains
    } else {
      remember_left_locked(*c);
    }
    if (close_now) to_close.push_back(std::move(close_now));  // after mu_ is released
  }
  // A client in use connects to new providers at once; one not used yet
  // connects on its first call, as it would to its first providers.
  if (ctx_->started.load(std::memory_order_acquire)) {
    for (const auto& c : joined) c->want(t);
  }
}

void ProviderPool::close_retired(ToClose& to_close) {
  for (auto& t : to_close) t->close(transport::make_error_code(transport::errc::closed), "provider left the set");
  to_close.clear();
}

void ProviderPool::forget_retired(Subchannel& sub) {
  std::shared_ptr<Subchannel> self;
  {
    Lock lock(mu_);
    auto it = retiring_.find(sub.endpoint());
    if (it == retiring_.end() || it->second.get() != &sub) return;  // revived, or the client closed
    self = std::move(it->second);
    retiring_.erase(it);
    remember_left_locked(sub);
  }
  sub.stop_tasks();
}

std::vector<std::shared_ptr<Subchannel>> ProviderPool::all() const {
  Lock lock(mu_);
  auto conns = current()->conns;
  for (const auto& [ep, c] : retiring_) conns.push_back(c);
  return conns;
}

std::vector<std::shared_ptr<Subchannel>> ProviderPool::close() {
  if (source_) source_->stop();
  // No set is applied once the context is closed (on_source_report checks it under mu_).
  Lock lock(mu_);
  auto conns = current()->conns;
  for (auto& [ep, c] : retiring_) conns.push_back(std::move(c));
  retiring_.clear();
  return conns;
}

void ProviderPool::add_left(std::vector<ProviderStats>& out) const {
  Lock lock(mu_);
  for (const auto& ep : left_order_) out.push_back(left_.at(ep));
}

ProviderSet::Route ProviderSet::route(std::string_view tag) const {
  // An untagged call: the untagged providers, or any when every one is tagged.
  // A tagged call: its tag's providers; without any, the untagged ones unless
  // its rule forbids the fallback.
  using Kind = Route::Kind;
  const Route fallback = any_untagged ? Route{Kind::only, {}} : Route{Kind::any, {}};
  if (tag.empty()) return fallback;
  if (std::find(tags.begin(), tags.end(), tag) != tags.end()) return {Kind::only, tag};
  if (std::binary_search(strict_tags.begin(), strict_tags.end(), tag)) return {Kind::none, {}};
  return fallback;
}

std::string ProviderSet::no_route_why(std::string_view tag) const {
  std::string why = fmt::format("no provider serves tag '{}' and its rule allows no fallback", tag);
  const auto it = std::lower_bound(strict_tags.begin(), strict_tags.end(), tag);
  if (it != strict_tags.end() && *it == tag) {
    const auto& from = strict_from[static_cast<std::size_t>(it - strict_tags.begin())];
    if (!from.empty()) why += " (" + from + ")";
  }
  return why;
}

void ProviderPool::fill_weights_locked(ProviderSet& set) const {
  set.tags.clear();
  set.tagged = false;
  set.any_untagged = true;
  set.strict_tags.clear();
  set.strict_from.clear();
  for (const auto& c : set.conns) {
    std::string tag;
    bool ruled = false;
    if (rules_) {
      for (const auto& [name, route] : rules_->tags) {
        if (std::find(route.providers.begin(), route.providers.end(), c->peer()) != route.providers.end()) {
          tag = name;
          ruled = true;
          break;
        }
      }
    }
    if (!ruled) {
      if (const auto info = infos_.find(c->endpoint()); info != infos_.end()) {
        if (auto t = info->second.tags.find("tag"); t != info->second.tags.end()) tag = t->second;
      }
    }
    set.tagged = set.tagged || !tag.empty();
    set.tags.push_back(std::move(tag));
  }
  set.any_untagged = std::find(set.tags.begin(), set.tags.end(), "") != set.tags.end();
  if (rules_) {
    // By tag name (the map's order), so route() can binary_search them.
    const std::string source = ctx_->options.rules ? ctx_->options.rules->describe() : std::string();
    for (const auto& [name, route] : rules_->tags) {
      if (route.fallback) continue;
      set.strict_tags.push_back(name);
      std::string from = route.origin ? *route.origin : std::string();
      if (!source.empty()) from += (from.empty() ? "" : ", ") + source;
      set.strict_from.push_back(std::move(from));
    }
  }
  set.weights.clear();
  set.weight_from.clear();
  set.weights.reserve(set.conns.size());
  set.weight_from.reserve(set.conns.size());
  for (const auto& c : set.conns) {
    if (rules_) {
      if (auto it = rules_->weights.find(c->peer()); it != rules_->weights.end()) {
        set.weights.push_back(std::min<std::uint32_t>(it->second.value, kMaxWeight));
        set.weight_from.push_back("rule " + (it->second.origin ? *it->second.origin : std::string("(unnamed)")));
        continue;
      }
    }
    const auto info = infos_.find(c->endpoint());
    if (rules_ && !rules_->provider_weights.empty()) {
      // A provider rule that chooses it by address, zone or routing tag (the last one wins).
      const std::string_view zone = info == infos_.end() ? std::string_view() : info->second.zone;
      std::string_view tag;
      if (info != infos_.end()) {
        if (auto t = info->second.tags.find("tag"); t != info->second.tags.end()) tag = t->second;
      }
      const auto& rules = rules_->provider_weights;
      const auto chosen = std::find_if(rules.rbegin(), rules.rend(), [&](const CallRules::ProviderWeight& w) {
        return w.chooses(c->peer(), zone, tag);
      });
      if (chosen != rules.rend()) {
        set.weights.push_back(std::min<std::uint32_t>(chosen->weight.value, kMaxWeight));
        set.weight_from.push_back("rule " +
                                  (chosen->weight.origin ? *chosen->weight.origin : std::string("(unnamed)")));
        continue;
      }
    }
    const std::uint32_t w = info == infos_.end() ? kDefaultWeight : std::min(info->second.weight, kMaxWeight);
    set.weights.push_back(w);
    set.weight_from.push_back(w == kDefaultWeight ? "default" : "registry");
  }
}

LoadBalance ProviderPool::policy_locked() const {
  return rules_ && rules_->load_balance ? rules_->load_balance->value : ctx_->options.load_balance;
}

void ProviderPool::on_rules(const std::shared_ptr<const CallRules>& rules) {
  Lock lock(mu_);
  if (ctx_->closed.load(std::memory_order_acquire)) return;
  rules_ = rules;
  const auto old = current();
  auto next = std::make_shared<ProviderSet>(*old);
  fill_weights_locked(*next);
  const LoadBalance policy = policy_locked();
  const bool new_policy = old->balancer->policy() != policy;
  const bool new_weights = next->weights != old->weights || next->weight_from != old->weight_from ||
                           next->tags != old->tags || next->strict_tags != old->strict_tags ||
                           next->strict_from != old->strict_from;
  if (!new_policy && !new_weights) return;
  // A new balancer either way: its state is by index and by weight. Picks
  // that pinned the old set finish with the old balancer (the set holds it).
  set_balancer(*next, policy);
  set_.store(std::move(next));
  if (new_policy) {
    logger()->info("load balancing now {} ({})", to_string(policy),
                   rules && rules->load_balance && rules->load_balance->origin ? *rules->load_balance->origin
                                                                               : std::string("the client's option"));
  }
  if (new_weights) logger()->info("provider weights now {}", describe_weights(*current()));
}

void ProviderPool::fill_weights(std::vector<ProviderStats>& out) const {
  const auto set = current();
  for (auto& s : out) {
    for (std::size_t i = 0; i < set->conns.size(); ++i) {
      if (set->conns[i]->peer() == s.peer && !s.removed) {
        s.weight = set->weights[i];
        s.weight_from = set->weight_from[i];
      }
    }
  }
}

void ProviderPool::fill_weights(std::vector<ConnectionInfo>& out) const {
  const auto set = current();
  for (auto& c : out) {
    for (std::size_t i = 0; i < set->conns.size(); ++i) {
      if (set->conns[i]->peer() == c.remote && c.state != ConnectionInfo::State::closing) {
        c.weight = set->weights[i];
        c.weight_from = set->weight_from[i];
      }
    }
  }
}

}  // namespace wheelrpc::rpc::detail
