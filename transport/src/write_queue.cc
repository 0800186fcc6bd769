#include "write_queue.h"

#include <utility>

#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/errc.h>

namespace wheelrpc::transport::detail {
namespace {

// A written buffer larger than this is given back as soon as its write completes.
constexpr std::size_t kMaxKeptInflightBytes = std::size_t{1} << 20;

const std::size_t kSmallStringCapacity = std::string().capacity();

}  // namespace

std::size_t heap_bytes(const std::string& s) noexcept {
  return s.capacity() > kSmallStringCapacity ? s.capacity() + 1 : 0;
}

template <class Append>
boost::system::error_code WriteQueue::push_any(const Append& append, std::size_t limit, bool& kick) {
  common::LockGuard lock(mu_);
  if (closed_ || refuse_.load(std::memory_order_relaxed)) return make_error_code(errc::closed);
  if (queued_.size() + strand_queued_bytes_.load(std::memory_order_relaxed) >= limit) {
    return make_error_code(errc::write_queue_full);
  }
  append(queued_);
  queued_any_.store(true, std::memory_order_release);
  frames_out_.add();
  if (!writing_) {
    writing_ = true;
    kick = true;
  }
  return {};
}

template <class Append>
boost::system::error_code WriteQueue::push_strand_any(const Append& append, std::size_t limit) {
  if (closed_on_strand() || refuse_.load(std::memory_order_relaxed)) return make_error_code(errc::closed);
  if (strand_queued_.size() >= limit) return make_error_code(errc::write_queue_full);
  append(strand_queued_);
  strand_queued_bytes_.store(strand_queued_.size(), std::memory_order_relaxed);
  strand_capacity_stat_.store(heap_bytes(strand_queued_), std::memory_order_relaxed);
  strand_frames_out_.add();
  return {};
}

boost::system::error_code WriteQueue::push(const Frame& frame, std::size_t limit, bool& kick) {
  return push_any([&](std::string& out) { encode_frame(frame, out); }, limit, kick);
}

boost::system::error_code WriteQueue::push_strand(const Frame& frame, std::size_t limit) {
  return push_strand_any([&](std::string& out) { encode_frame(frame, out); }, limit);
}

boost::system::error_code WriteQueue::push(std::string_view bytes, std::size_t limit, bool& kick) {
  return push_any([&](std::string& out) { out.append(bytes); }, limit, kick);
}

boost::system::error_code WriteQueue::push_strand(std::string_view bytes, std::size_t limit) {
  return push_strand_any([&](std::string& out) { out.append(bytes); }, limit);
}

WriteQueue::Take WriteQueue::take(bool trim_inflight) {
  {
    common::LockGuard lock(mu_);
    if (closed_ || (queued_.empty() && strand_queued_.empty())) {
      writing_ = false;
      return closed_ ? Take::closed : Take::drained;
    }
    // The first write after a quiet spell does not need what the last burst left.
    if (trim_inflight) std::string().swap(inflight_);
    writing_ = true;  // a cycle is under way (strand frames start one without push())
    if (strand_queued_.empty()) {
      std::swap(queued_, inflight_);
      queued_.clear();
    } else {  // the strand's frames first (see strand_queued_)
      std::swap(strand_queued_, inflight_);
      strand_queued_.clear();
      inflight_.append(queued_);
      queued_.clear();
      strand_queued_bytes_.store(0, std::memory_order_relaxed);
      strand_capacity_stat_.store(heap_bytes(strand_queued_), std::memory_order_relaxed);
    }
    queued_any_.store(false, std::memory_order_relaxed);
  }
  inflight_capacity_stat_.store(heap_bytes(inflight_), std::memory_order_relaxed);
  return Take::batch;
}

void WriteQueue::wrote() noexcept {
  // Keep a moderate buffer for the next batch; drop a huge one.
  if (inflight_.capacity() > kMaxKeptInflightBytes) {
    std::string().swap(inflight_);
  } else {
    inflight_.clear();
  }
  inflight_capacity_stat_.store(heap_bytes(inflight_), std::memory_order_relaxed);
}

void WriteQueue::drop_inflight() noexcept {
  std::string().swap(inflight_);
  inflight_capacity_stat_.store(0, std::memory_order_relaxed);
}

bool WriteQueue::has_at_least(std::size_t min_bytes) const {
  const std::size_t mine = strand_queued_.size();
  if (mine != 0 && mine >= min_bytes) return true;
  // What others queued may make up the rest.
  common::LockGuard lock(mu_);
  const std::size_t all = queued_.size() + mine;
  return all != 0 && all >= min_bytes;
}

void WriteQueue::refuse() {
  common::LockGuard lock(mu_);
  refuse_.store(true, std::memory_order_relaxed);
}

bool WriteQueue::idle() const {
  common::LockGuard lock(mu_);
  return !writing_ && queued_.empty() && strand_queued_.empty();
}

void WriteQueue::close() {
  {
    common::LockGuard lock(mu_);
    closed_ = true;
    std::string().swap(queued_);
    queued_any_.store(false, std::memory_order_relaxed);
  }
  std::string().swap(strand_queued_);
  strand_queued_bytes_.store(0, std::memory_order_relaxed);
  strand_capacity_stat_.store(0, std::memory_order_relaxed);
}

void WriteQueue::trim_idle() {
  constexpr std::size_t kept = Channel::kKeptWriteBytes;
  common::LockGuard lock(mu_);
  if (writing_) return;  // a write cycle is under way: inflight_ is not ours to touch
  if (queued_.empty() && heap_bytes(queued_) > kept) std::string().swap(queued_);
  if (strand_queued_.empty() && heap_bytes(strand_queued_) > kept) std::string().swap(strand_queued_);
  strand_capacity_stat_.store(heap_bytes(strand_queued_), std::memory_order_relaxed);
  if (heap_bytes(inflight_) > kept) std::string().swap(inflight_);
  inflight_capacity_stat_.store(heap_bytes(inflight_), std::memory_order_relaxed);
}

std::size_t WriteQueue::queued_bytes() const {
  common::LockGuard lock(mu_);
  return queued_.size() + strand_queued_bytes_.load(std::memory_order_relaxed);
}

std::size_t WriteQueue::heap_capacity() const {
  std::size_t queued = 0;
  {
    common::LockGuard lock(mu_);
    queued = heap_bytes(queued_);
  }
  return queued + strand_capacity_stat_.load(std::memory_order_relaxed) +
         inflight_capacity_stat_.load(std::memory_order_relaxed);
}

}  // namespace wheelrpc::transport::detail
