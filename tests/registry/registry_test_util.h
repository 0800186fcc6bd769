#pragma once
// Shared by the EtcdRegistry tests: a recorder of the sets a listener hears,
// a recorder of registration states, and an etcd client for checks made
// behind the registry's back.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <wheelrpc/registry/etcd_registry.h>

#include "etcd_client.h"
#include "registry/etcd_test_util.h"
#include "support/etcd_cluster.h"
#include "support/wait.h"

namespace wheelrpc::test {

#define REQUIRE_ETCD() \
  if (!::wheelrpc::test::EtcdCluster::available()) GTEST_SKIP() << "no /usr/bin/etcd (scripts/install_deps.sh)"

/// Every set a ProviderListener heard, in order. Shared with the listener
/// (it may run on the io thread after the test body returns).
struct SetLog {
  std::mutex mu;
  std::vector<std::vector<registry::ServiceInstance>> sets;

  static std::shared_ptr<SetLog> make() { return std::make_shared<SetLog>(); }
  static registry::ProviderListener listener(const std::shared_ptr<SetLog>& log) {
    return [log](const std::vector<registry::ServiceInstance>& s) {
      std::lock_guard l(log->mu);
      log->sets.push_back(s);
    };
  }
  std::size_t calls() {
    std::lock_guard l(mu);
    return sets.size();
  }
  /// Endpoints of the last set; nullopt before the first call.
  std::optional<std::vector<std::string>> last() {
    std::lock_guard l(mu);
    if (sets.empty()) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& i : sets.back()) out.push_back(i.endpoint);
    return out;
  }
  bool last_is(const std::vector<std::string>& endpoints) { return last() == endpoints; }
  /// True if no two consecutive calls had the same set.
  bool only_changes() {
    std::lock_guard l(mu);
    for (std::size_t i = 1; i < sets.size(); ++i) {
      if (sets[i] == sets[i - 1]) return false;
    }
    return true;
  }
};

/// Every state a RegistrationListener heard.
struct StateLog {
  std::mutex mu;
  std::vector<std::pair<boost::system::error_code, std::string>> states;

  static registry::RegistrationListener listener(const std::shared_ptr<StateLog>& log) {
    return [log](boost::system::error_code ec, const std::string& why) {
      std::lock_guard l(log->mu);
      log->states.emplace_back(ec, why);
    };
  }
  std::size_t failures() {
    std::lock_guard l(mu);
    std::size_t n = 0;
    for (const auto& s : states) n += s.first ? 1 : 0;
    return n;
  }
  bool registered() {
    std::lock_guard l(mu);
    return !states.empty() && !states.back().first;
  }
};

inline std::vector<registry::detail::EtcdEndpoint> parse_endpoints(const std::string& list) {
  boost::system::error_code ec;
  std::string why;
  return registry::detail::parse_etcd_endpoints(list, ec, why);
}

/// A direct etcd client for the test's own reads and writes.
inline std::shared_ptr<registry::detail::EtcdClient> direct_client(IoThread& io, const std::string& endpoints) {
  return registry::detail::EtcdClient::create(io.io.get_executor(), io.timer, parse_endpoints(endpoints));
}

/// Keys under `prefix` (with their leases), or nullopt when the read failed.
inline std::optional<std::vector<registry::detail::KeyValue>> read_keys(registry::detail::EtcdClient& c,
                                                                        const std::string& prefix) {
  auto [ec, r] = await<registry::detail::RangeResult>([&](auto h) { c.range_prefix(prefix, h); });
  if (ec) return std::nullopt;
  return r.kvs;
}

inline registry::EtcdRegistryOptions fast_options() {
  registry::EtcdRegistryOptions o;
  o.lease_ttl = std::chrono::seconds(2);
  o.retry_period = std::chrono::milliseconds(200);
  o.request_timeout = std::chrono::milliseconds(1000);
  return o;
}

inline registry::ServiceInstance instance(const std::string& service, const std::string& endpoint) {
  registry::ServiceInstance i;
  i.service = service;
  i.endpoint = endpoint;
  return i;
}

// A loopback port nothing listens on (probed, then released).
inline std::string unused_address() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return "127.0.0.1:" + std::to_string(a.local_endpoint().port());
}

}  // namespace wheelrpc::test
