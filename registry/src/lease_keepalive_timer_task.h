#pragma once
// LeaseKeepAliveTimerTask: renews the registry's lease on the shared timer.

#include <cstdint>
#include <memory>

#include <wheelrpc/timer/timer_task.h>

namespace wheelrpc::registry::detail {

class EtcdRegistryImpl;

/// One renewal of lease `lease_id`, scheduled every lease_ttl / 3 (sooner
/// after a failed keepalive). `run` (on the timer's worker) only posts to the
/// registry's strand, where the keepalive is sent unless the lease is no
/// longer the one in force (lost, re-granted, revoked by close()); its
/// answer schedules the next task. Holds the registry weakly.
///
/// @par Thread Safety
/// `run` is called once, by the timer.
class LeaseKeepAliveTimerTask final : public timer::TimerTask {
 public:
  LeaseKeepAliveTimerTask(std::weak_ptr<EtcdRegistryImpl> registry, std::int64_t lease_id)
      : registry_(std::move(registry)), lease_id_(lease_id) {}

  void run(timer::Timeout& timeout) override;
  std::int64_t lease_id() const noexcept { return lease_id_; }

 private:
  std::weak_ptr<EtcdRegistryImpl> registry_;
  std::int64_t lease_id_;
};

}  // namespace wheelrpc::registry::detail
