#pragma once
/// EtcdScan: what `wheelctl registry` reads from etcd beside the registry
/// client: the keys under a prefix (to find every service, and each key's
/// lease) and a lease's time to live, and `wheelctl rules`' puts and
/// deletes, over etcd v3's HTTP/JSON gateway.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wheelrpc::wheelctl {

/// One key of a range read.
struct EtcdKey {
  std::string key;
  std::string value;
  std::int64_t lease = 0;  ///< 0: none
  std::int64_t mod_revision = 0;
};

/// A lease's time to live.
struct EtcdLease {
  std::int64_t ttl_s = -1;     ///< seconds left; -1: the lease is gone
  std::int64_t granted_s = 0;  ///< the TTL it was granted with
};

/// Blocking requests to the first endpoint of a list ("etcd://h1:p1,h2:p2",
/// scheme optional) that answers, each bounded by `timeout` (resolve,
/// connect, request and answer together). One thread per object.
class EtcdScan {
 public:
  /// Throws std::invalid_argument for a malformed list.
  EtcdScan(const std::string& endpoints, std::chrono::milliseconds timeout);

  /// Every key under `prefix`; the problem ("etcd at 127.0.0.1:2379: ...") on failure.
  std::optional<std::string> range(const std::string& prefix, std::vector<EtcdKey>& out);
  /// The lease `id`'s time to live.
  std::optional<std::string> lease(std::int64_t id, EtcdLease& out);
  /// Puts `key` = `value` (no lease); `revision`: the key's new mod revision.
  std::optional<std::string> put(const std::string& key, const std::string& value, std::int64_t& revision);
  /// Deletes `key`; `deleted`: the number of keys deleted (0 or 1).
  std::optional<std::string> remove(const std::string& key, std::int64_t& deleted);

 private:
  std::optional<std::string> post(const std::string& target, const std::string& body, std::string& answer);

  std::vector<std::pair<std::string, std::string>> endpoints_;  // host, port
  std::chrono::milliseconds timeout_;
};

/// Standard base64 with padding (etcd's keys and values on the gateway).
std::string base64_encode(const std::string& bytes);
/// nullopt if `text` is not base64.
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace wheelrpc::wheelctl
