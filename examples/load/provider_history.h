#pragma once
/// ProviderHistory: every provider the load generator's client ever had, with
/// its counters summed over the client's connections to it (a provider that
/// left the set and came back starts a new connection at zero).

#include <string>
#include <vector>

#include <wheelrpc/rpc/client.h>

namespace wheelrpc::examples::load {

/// Thread safety: one thread (the one that runs the load generator).
class ProviderHistory {
 public:
  /// Takes in `client.providers()` as it is now.
  void update(const std::vector<rpc::ProviderStats>& now);
  /// Every provider seen so far, in the order first seen: attempts and
  /// failures summed over its connections, `ready` and `removed` as last seen
  /// (`removed` also once it is no longer listed at all).
  std::vector<rpc::ProviderStats> all() const;

 private:
  struct Entry {
    rpc::ProviderStats last;            // as last seen
    std::uint64_t attempts_before = 0;  // of its earlier connections
    std::uint64_t failures_before = 0;
    bool listed = false;  // in the latest update
  };
  std::vector<Entry> entries_;
};

}  // namespace wheelrpc::examples::load
