#include "load/provider_history.h"

#include <algorithm>

namespace wheelrpc::examples::load {

void ProviderHistory::update(const std::vector<rpc::ProviderStats>& now) {
  for (auto& e : entries_) e.listed = false;
  for (const auto& p : now) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.last.peer == p.peer; });
    if (it == entries_.end()) {
      entries_.push_back(Entry{p, 0, 0, true});
      continue;
    }
    // Counters of one connection only grow: fewer means a new connection.
    if (p.attempts < it->last.attempts || p.failures < it->last.failures) {
      it->attempts_before += it->last.attempts;
      it->failures_before += it->last.failures;
    }
    it->last = p;
    it->listed = true;
  }
}

std::vector<rpc::ProviderStats> ProviderHistory::all() const {
  std::vector<rpc::ProviderStats> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) {
    rpc::ProviderStats p = e.last;
    p.attempts += e.attempts_before;
    p.failures += e.failures_before;
    if (!e.listed) {
      p.removed = true;
      p.ready = false;
      p.active = 0;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace wheelrpc::examples::load
