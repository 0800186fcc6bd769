#include "server/health_registry.h"

#include <utility>

#include "server/health_watch_stream.h"

namespace wheelrpc::rpc::detail {

HealthRegistry::HealthRegistry(std::function<bool()> serving) : serving_probe_(std::move(serving)) {}

std::string_view HealthRegistry::service_of(std::string_view path) noexcept {
  if (path.size() < 4 || path.front() != '/') return {};
  const auto slash = path.find('/', 1);
  if (slash == std::string_view::npos || slash == 1 || slash + 1 == path.size()) return {};
  if (path.find('/', slash + 1) != std::string_view::npos) return {};
  return path.substr(1, slash - 1);
}

ServingStatus HealthRegistry::status_locked(std::string_view service) const {
  const auto set = set_.find(service);
  if (!service.empty() && set == set_.end() && registered_.find(service) == registered_.end()) {
    return ServingStatus::service_unknown;
  }
  // The server's own state first: a server that does not serve serves no service.
  if (!serving_) return ServingStatus::not_serving;
  return set != set_.end() ? set->second : ServingStatus::serving;
}

void HealthRegistry::offer_locked(const std::string* service, std::vector<std::shared_ptr<HealthWatchStream>>& kick) {
  for (const auto& [key, watch] : watches_) {
    if (service && watch->service() != *service) continue;
    if (watch->offer(status_locked(watch->service()))) kick.push_back(watch);
  }
}

// Outside the lock: each posts to its stream's executor.
void HealthRegistry::start(std::vector<std::shared_ptr<HealthWatchStream>>& kick) {
  for (auto& watch : kick) watch->post_step();
}

void HealthRegistry::set(std::string_view service, ServingStatus status) {
  if (status == ServingStatus::service_unknown) return clear(service);
  std::vector<std::shared_ptr<HealthWatchStream>> kick;
  {
    common::LockGuard lock(mu_);
    const std::string name(service);
    set_[name] = status;
    offer_locked(&name, kick);
  }
  start(kick);
}

void HealthRegistry::clear(std::string_view service) {
  std::vector<std::shared_ptr<HealthWatchStream>> kick;
  {
    common::LockGuard lock(mu_);
    const auto it = set_.find(service);
    if (it == set_.end()) return;
    set_.erase(it);
    const std::string name(service);
    offer_locked(&name, kick);
  }
  start(kick);
}

ServingStatus HealthRegistry::status(std::string_view service) const {
  common::LockGuard lock(mu_);
  return status_locked(service);
}

std::vector<std::string> HealthRegistry::services() const {
  std::set<std::string, std::less<>> all{""};
  {
    common::LockGuard lock(mu_);
    all.insert(registered_.begin(), registered_.end());
    for (const auto& [name, status] : set_) all.insert(name);
  }
  return {all.begin(), all.end()};
}

void HealthRegistry::set_registered(const std::vector<std::string>& method_paths) {
  std::vector<std::shared_ptr<HealthWatchStream>> kick;
  {
    common::LockGuard lock(mu_);
    for (const auto& path : method_paths) {
      const auto service = service_of(path);
      if (!service.empty()) registered_.emplace(service);
    }
    offer_locked(nullptr, kick);
  }
  start(kick);
}

void HealthRegistry::server_changed() {
  std::vector<std::shared_ptr<HealthWatchStream>> kick;
  {
    // Read under the lock: of two changes racing, the one that takes it last
    // reads both, so the last status offered is the server's state now.
    common::LockGuard lock(mu_);
    if (stopped_) return;
    serving_ = serving_probe_();
    offer_locked(nullptr, kick);
  }
  start(kick);
}

void HealthRegistry::drain() {
  std::vector<std::shared_ptr<HealthWatchStream>> kick;
  {
    common::LockGuard lock(mu_);
    if (draining_ || stopped_) return;
    draining_ = true;
    for (const auto& [key, watch] : watches_) {
      if (watch->close()) kick.push_back(watch);
    }
  }
  start(kick);
}

void HealthRegistry::stop() {
  std::unordered_map<const HealthWatchStream*, std::shared_ptr<HealthWatchStream>> watches;
  {
    common::LockGuard lock(mu_);
    stopped_ = true;
    serving_ = false;
    watches.swap(watches_);
  }
  // Let go of outside the lock: a watch's stream (ended by the stop) goes with it.
}

bool HealthRegistry::add(const std::shared_ptr<HealthWatchStream>& watch) {
  std::vector<std::shared_ptr<HealthWatchStream>> kick;
  {
    common::LockGuard lock(mu_);
    if (stopped_) return false;
    // A stream that ended before it got here was forgotten already (remove()
    // came first): not added. One that ends later is removed after this.
    if (!watch->offer(status_locked(watch->service()))) return true;
    watches_[watch.get()] = watch;
    kick.push_back(watch);
    if (draining_) watch->close();  // its first step writes, then finishes
  }
  start(kick);
  return true;
}

void HealthRegistry::remove(const HealthWatchStream* watch) {
  std::shared_ptr<HealthWatchStream> gone;
  {
    common::LockGuard lock(mu_);
    const auto it = watches_.find(watch);
    if (it == watches_.end()) return;
    gone = std::move(it->second);
    watches_.erase(it);
  }
}

}  // namespace wheelrpc::rpc::detail
