#include "wheel.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace wheelrpc::timer::detail {

Wheel::Wheel(unsigned slot_bits)
    : bits_(slot_bits),
      // Deadlines stay below 2^62 ticks, so bit groups up to bit 61 suffice.
      levels_(61 / slot_bits + 1),
      words_per_level_(std::max(1u, (1u << slot_bits) / 64)),
      heads_((std::size_t{levels_} << slot_bits) + 1),
      words_(std::size_t{levels_} * words_per_level_),
      summary_(levels_) {
  assert(slot_bits >= 1 && slot_bits <= 12);
  for (unsigned b = 0; b < 64; ++b) level_of_bit_[b] = static_cast<std::uint8_t>(b / slot_bits);
  for (std::uint32_t h = 0; h < heads_.size(); ++h) heads_[h] = {h | kHeadBit, h | kHeadBit};
}

void Wheel::set_bit(unsigned level, unsigned slot) noexcept {
  const unsigned w = slot >> 6;
  words_[level * words_per_level_ + w] |= std::uint64_t{1} << (slot & 63);
  summary_[level] |= std::uint64_t{1} << w;
  level_mask_ |= std::uint64_t{1} << level;
}

void Wheel::clear_bit(unsigned level, unsigned slot) noexcept {
  const unsigned w = slot >> 6;
  std::uint64_t& word = words_[level * words_per_level_ + w];
  word &= ~(std::uint64_t{1} << (slot & 63));
  if (word == 0) {
    summary_[level] &= ~(std::uint64_t{1} << w);
    if (summary_[level] == 0) level_mask_ &= ~(std::uint64_t{1} << level);
  }
}

int Wheel::find_from(unsigned level, unsigned from) const noexcept {
  const std::uint64_t* words = &words_[level * words_per_level_];
  const unsigned w = from >> 6;
  if (const std::uint64_t bits = words[w] & (~std::uint64_t{0} << (from & 63))) {
    return static_cast<int>(w * 64 + std::countr_zero(bits));
  }
  const std::uint64_t rest = w + 1 < 64 ? summary_[level] & (~std::uint64_t{0} << (w + 1)) : 0;
  if (rest == 0) return -1;
  const unsigned w2 = static_cast<unsigned>(std::countr_zero(rest));
  return static_cast<int>(w2 * 64 + std::countr_zero(words[w2]));
}

std::uint64_t Wheel::slot_time(unsigned level, unsigned slot) const noexcept {
  const unsigned above = (level + 1) * bits_;
  const std::uint64_t prefix = above >= 64 ? 0 : elapsed_ & ~((std::uint64_t{1} << above) - 1);
  return prefix | (std::uint64_t{slot} << (level * bits_));
}

void Wheel::insert(NodePool& pool, std::uint32_t i, std::uint64_t d) noexcept {
  Node& n = pool[i];
  n.deadline = static_cast<std::uint32_t>(d);
  std::uint32_t h;
  if (d <= elapsed_) {
    h = due_head();
  } else {
    const std::uint64_t masked = (d ^ elapsed_) | (slots_per_level() - 1);
    const unsigned level = level_of_bit_[std::bit_width(masked) - 1];
    const unsigned slot = digit(d, level);
    h = (level << bits_) | slot;
    set_bit(level, slot);
  }
  // Append at the tail: records of one slot fire in the order they were added.
  Link& head = heads_[h];
  n.link.next = h | kHeadBit;
  n.link.prev = head.prev;
  link(pool, head.prev).next = i;
  head.prev = i;
}

void Wheel::unlink(NodePool& pool, std::uint32_t i) noexcept {
  const Link l = pool[i].link;
  link(pool, l.prev).next = l.next;
  link(pool, l.next).prev = l.prev;
  // Both neighbours are the same head only when the list just became empty.
  if (l.prev == l.next && (l.prev & kHeadBit)) {
    const std::uint32_t h = l.prev & ~kHeadBit;
    if (h != due_head()) clear_bit(h >> bits_, h & (slots_per_level() - 1));
  }
}

std::uint64_t Wheel::next_event() const noexcept {
  if (!due_empty()) return elapsed_;
  if (level_mask_ == 0) return kNever;
  const unsigned level = static_cast<unsigned>(std::countr_zero(level_mask_));
  int slot = find_from(level, digit(elapsed_, level));
  assert(slot >= 0 && "occupied slots always lie ahead of elapsed");
  if (slot < 0) slot = find_from(level, 0);
  return slot_time(level, static_cast<unsigned>(slot));
}

bool Wheel::take_next(NodePool& pool, std::uint64_t now, std::uint32_t& chain, unsigned& level) noexcept {
  std::uint32_t h;
  if (!due_empty()) {
    h = due_head();
    level = kDueLevel;
  } else {
    if (level_mask_ == 0) return false;
    level = static_cast<unsigned>(std::countr_zero(level_mask_));
    int slot = find_from(level, digit(elapsed_, level));
    if (slot < 0) slot = find_from(level, 0);
    const std::uint64_t t = slot_time(level, static_cast<unsigned>(slot));
    if (t > now) return false;
    elapsed_ = std::max(elapsed_, t);
    h = (level << bits_) | static_cast<unsigned>(slot);
    clear_bit(level, static_cast<unsigned>(slot));
  }
  Link& head = heads_[h];
  chain = head.next;
  pool[head.prev].link.next = kNil;
  head = {h | kHeadBit, h | kHeadBit};
  return true;
}

}  // namespace wheelrpc::timer::detail
