#pragma once
// EtcdRegistryImpl: the state and logic behind EtcdRegistry. Everything here
// runs on one strand (the etcd client's); the public methods only post there.
// Split by concept: etcd_registry.cc (life, public methods, retries, stats),
// registry_lease.cc (the one lease), registry_register.cc (register and
// unregister), registry_subscribe.cc (range + watch per subscription).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/strand.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/registry/etcd_registry.h>

#include "etcd_client.h"
#include "subscription_target.h"

namespace wheelrpc::registry::detail {

class AbstractRetryTask;

class EtcdRegistryImpl : public std::enable_shared_from_this<EtcdRegistryImpl> {
 public:
  using Strand = EtcdClient::Strand;

  EtcdRegistryImpl(std::shared_ptr<EtcdClient> client, EtcdRegistryOptions options);

  // Public operations: any thread; they post to the strand.
  void register_instance(ServiceInstance instance, RegistrationListener listener);
  void unregister_instance(const std::string& service, const std::string& endpoint,
                           std::function<void(boost::system::error_code)> done);
  SubscriptionId subscribe(std::string service, ProviderListener listener, SubscriptionErrorListener on_error = {});
  SubscriptionId subscribe_rules(std::string service, const RuleScope& consumer, RulesListener listener,
                                 SubscriptionErrorListener on_error);
  SubscriptionId subscribe_provider_rules(std::string service, const ProviderScope& self, ServerRulesListener listener,
                                          SubscriptionErrorListener on_error);
  void unsubscribe(SubscriptionId id);
  void close();
  bool call_after(std::chrono::milliseconds delay, std::function<void()> fn);
  RegistryStats stats() const;
  std::int64_t lease_id() const noexcept { return lease_public_.load(std::memory_order_acquire); }
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  /// "etcd at h1:p1,h2:p2". Thread-safe.
  std::string describe() const;
  const Strand& strand() const noexcept { return client_->strand(); }

  // Called by the timer tasks, on the strand.
  /// True (and forgets it) if retry `id` is still pending.
  bool take_retry(std::uint64_t id);
  void retry_register(const std::string& key);
  void retry_unregister(const std::string& key);
  void retry_subscribe(SubscriptionId id);
  void finish_unsubscribe(SubscriptionId id);
  void send_keepalive(std::int64_t lease);
  /// A call_after() deadline expired (on the timer's worker): posts its function.
  void after_due(std::uint64_t id);

 private:
  struct Registration {
    ServiceInstance instance;
    std::string value;  // instance.to_json()
    RegistrationListener listener;
    std::uint64_t gen = 0;    // from next_gen_, new for each register_instance
    bool registered = false;  // put confirmed under lease_
    bool put_again = false;   // to put once the key's write in flight ends
    std::uint64_t retry = 0;  // pending FailedRegisteredTask, 0: none
    bool reported = false;    // a state was reported to the listener
    boost::system::error_code last_ec;
  };

  struct Subscription {
    Subscription(SubscriptionId i, std::string pfx, std::unique_ptr<SubscriptionTarget> t)
        : id(i), prefix(std::move(pfx)), target(std::move(t)) {}
    SubscriptionId id;
    std::string prefix;
    SubscriptionErrorListener on_error;  // may be empty
    std::atomic<bool> cancelled{false};  // set by unsubscribe() at once, from any thread
    // Strand only:
    std::unique_ptr<SubscriptionTarget> target;  // the providers, or the rules
    std::int64_t revision = 0;                   // last revision seen (read or event)
    bool need_read = true;                       // no successful read yet, or compacted
    std::shared_ptr<EtcdWatch> watch;
    std::uint64_t watch_gen = 0;
    bool watch_created = false;
    std::size_t watch_endpoint = 0;  // the client's endpoint index the watch was confirmed on
    std::chrono::steady_clock::time_point watch_started;
    std::uint64_t retry = 0;  // pending FailedSubscribedTask
  };

  // etcd_registry.cc
  std::string key_of(const std::string& service, const std::string& endpoint) const;
  template <class Task, class Arg>
  std::uint64_t schedule_retry(Arg arg);
  void cancel_retry(std::uint64_t& id);
  std::chrono::nanoseconds jittered(std::chrono::milliseconds period);
  template <class F>
  void update_stats(F f) {
    common::LockGuard l(stats_mu_);
    f(stats_);
  }
  void count_request(bool failed);
  void do_close();

  // registry_lease.cc
  void ensure_lease();
  void on_granted(boost::system::error_code ec, const std::string& why, std::int64_t id);
  void on_keepalive(std::int64_t lease, boost::system::error_code ec, const std::string& why, std::chrono::seconds ttl);
  void schedule_keepalive(std::int64_t lease, std::chrono::nanoseconds delay);
  void lease_lost(std::int64_t lease, const std::string& why);
  void set_lease(std::int64_t id);

  // registry_register.cc
  void do_register(ServiceInstance instance, RegistrationListener listener);
  void put_registration(const std::string& key);
  void on_put(const std::string& key, std::uint64_t gen, std::int64_t lease, boost::system::error_code ec,
              const std::string& why);
  void registration_failed(const std::string& key, boost::system::error_code ec, const std::string& why);
  void report(Registration& r, boost::system::error_code ec, const std::string& why);
  void do_unregister(const std::string& key, std::function<void(boost::system::error_code)> done);
  using DeleteDone = std::function<void(boost::system::error_code)>;
  void send_delete(const std::string& key, std::vector<DeleteDone> dones);
  /// After a key's write ended: the deferred delete or put, if any.
  void after_write(const std::string& key);
  void update_registered_now();

  // registry_subscribe.cc
  SubscriptionId add_subscription(std::string prefix, std::unique_ptr<SubscriptionTarget> target,
                                  SubscriptionErrorListener on_error);
  void start_subscription(std::shared_ptr<Subscription> sub);
  void count(const TargetCounts& c);
  void read_prefix(Subscription& sub);
  void on_read(SubscriptionId id, boost::system::error_code ec, const std::string& why, const RangeResult& r);
  void start_watch(Subscription& sub);
  void on_watch(SubscriptionId id, std::uint64_t gen, boost::system::error_code ec, const WatchResponse& resp);
  void subscription_failed(Subscription& sub, boost::system::error_code ec, const std::string& why);
  void deliver(Subscription& sub);
  void end_subscription(SubscriptionId id);
  /// After a request answered: watches confirmed on another endpoint than the
  /// one the client now prefers (a request failed over away from it: that
  /// member is dead, frozen or cut off) move, from their last revision + 1.
  void follow_endpoint();
  /// A registry that subscribes but holds no lease sends nothing periodic,
  /// so a watch on a frozen member (no bytes, no error) would never move: it
  /// probes the member its requests go to every max(request_timeout,
  /// lease_ttl / 3) with a read of a key nobody writes. A probe that times
  /// out fails over, and follow_endpoint() moves the watches. With a lease,
  /// the keepalives do this already. Strand only.
  void schedule_watch_probe();
  void probe_watches();
  bool probe_scheduled_ = false;  // strand only
  Subscription* find_subscription(SubscriptionId id);

  std::shared_ptr<EtcdClient> client_;
  const EtcdRegistryOptions options_;
  std::atomic<bool> closed_{false};
  std::atomic<std::int64_t> lease_public_{0};
  std::atomic<SubscriptionId> next_sub_{1};

  // call_after() entries, until they run or close() runs them early.
  struct After {
    timer::Timeout timeout;
    std::function<void()> fn;
  };
  common::Mutex after_mu_;
  std::map<std::uint64_t, After> afters_ WHEELRPC_GUARDED_BY(after_mu_);
  std::uint64_t next_after_ WHEELRPC_GUARDED_BY(after_mu_) = 0;
  void run_after(std::uint64_t id);

  mutable common::Mutex stats_mu_;
  RegistryStats stats_ WHEELRPC_GUARDED_BY(stats_mu_);

  // Lookup of live subscriptions for unsubscribe() from any thread.
  common::Mutex index_mu_;
  std::map<SubscriptionId, std::shared_ptr<Subscription>> index_ WHEELRPC_GUARDED_BY(index_mu_);

  // Strand only:
  std::int64_t lease_ = 0;  // 0: none
  // When etcd's lease surely expired, unrenewed: the last answer that gave
  // it a TTL (grant or keepalive) plus that TTL (etcd counts from before
  // the answer, so its own expiry is earlier). Past it, the registrations
  // are reported gone while etcd is unreachable.
  std::chrono::steady_clock::time_point lease_valid_until_{};
  bool lease_expired_reported_ = false;
  bool granting_ = false;
  timer::Timeout keepalive_;
  std::map<std::string, Registration> regs_;
  std::map<std::string, std::uint64_t> unreg_retries_;  // key -> pending FailedUnregisteredTask
  // One write (put or delete) per key in flight at a time, so two requests on
  // separate connections can never land in the wrong order; what comes
  // meanwhile waits: a put as Registration::put_again, a delete here.
  std::set<std::string> writing_;
  std::map<std::string, std::vector<DeleteDone>> deferred_deletes_;
  std::uint64_t next_gen_ = 0;
  std::map<SubscriptionId, std::shared_ptr<Subscription>> subs_;
  std::unordered_map<std::uint64_t, timer::Timeout> retries_;  // pending retry tasks by id
  std::uint64_t next_retry_ = 0;
  std::minstd_rand rng_;
};

}  // namespace wheelrpc::registry::detail
