// EtcdRegistry::create, the public handle, and the registry's common
// machinery: posting to the strand, retries on the shared timer, stats, close.

#include "etcd_registry.h"

#include <cassert>
#include <stdexcept>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "etcd_endpoints.h"
#include "log.h"
#include "provider_target.h"
#include "retry_tasks.h"
#include "rule_target.h"

namespace wheelrpc::registry {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// The object users hold. Its destruction closes the registry (revoking the
// lease, best effort); the implementation lives on while its requests finish.
class EtcdRegistryHandle final : public EtcdRegistry {
 public:
  explicit EtcdRegistryHandle(std::shared_ptr<detail::EtcdRegistryImpl> impl) : impl_(std::move(impl)) {}
  ~EtcdRegistryHandle() override { impl_->close(); }

  void register_instance(ServiceInstance instance, RegistrationListener listener) override {
    impl_->register_instance(std::move(instance), std::move(listener));
  }
  void unregister_instance(const std::string& service, const std::string& endpoint,
                           std::function<void(error_code)> done) override {
    impl_->unregister_instance(service, endpoint, std::move(done));
  }
  SubscriptionId subscribe(std::string service, ProviderListener listener) override {
    return impl_->subscribe(std::move(service), std::move(listener));
  }
  SubscriptionId subscribe_with_errors(std::string service, ProviderListener listener,
                                       SubscriptionErrorListener on_error) override {
    return impl_->subscribe(std::move(service), std::move(listener), std::move(on_error));
  }
  SubscriptionId subscribe_rules(std::string service, const RuleScope& consumer, RulesListener listener,
                                 SubscriptionErrorListener on_error) override {
    return impl_->subscribe_rules(std::move(service), consumer, std::move(listener), std::move(on_error));
  }
  SubscriptionId subscribe_provider_rules(std::string service, const ProviderScope& self, ServerRulesListener listener,
                                          SubscriptionErrorListener on_error) override {
    return impl_->subscribe_provider_rules(std::move(service), self, std::move(listener), std::move(on_error));
  }
  void unsubscribe(SubscriptionId id) override { impl_->unsubscribe(id); }
  void close() override { impl_->close(); }
  bool call_after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    return impl_->call_after(delay, std::move(fn));
  }
  RegistryStats stats() const override { return impl_->stats(); }
  std::int64_t lease_id() const override { return impl_->lease_id(); }
  std::string describe() const override { return impl_->describe(); }

 private:
  std::shared_ptr<detail::EtcdRegistryImpl> impl_;
};

}  // namespace

std::shared_ptr<EtcdRegistry> EtcdRegistry::create(asio::any_io_executor ex, timer::Timer& timer,
                                                   const std::string& endpoints, EtcdRegistryOptions options) {
  error_code ec;
  std::string why;
  auto eps = detail::parse_etcd_endpoints(endpoints, ec, why);
  if (ec) throw std::invalid_argument("EtcdRegistry: " + why);
  if (options.lease_ttl < std::chrono::seconds(2) || options.lease_ttl > std::chrono::seconds(3600)) {
    throw std::invalid_argument("EtcdRegistry: lease_ttl " + std::to_string(options.lease_ttl.count()) +
                                " s is outside 2..3600 s");
  }
  if (options.request_timeout.count() <= 0) throw std::invalid_argument("EtcdRegistry: request_timeout must be > 0");
  if (options.retry_period.count() <= 0) throw std::invalid_argument("EtcdRegistry: retry_period must be > 0");
  while (options.root.size() > 1 && options.root.back() == '/') options.root.pop_back();
  if (options.root.empty() || options.root.front() != '/') {
    throw std::invalid_argument("EtcdRegistry: root '" + options.root + "' must start with '/'");
  }
  detail::EtcdClientOptions copts;
  copts.request_timeout = options.request_timeout;
  auto client = detail::EtcdClient::create(std::move(ex), timer, std::move(eps), copts);
  return std::make_shared<EtcdRegistryHandle>(std::make_shared<detail::EtcdRegistryImpl>(std::move(client), options));
}

namespace detail {

EtcdRegistryImpl::EtcdRegistryImpl(std::shared_ptr<EtcdClient> client, EtcdRegistryOptions options)
    : client_(std::move(client)), options_(std::move(options)), rng_(std::random_device{}()) {}

std::string EtcdRegistryImpl::key_of(const std::string& service, const std::string& endpoint) const {
  return options_.root + "/" + service + "/providers/" + endpoint;
}

void EtcdRegistryImpl::register_instance(ServiceInstance instance, RegistrationListener listener) {
  asio::post(strand(),
             [self = shared_from_this(), instance = std::move(instance), listener = std::move(listener)]() mutable {
               self->do_register(std::move(instance), std::move(listener));
             });
}

void EtcdRegistryImpl::unregister_instance(const std::string& service, const std::string& endpoint,
                                           std::function<void(error_code)> done) {
  asio::post(strand(), [self = shared_from_this(), key = key_of(service, endpoint), done = std::move(done)]() mutable {
    self->do_unregister(key, std::move(done));
  });
}

SubscriptionId EtcdRegistryImpl::subscribe(std::string service, ProviderListener listener,
                                           SubscriptionErrorListener on_error) {
  auto prefix = key_of(service, "");
  auto target = std::make_unique<ProviderTarget>(std::move(service), prefix, std::move(listener));
  return add_subscription(std::move(prefix), std::move(target), std::move(on_error));
}

SubscriptionId EtcdRegistryImpl::subscribe_rules(std::string service, const RuleScope& consumer, RulesListener listener,
                                                 SubscriptionErrorListener on_error) {
  auto prefix = options_.root + "/" + service + "/rules/";
  auto target = std::make_unique<RuleTarget>(prefix, [consumer, listener = std::move(listener), source = describe()](
                                                         const GoodRules& good, std::int64_t revision) {
    listener(build_call_rules(good, consumer, revision, source));
  });
  return add_subscription(std::move(prefix), std::move(target), std::move(on_error));
}

SubscriptionId EtcdRegistryImpl::subscribe_provider_rules(std::string service, const ProviderScope& self,
                                                          ServerRulesListener listener,
                                                          SubscriptionErrorListener on_error) {
  auto prefix = options_.root + "/" + service + "/rules/";
  auto target = std::make_unique<RuleTarget>(prefix, [self, listener = std::move(listener), source = describe()](
                                                         const GoodRules& good, std::int64_t revision) {
    listener(build_server_rules(good, self, revision, source));
  });
  return add_subscription(std::move(prefix), std::move(target), std::move(on_error));
}

SubscriptionId EtcdRegistryImpl::add_subscription(std::string prefix, std::unique_ptr<SubscriptionTarget> target,
                                                  SubscriptionErrorListener on_error) {
  const SubscriptionId id = next_sub_.fetch_add(1, std::memory_order_relaxed);
  auto sub = std::make_shared<Subscription>(id, std::move(prefix), std::move(target));
  sub->on_error = std::move(on_error);
  {
    common::LockGuard l(index_mu_);
    index_.emplace(id, sub);
  }
  asio::post(strand(), [self = shared_from_this(), sub] { self->start_subscription(sub); });
  return id;
}

void EtcdRegistryImpl::unsubscribe(SubscriptionId id) {
  std::shared_ptr<Subscription> sub;
  {
    common::LockGuard l(index_mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return;
    sub = std::move(it->second);
    index_.erase(it);
  }
  sub->cancelled.store(true, std::memory_order_release);
  asio::post(strand(), [self = shared_from_this(), id] { self->end_subscription(id); });
}

void EtcdRegistryImpl::close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  {
    common::LockGuard l(index_mu_);
    for (auto& [id, sub] : index_) sub->cancelled.store(true, std::memory_order_release);
    index_.clear();
  }
  // Pending call_after() deadlines run now rather than outlive the registry
  // on the timer.
  std::map<std::uint64_t, After> afters;
  {
    common::LockGuard l(after_mu_);
    afters.swap(afters_);
  }
  for (auto& [id, a] : afters) {
    a.timeout.cancel();
    asio::post(strand(), std::move(a.fn));
  }
  asio::post(strand(), [self = shared_from_this()] { self->do_close(); });
}

void EtcdRegistryImpl::do_close() {
  assert(strand().running_in_this_thread());
  for (auto& [id, timeout] : retries_) timeout.cancel();
  retries_.clear();
  unreg_retries_.clear();
  keepalive_.cancel();
  for (auto& [id, sub] : subs_) {
    if (sub->watch) sub->watch->cancel();
  }
  subs_.clear();
  for (auto& [key, r] : regs_) r.retry = 0;
  const std::int64_t lease = lease_;
  set_lease(0);
  update_stats([&](RegistryStats& s) {
    s.retry_tasks_pending = 0;
    s.subscriptions_now = 0;
    s.registered_now = 0;
  });
  if (lease != 0) {
    // Best effort, bounded by the client's request deadline per endpoint; the
    // request holds this object until it completes.
    count_request(false);
    client_->lease_revoke(lease, [self = shared_from_this(), lease](error_code ec) {
      if (ec) {
        self->count_request(true);
        logger()->warn("close: revoking lease {:x} failed: {} (its keys expire with its TTL)", lease, ec.message());
      } else {
        logger()->info("close: lease {:x} revoked", lease);
      }
    });
  }
  regs_.clear();
  logger()->debug("registry closed");
}

bool EtcdRegistryImpl::call_after(std::chrono::milliseconds delay, std::function<void()> fn) {
  common::LockGuard l(after_mu_);
  if (closed()) {
    // Closed: the deadline is not kept for later; it runs now, on the strand.
    asio::post(strand(), std::move(fn));
    return true;
  }
  const std::uint64_t id = ++next_after_;
  std::error_code ec;
  auto timeout = client_->timer().new_timeout(
      [w = weak_from_this(), id] {
        if (auto self = w.lock()) self->after_due(id);
      },
      delay, ec);
  if (ec) return false;
  afters_.emplace(id, After{timeout, std::move(fn)});
  return true;
}

void EtcdRegistryImpl::after_due(std::uint64_t id) {
  // The timer's worker only posts.
  asio::post(strand(), [self = shared_from_this(), id] { self->run_after(id); });
}

void EtcdRegistryImpl::run_after(std::uint64_t id) {
  std::function<void()> fn;
  {
    common::LockGuard l(after_mu_);
    auto it = afters_.find(id);
    if (it == afters_.end()) return;
    fn = std::move(it->second.fn);
    afters_.erase(it);
  }
  fn();
}

std::string EtcdRegistryImpl::describe() const {
  std::string out = "etcd at ";
  for (const auto& ep : client_->endpoints()) out += (out.size() > 8 ? "," : "") + to_string(ep);
  return out;
}

RegistryStats EtcdRegistryImpl::stats() const {
  common::LockGuard l(stats_mu_);
  return stats_;
}

void EtcdRegistryImpl::count_request(bool failed) {
  update_stats([&](RegistryStats& s) { failed ? ++s.request_failures : ++s.requests; });
}

std::chrono::nanoseconds EtcdRegistryImpl::jittered(std::chrono::milliseconds period) {
  std::uniform_real_distribution<double> d(0.8, 1.2);
  return std::chrono::nanoseconds(
      static_cast<std::int64_t>(static_cast<double>(std::chrono::nanoseconds(period).count()) * d(rng_)));
}

template <class Task, class Arg>
std::uint64_t EtcdRegistryImpl::schedule_retry(Arg arg) {
  assert(strand().running_in_this_thread());
  if (closed()) return 0;
  const std::uint64_t id = ++next_retry_;
  auto task = std::make_shared<Task>(weak_from_this(), id, std::move(arg));
  std::error_code ec;
  auto timeout =
      client_->timer().new_timeout(std::shared_ptr<timer::TimerTask>(task), jittered(options_.retry_period), ec);
  if (ec) {
    logger()->error("{} not scheduled: {} (the operation will not be retried)", task->name(), ec.message());
    return 0;
  }
  retries_.emplace(id, timeout);
  update_stats([&](RegistryStats& s) { s.retry_tasks_pending = retries_.size(); });
  return id;
}

template std::uint64_t EtcdRegistryImpl::schedule_retry<FailedRegisteredTask, std::string>(std::string);
template std::uint64_t EtcdRegistryImpl::schedule_retry<FailedUnregisteredTask, std::string>(std::string);
template std::uint64_t EtcdRegistryImpl::schedule_retry<FailedSubscribedTask, SubscriptionId>(SubscriptionId);

void EtcdRegistryImpl::cancel_retry(std::uint64_t& id) {
  assert(strand().running_in_this_thread());
  if (id == 0) return;
  if (auto it = retries_.find(id); it != retries_.end()) {
    it->second.cancel();
    retries_.erase(it);
    update_stats([&](RegistryStats& s) { s.retry_tasks_pending = retries_.size(); });
  }
  id = 0;
}

bool EtcdRegistryImpl::take_retry(std::uint64_t id) {
  assert(strand().running_in_this_thread());
  if (closed() || retries_.erase(id) == 0) return false;
  update_stats([&](RegistryStats& s) { s.retry_tasks_pending = retries_.size(); });
  return true;
}

}  // namespace detail
}  // namespace wheelrpc::registry
