#include "read_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace wheelrpc::transport::detail {

ReadBuffer::ReadBuffer(std::size_t max_kept) noexcept : max_kept_(std::max(max_kept, kInlineBytes)) {}

void ReadBuffer::prepare(std::size_t needed) {
  const std::size_t have = end_ - begin_;
  // What the next read wants room for: the kept buffer of a busy channel, and
  // the rest of a partial frame. The decoder has checked the frame's size
  // against max_body already; the buffer grows with what has arrived (at most
  // doubling), so a header alone cannot make us allocate its whole body.
  std::size_t want = busy_bytes_;
  if (needed > have) {
    want = std::max(want, std::min(needed, std::max(2 * have, max_kept_)));
  }
  const std::uint8_t* from = data() + begin_;
  if (busy_bytes_ == 0 && want <= kInlineBytes) {
    if (heap_) {
      std::memcpy(inline_, from, have);
      heap_.reset();
      heap_capacity_ = 0;
    } else if (begin_ > 0) {
      std::memmove(inline_, from, have);
    }
  } else if (!heap_ || heap_capacity_ < want || heap_capacity_ > std::max(want, max_kept_)) {
    // Grow, move off the inline bytes, or give back what a large frame needed.
    auto buf = std::make_unique_for_overwrite<std::uint8_t[]>(want);
    std::memcpy(buf.get(), from, have);
    heap_ = std::move(buf);
    heap_capacity_ = want;
  } else if (begin_ > 0) {
    std::memmove(heap_.get(), from, have);
  }
  begin_ = 0;
  end_ = have;
  capacity_stat_.store(heap_capacity_, std::memory_order_relaxed);
  pending_stat_.store(have, std::memory_order_relaxed);
}

void ReadBuffer::release() noexcept {
  heap_.reset();
  heap_capacity_ = 0;
  begin_ = end_ = 0;
  busy_bytes_ = 0;
  capacity_stat_.store(0, std::memory_order_relaxed);
  pending_stat_.store(0, std::memory_order_relaxed);
}

}  // namespace wheelrpc::transport::detail
