// The registry's one lease: granted lazily on the first registration, renewed
// by LeaseKeepAliveTimerTask every ttl / 3, replaced by a new lease (never
// the old ID) when a keepalive finds it gone, and every registration re-put.

#include <algorithm>
#include <cassert>

#include <spdlog/spdlog.h>

#include <wheelrpc/registry/errc.h>

#include "etcd_ops.h"
#include "etcd_registry.h"
#include "lease_keepalive_timer_task.h"
#include "log.h"

namespace wheelrpc::registry::detail {
using boost::system::error_code;

namespace {

// After a failed keepalive (etcd unreachable) the next try comes this soon,
// well inside the TTL, so that a short outage does not cost the lease.
std::chrono::milliseconds keepalive_retry_delay(std::chrono::seconds ttl) {
  const auto tenth = std::chrono::duration_cast<std::chrono::milliseconds>(ttl) / 10;
  return std::clamp(tenth, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
}

}  // namespace

void EtcdRegistryImpl::set_lease(std::int64_t id) {
  lease_ = id;
  lease_public_.store(id, std::memory_order_release);
}

void EtcdRegistryImpl::ensure_lease() {
  assert(strand().running_in_this_thread());
  if (granting_ || lease_ != 0 || closed()) return;
  granting_ = true;
  count_request(false);
  op_grant(*client_, options_.lease_ttl,
           [self = shared_from_this()](error_code ec, const std::string& why, LeaseGrantResult r) {
             self->on_granted(ec, why, r.id);
           });
}

void EtcdRegistryImpl::on_granted(error_code ec, const std::string& why, std::int64_t id) {
  assert(strand().running_in_this_thread());
  granting_ = false;
  if (closed()) {
    if (!ec && id != 0) client_->lease_revoke(id, [](error_code) {});  // granted too late: give it back
    return;
  }
  if (!ec && id == 0) {
    ec = make_error_code(errc::bad_response);
  }
  if (ec) {
    count_request(true);
    const std::string detail = "lease grant failed: " + (why.empty() ? ec.message() : why);
    logger()->warn("{}; {} registration(s) wait for a retry", detail, regs_.size());
    for (auto& [key, r] : regs_) {
      if (!r.registered && !writing_.contains(key) && r.retry == 0) registration_failed(key, ec, detail);
    }
    return;
  }
  set_lease(id);
  lease_valid_until_ = std::chrono::steady_clock::now() + options_.lease_ttl;
  lease_expired_reported_ = false;
  update_stats([](RegistryStats& s) { ++s.lease_grants; });
  logger()->info("lease {:x} granted, ttl {} s; putting {} registration(s)", id, options_.lease_ttl.count(),
                 regs_.size());
  schedule_keepalive(id, std::chrono::duration_cast<std::chrono::nanoseconds>(options_.lease_ttl) / 3);
  for (auto& [key, r] : regs_) {
    cancel_retry(r.retry);
    r.registered = false;
  }
  for (auto& [key, r] : regs_) put_registration(key);
}

void EtcdRegistryImpl::schedule_keepalive(std::int64_t lease, std::chrono::nanoseconds delay) {
  assert(strand().running_in_this_thread());
  if (closed() || lease != lease_) return;
  keepalive_.cancel();
  std::error_code ec;
  keepalive_ = client_->timer().new_timeout(
      std::shared_ptr<timer::TimerTask>(std::make_shared<LeaseKeepAliveTimerTask>(weak_from_this(), lease)), delay, ec);
  if (ec) logger()->error("lease {:x}: keepalive not scheduled: {}", lease, ec.message());
}

void EtcdRegistryImpl::send_keepalive(std::int64_t lease) {
  assert(strand().running_in_this_thread());
  if (closed() || lease != lease_) return;
  count_request(false);
  op_keepalive(*client_, lease,
               [self = shared_from_this(), lease](error_code ec, const std::string& why, KeepAliveResult r) {
                 self->on_keepalive(lease, ec, why, r.ttl);
               });
}

void EtcdRegistryImpl::on_keepalive(std::int64_t lease, error_code ec, const std::string& why,
                                    std::chrono::seconds ttl) {
  assert(strand().running_in_this_thread());
  if (closed() || lease != lease_) return;
  if (ec) {
    count_request(true);
    const auto delay = keepalive_retry_delay(options_.lease_ttl);
    logger()->warn("lease {:x}: keepalive failed ({}); again in {} ms", lease, why.empty() ? ec.message() : why,
                   delay.count());
    // Unrenewed past its TTL, the lease is gone at etcd and our keys with it:
    // say so now rather than once etcd answers again (which then grants a
    // new lease and puts them again).
    if (!lease_expired_reported_ && std::chrono::steady_clock::now() >= lease_valid_until_) {
      lease_expired_reported_ = true;
      const std::string gone =
          fmt::format("lease {:x} expired while etcd was unreachable ({})", lease, why.empty() ? ec.message() : why);
      // The count first: a listener told of the loss may read the stats at once.
      std::vector<Registration*> lost;
      for (auto& [key, r] : regs_) {
        if (r.registered) {
          r.registered = false;
          lost.push_back(&r);
        }
      }
      update_registered_now();
      for (auto* r : lost) report(*r, make_error_code(errc::unavailable), gone);
    }
    schedule_keepalive(lease, delay);
    return;
  }
  if (ttl.count() <= 0) {
    lease_lost(lease, "lease " + fmt::format("{:x}", lease) + " is gone (keepalive answered without a TTL)");
    return;
  }
  update_stats([](RegistryStats& s) { ++s.lease_renewals; });
  lease_valid_until_ = std::chrono::steady_clock::now() + ttl;
  if (lease_expired_reported_) {
    // etcd had not yet revoked it (it does so lazily): put the keys reported
    // gone again, under the same lease.
    lease_expired_reported_ = false;
    for (auto& [key, r] : regs_) {
      if (!r.registered && !writing_.contains(key) && r.retry == 0) put_registration(key);
    }
  }
  follow_endpoint();
  SPDLOG_LOGGER_DEBUG(logger(), "lease {:x} renewed, ttl {} s", lease, ttl.count());
  schedule_keepalive(lease, std::chrono::duration_cast<std::chrono::nanoseconds>(options_.lease_ttl) / 3);
}

void EtcdRegistryImpl::lease_lost(std::int64_t lease, const std::string& why) {
  assert(strand().running_in_this_thread());
  if (closed() || lease != lease_) return;
  logger()->warn("{}: granting a new lease and putting {} registration(s) again", why, regs_.size());
  update_stats([](RegistryStats& s) { ++s.lease_losses; });
  keepalive_.cancel();
  set_lease(0);
  std::vector<Registration*> lost;  // the count first, as above
  for (auto& [key, r] : regs_) {
    if (r.registered) {
      r.registered = false;
      lost.push_back(&r);
    }
  }
  update_registered_now();
  for (auto* r : lost) report(*r, make_error_code(errc::etcd_error), why);
  ensure_lease();
}

}  // namespace wheelrpc::registry::detail
