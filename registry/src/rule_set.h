#pragma once
// The rules of one service as the registry keeps them: the last good version
// of every key under <root>/<service>/rules/. A version that is not a valid
// rule document (or a key whose name is not a rule name) is refused and the
// key's previous good version stays; a deleted key's rules go. Pure code (no
// I/O, no locks): not thread-safe, used on the registry's strand.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etcd_json.h"
#include "rule_document.h"

namespace wheelrpc::registry::detail {

class RuleSet {
 public:
  /// `prefix`: "<root>/<service>/rules/".
  explicit RuleSet(std::string prefix) : prefix_(std::move(prefix)) {}

  /// A version refused: its key, mod revision and why. Each (key, mod
  /// revision) is reported once, however often it is read again.
  struct Refused {
    std::string key;
    std::int64_t mod_revision = 0;
    std::string why;
  };
  struct Outcome {
    std::vector<Refused> refused;
    std::uint64_t accepted = 0;  ///< new good versions taken
  };

  /// Replaces everything with a full read: keys not in `kvs` go; a key whose
  /// value there is bad keeps its previous good version, if any.
  Outcome reset(const std::vector<KeyValue>& kvs);
  /// Applies the events of one watch response, in order.
  Outcome apply(const std::vector<WatchEvent>& events);

  /// The good versions in force, by key.
  const GoodRules& good() const noexcept { return good_; }
  /// True once, after any change of good() (and before the first take).
  bool take_changed() noexcept { return std::exchange(changed_, false); }

 private:
  void put(GoodRules& into, const KeyValue& kv, Outcome& out);

  std::string prefix_;
  GoodRules good_;
  std::map<std::string, std::int64_t> refused_;  // key -> last refused mod revision
  bool changed_ = true;
};

}  // namespace wheelrpc::registry::detail
