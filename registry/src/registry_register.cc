// Registration and unregistration (Dubbo's FailbackRegistry): a failed put
// becomes a FailedRegisteredTask, a failed delete a FailedUnregisteredTask;
// each supersedes the other's pending retry of the same key.

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

void EtcdRegistryImpl::do_register(ServiceInstance instance, RegistrationListener listener) {
  assert(strand().running_in_this_thread());
  if (closed()) return;
  if (auto reason = instance.invalid_reason(); !reason.empty()) {
    logger()->error("register refused: {}", reason);
    if (listener) listener(make_error_code(boost::system::errc::invalid_argument), "register refused: " + reason);
    return;
  }
  const std::string key = key_of(instance.service, instance.endpoint);
  if (auto it = unreg_retries_.find(key); it != unreg_retries_.end()) {
    SPDLOG_LOGGER_DEBUG(logger(), "register {} supersedes a pending unregister retry", key);
    cancel_retry(it->second);
    unreg_retries_.erase(it);
  }
  if (auto it = deferred_deletes_.find(key); it != deferred_deletes_.end()) {
    // An unregister still waiting for a put to land: superseded, never sent.
    auto dones = std::move(it->second);
    deferred_deletes_.erase(it);
    for (auto& d : dones) {
      if (d) d(boost::asio::error::operation_aborted);
    }
  }
  auto& r = regs_[key];
  cancel_retry(r.retry);
  r.value = instance.to_json();
  r.instance = std::move(instance);
  if (listener) {
    r.listener = std::move(listener);
    r.reported = false;
  }
  r.gen = ++next_gen_;
  logger()->info("register {}", key);
  put_registration(key);
}

void EtcdRegistryImpl::put_registration(const std::string& key) {
  assert(strand().running_in_this_thread());
  auto it = regs_.find(key);
  if (it == regs_.end() || closed()) return;
  auto& r = it->second;
  if (lease_ == 0) {
    ensure_lease();  // every registration is put once the lease is granted
    return;
  }
  if (writing_.contains(key)) {
    r.put_again = true;
    return;
  }
  writing_.insert(key);
  r.put_again = false;
  count_request(false);
  op_put(*client_, key, r.value, lease_,
         [self = shared_from_this(), key, gen = r.gen, lease = lease_](
             error_code ec, const std::string& why, PutResult) { self->on_put(key, gen, lease, ec, why); });
}

void EtcdRegistryImpl::on_put(const std::string& key, std::uint64_t gen, std::int64_t lease, error_code ec,
                              const std::string& why) {
  assert(strand().running_in_this_thread());
  writing_.erase(key);
  if (ec) count_request(true);
  if (closed()) return;
  auto it = regs_.find(key);
  if (it == regs_.end()) {
    after_write(key);  // unregistered while the put was in flight: its delete goes now
    return;
  }
  auto& r = it->second;
  if (lease != lease_ || r.gen != gen || r.put_again) {
    put_registration(key);  // the lease or the value changed meanwhile: put what is in force
    return;
  }
  if (ec) {
    if (ec == errc::etcd_error && why.find("lease not found") != std::string::npos) {
      lease_lost(lease, "put of " + key + " found the lease gone: " + why);
      return;
    }
    registration_failed(key, ec, why.empty() ? ec.message() : why);
    return;
  }
  follow_endpoint();
  const bool was = r.registered;
  r.registered = true;
  update_stats([](RegistryStats& s) { ++s.registrations; });
  if (!was) update_registered_now();
  logger()->info("registered {} (lease {:x})", key, lease);
  report(r, {}, {});
}

void EtcdRegistryImpl::registration_failed(const std::string& key, error_code ec, const std::string& why) {
  assert(strand().running_in_this_thread());
  auto it = regs_.find(key);
  if (it == regs_.end()) return;
  auto& r = it->second;
  if (r.registered) {
    r.registered = false;
    update_registered_now();
  }
  if (r.retry == 0) r.retry = schedule_retry<FailedRegisteredTask>(std::string(key));
  logger()->warn("register {} failed: {}; retry in ~{} ms", key, why, options_.retry_period.count());
  report(r, ec, why);
}

void EtcdRegistryImpl::retry_register(const std::string& key) {
  auto it = regs_.find(key);
  if (it == regs_.end()) return;
  it->second.retry = 0;
  put_registration(key);
}

void EtcdRegistryImpl::report(Registration& r, error_code ec, const std::string& why) {
  if (r.reported && r.last_ec == ec) return;  // only changes are reported
  r.reported = true;
  r.last_ec = ec;
  if (r.listener) {
    auto listener = r.listener;  // the call may post a new register of this key
    listener(ec, why);
  }
}

void EtcdRegistryImpl::do_unregister(const std::string& key, DeleteDone done) {
  assert(strand().running_in_this_thread());
  if (closed()) {
    if (done) done(boost::asio::error::operation_aborted);
    return;
  }
  if (auto it = regs_.find(key); it != regs_.end()) {
    cancel_retry(it->second.retry);  // an unregister supersedes a pending register retry
    regs_.erase(it);
    update_registered_now();
  }
  if (auto it = unreg_retries_.find(key); it != unreg_retries_.end()) {
    cancel_retry(it->second);
    unreg_retries_.erase(it);
  }
  logger()->info("unregister {}", key);
  if (writing_.contains(key)) {
    deferred_deletes_[key].push_back(std::move(done));  // after the write in flight
    return;
  }
  std::vector<DeleteDone> dones;
  dones.push_back(std::move(done));
  send_delete(key, std::move(dones));
}

void EtcdRegistryImpl::send_delete(const std::string& key, std::vector<DeleteDone> dones) {
  assert(!writing_.contains(key));
  writing_.insert(key);
  count_request(false);
  op_delete(
      *client_, key,
      [self = shared_from_this(), key, dones = std::move(dones)](error_code ec, const std::string& why, DeleteResult) {
        self->writing_.erase(key);
        if (ec) {
          self->count_request(true);
          if (!self->closed() && !self->regs_.contains(key) && !self->unreg_retries_.contains(key) &&
              !self->deferred_deletes_.contains(key)) {
            logger()->warn("unregister {} failed: {}; retry in ~{} ms", key, why.empty() ? ec.message() : why,
                           self->options_.retry_period.count());
            self->unreg_retries_[key] = self->schedule_retry<FailedUnregisteredTask>(std::string(key));
          }
        } else {
          self->update_stats([](RegistryStats& s) { ++s.unregistrations; });
          SPDLOG_LOGGER_DEBUG(logger(), "unregistered {}", key);
        }
        for (const auto& d : dones) {
          if (d) d(ec);
        }
        if (!self->closed()) self->after_write(key);
      });
}

void EtcdRegistryImpl::after_write(const std::string& key) {
  assert(!writing_.contains(key));
  if (regs_.contains(key)) {
    put_registration(key);  // registered again while a delete was in flight
    return;
  }
  if (auto it = deferred_deletes_.find(key); it != deferred_deletes_.end()) {
    auto dones = std::move(it->second);
    deferred_deletes_.erase(it);
    send_delete(key, std::move(dones));
  }
}

void EtcdRegistryImpl::retry_unregister(const std::string& key) {
  unreg_retries_.erase(key);
  if (regs_.contains(key)) return;  // registered again meanwhile
  if (writing_.contains(key)) {
    deferred_deletes_[key];  // after the write in flight, without a completion
    return;
  }
  send_delete(key, {});
}

void EtcdRegistryImpl::update_registered_now() {
  std::uint64_t n = 0;
  for (const auto& [key, r] : regs_) n += r.registered ? 1 : 0;
  update_stats([n](RegistryStats& s) { s.registered_now = n; });
}

}  // namespace wheelrpc::registry::detail
