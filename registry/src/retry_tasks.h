#pragma once
// Dubbo's FailbackRegistry retry tasks: a failed registry operation waits on
// the shared HashedWheelTimer to be tried again.

#include <cstdint>
#include <memory>
#include <string>

#include <wheelrpc/registry/registry.h>
#include <wheelrpc/timer/timer_task.h>

namespace wheelrpc::registry::detail {

class EtcdRegistryImpl;

/// A retry of one failed operation, scheduled once on the shared timer
/// (`retry_period` ± 20 % after the failure). When it expires, `run` (on the
/// timer's worker) only posts to the registry's strand; there the registry
/// checks that this retry is still the pending one for its target (an
/// unregister supersedes a register retry of the same key and the reverse; a
/// cancelled retry does nothing) and then `retry` runs. A retry that fails
/// again makes a new task. Holds the registry weakly: a pending retry never
/// keeps a closed registry alive.
///
/// @par Thread Safety
/// `run` is called once, by the timer; `retry` runs on the registry's strand.
class AbstractRetryTask : public timer::TimerTask, public std::enable_shared_from_this<AbstractRetryTask> {
 public:
  /// `id`: the registry's handle of this retry (unique per registry).
  AbstractRetryTask(std::weak_ptr<EtcdRegistryImpl> registry, std::uint64_t id)
      : registry_(std::move(registry)), id_(id) {}

  void run(timer::Timeout& timeout) final;

  std::uint64_t id() const noexcept { return id_; }
  /// A name for logs ("FailedRegisteredTask").
  virtual const char* name() const noexcept = 0;
  /// The retried operation. Only on the registry's strand.
  virtual void retry(EtcdRegistryImpl& registry) = 0;

 private:
  std::weak_ptr<EtcdRegistryImpl> registry_;
  std::uint64_t id_;
};

/// Puts a registration again (its key, with the registration's current value).
class FailedRegisteredTask final : public AbstractRetryTask {
 public:
  FailedRegisteredTask(std::weak_ptr<EtcdRegistryImpl> r, std::uint64_t id, std::string key)
      : AbstractRetryTask(std::move(r), id), key_(std::move(key)) {}
  const char* name() const noexcept override { return "FailedRegisteredTask"; }
  void retry(EtcdRegistryImpl& registry) override;

 private:
  std::string key_;
};

/// Deletes an unregistered key again.
class FailedUnregisteredTask final : public AbstractRetryTask {
 public:
  FailedUnregisteredTask(std::weak_ptr<EtcdRegistryImpl> r, std::uint64_t id, std::string key)
      : AbstractRetryTask(std::move(r), id), key_(std::move(key)) {}
  const char* name() const noexcept override { return "FailedUnregisteredTask"; }
  void retry(EtcdRegistryImpl& registry) override;

 private:
  std::string key_;
};

/// Reads or watches a subscription's prefix again (a full read when none
/// succeeded yet or the watch revision was compacted, else a watch from the
/// last revision seen + 1).
class FailedSubscribedTask final : public AbstractRetryTask {
 public:
  FailedSubscribedTask(std::weak_ptr<EtcdRegistryImpl> r, std::uint64_t id, SubscriptionId sub)
      : AbstractRetryTask(std::move(r), id), sub_(sub) {}
  const char* name() const noexcept override { return "FailedSubscribedTask"; }
  void retry(EtcdRegistryImpl& registry) override;

 private:
  SubscriptionId sub_;
};

/// Dubbo's retry of an unsubscribe. On etcd an unsubscribe only cancels the
/// local watch and cannot fail remotely, so EtcdRegistry never schedules one;
/// the type exists for registries whose unsubscribe talks to the store.
/// Its retry finishes the unsubscribe locally (idempotent).
class FailedUnsubscribedTask final : public AbstractRetryTask {
 public:
  FailedUnsubscribedTask(std::weak_ptr<EtcdRegistryImpl> r, std::uint64_t id, SubscriptionId sub)
      : AbstractRetryTask(std::move(r), id), sub_(sub) {}
  const char* name() const noexcept override { return "FailedUnsubscribedTask"; }
  void retry(EtcdRegistryImpl& registry) override;

 private:
  SubscriptionId sub_;
};

}  // namespace wheelrpc::registry::detail
