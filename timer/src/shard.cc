#include "shard.h"

namespace wheelrpc::timer::detail {

std::uint32_t Shard::add(const TaskBox& box, std::uint64_t d, std::uint32_t& gen) noexcept {
  if (stopped_) return kNil;
  const std::uint32_t i = pool_.allocate();
  if (i == kNil) return kNil;
  Node& n = pool_[i];
  n.task = box;
  gen = gen_of(n.tag);
  n.tag = (n.tag & ~kStateMask) | kPending;
  if (d >= wheel_.elapsed() + kFarTicks) [[unlikely]] {
    try {
      far_[i] = d;
    } catch (...) {
      n.tag &= ~kStateMask;  // back to free, same generation
      pool_.release(i);
      return kNil;
    }
    n.tag = (n.tag & ~kStateMask) | kPendingFar;
    d = wheel_.elapsed() + kHopTicks;
  }
  wheel_.insert(pool_, i, d);
  scheduled.add();
  pending.add();
  return i;
}

void Shard::free_record_locked(std::uint32_t i, bool was_cancelled) noexcept {
  Node& n = pool_[i];
  const std::uint32_t next_gen = (gen_of(n.tag) + 1) & kGenMask;
  n.tag = (next_gen << kGenShift) | (was_cancelled ? kLastCancelledBit : 0) | kFree;
  n.task.ops = nullptr;
  pool_.release(i);
}

bool Shard::cancel(std::uint32_t i, std::uint32_t gen, TaskBox& out) noexcept {
  Node& n = pool_[i];
  if (gen_of(n.tag) != gen) return false;
  switch (state_of(n.tag)) {
    case kPendingFar: far_.erase(i); [[fallthrough]];
    case kPending:
      wheel_.unlink(pool_, i);
      pending.sub();
      break;
    case kUnprocessed: break;
    default:  // firing: the task runs or ran
      return false;
  }
  cancelled.add();
  out = n.task;
  free_record_locked(i, true);
  return true;
}

void Shard::finish(std::uint32_t i, TaskBox& out) noexcept {
  out = pool_[i].task;
  free_record_locked(i, false);
}

void Shard::fire_locked(std::uint32_t i, std::uint64_t d, std::vector<Fired>& out) {
  Node& n = pool_[i];
  n.tag = (n.tag & ~kStateMask) | kFiring;
  out.push_back({id_, i, gen_of(n.tag), d});
  expired.add();
  pending.sub();
}

// A far record reached its hop: place it for real if its deadline is now in
// range, else hop again.
void Shard::reach_hop_locked(std::uint32_t i) noexcept {
  auto it = far_.find(i);
  const std::uint64_t d = it->second;
  Node& n = pool_[i];
  if (d < wheel_.elapsed() + kFarTicks) {
    far_.erase(it);
    n.tag = (n.tag & ~kStateMask) | kPending;
    wheel_.insert(pool_, i, d);
  } else {
    wheel_.insert(pool_, i, wheel_.elapsed() + kHopTicks);
  }
}

void Shard::advance(std::uint64_t now, std::vector<Fired>& out) {
  std::uint32_t chain;
  unsigned level;
  while (wheel_.take_next(pool_, now, chain, level)) {
    const bool due = level == 0 || level == Wheel::kDueLevel;
    while (chain != kNil) {
      const std::uint32_t i = chain;
      Node& n = pool_[i];
      chain = n.link.next;
      if (!due) {
        wheel_.insert(pool_, i, wheel_.deadline_ahead(n.deadline));  // cascade down
      } else if (state_of(n.tag) == kPendingFar) {
        reach_hop_locked(i);
      } else {
        fire_locked(i, wheel_.deadline_behind(n.deadline), out);
      }
    }
  }
  wheel_.advance_to(now);
}

void Shard::stop(std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) {
  stopped_ = true;
  out.reserve(out.size() + pending.load());
  NodePool* pool = &pool_;  // the lambda runs under the lock too (the analysis does not see into it)
  wheel_.drain(pool_, [&](std::uint32_t i) {
    Node& n = (*pool)[i];
    n.tag = (n.tag & ~kStateMask) | kUnprocessed;
    out.emplace_back(i, gen_of(n.tag));
  });
  far_.clear();
  pending.sub(pending.load());
}

}  // namespace wheelrpc::timer::detail
