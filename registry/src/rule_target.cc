#include "rule_target.h"

#include <spdlog/spdlog.h>

#include "log.h"

namespace wheelrpc::registry::detail {

TargetCounts RuleTarget::counts(const RuleSet::Outcome& outcome) {
  for (const auto& r : outcome.refused) {
    logger()->warn("rule {} rev {} refused: {}", r.key, r.mod_revision, r.why);
  }
  return {.rules_accepted = outcome.accepted, .rules_refused = outcome.refused.size()};
}

void RuleTarget::deliver(std::int64_t revision) {
  if (!set_.take_changed()) return;
  SPDLOG_LOGGER_DEBUG(logger(), "rules: {} document(s) in force at revision {}", set_.good().size(), revision);
  auto deliver = deliver_;  // it may unsubscribe (posted) from inside
  deliver(set_.good(), revision);
}

}  // namespace wheelrpc::registry::detail
