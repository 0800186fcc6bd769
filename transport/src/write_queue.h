#pragma once
// A channel's write side without the I/O: the frames any thread queues (under
// the lock), the frames the channel's own handler queues on the strand
// (without it), the batch in flight, and the write-side figures other threads
// read. The channel takes a batch (take), writes inflight() to its socket and
// reports what went out (note_written, wrote).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/single_writer_counter.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::transport::detail {

/// Heap bytes behind a string: 0 while it fits in its small-string buffer.
std::size_t heap_bytes(const std::string& s) noexcept;

class WriteQueue {
 public:
  /// `held`: a write cycle counts as under way from the start, so frames
  /// wait for the channel's first take (a TLS channel: after its handshake).
  explicit WriteQueue(bool held) noexcept : writing_(held) {}

  /// Encodes `frame` into the queue (any thread). Fails with errc::closed or
  /// errc::write_queue_full (over `limit` bytes; nothing queued). Sets `kick`
  /// when no write cycle was under way: the caller starts one.
  boost::system::error_code push(const Frame& frame, std::size_t limit, bool& kick) WHEELRPC_EXCLUDES(mu_);
  /// True while nothing pushed by push() waits: the channel's handler may
  /// then queue on the strand without the lock (push_strand).
  bool strand_path_open() const noexcept { return !queued_any_.load(std::memory_order_acquire); }
  /// push() for the channel's handler on the strand, lock-free: these frames
  /// go out before what push() queued.
  boost::system::error_code push_strand(const Frame& frame, std::size_t limit);
  /// push() and push_strand() of bytes as they are (a byte channel).
  boost::system::error_code push(std::string_view bytes, std::size_t limit, bool& kick) WHEELRPC_EXCLUDES(mu_);
  boost::system::error_code push_strand(std::string_view bytes, std::size_t limit);

  enum class Take {
    batch,    ///< inflight() holds the next batch
    drained,  ///< nothing queued: the cycle ended
    closed,   ///< closed for writing: the cycle ended
  };
  /// Strand: moves what is queued (the strand's frames first) into the
  /// in-flight buffer, or ends the write cycle. `trim_inflight`: a quiet
  /// spell is over, the last burst's large in-flight buffer is dropped first.
  Take take(bool trim_inflight) WHEELRPC_EXCLUDES(mu_);
  /// The batch being written (strand only).
  const std::string& inflight() const noexcept { return inflight_; }
  /// Heap bytes of the in-flight buffer (strand only).
  std::size_t inflight_heap_bytes() const noexcept { return heap_bytes(inflight_); }
  /// `n` bytes reached the socket (strand).
  void note_written(std::size_t n) noexcept { bytes_out_.add(n); }
  /// The batch went out: keeps a moderate buffer for the next one (strand).
  void wrote() noexcept;
  /// A write failed: the batch and its buffer are dropped (strand).
  void drop_inflight() noexcept;

  /// Strand: something is queued, at least `min_bytes` in all.
  bool has_at_least(std::size_t min_bytes) const WHEELRPC_EXCLUDES(mu_);
  /// close_after_flush(): push() and push_strand() fail from now on.
  void refuse() WHEELRPC_EXCLUDES(mu_);
  /// Nothing queued and no write cycle under way.
  bool idle() const WHEELRPC_EXCLUDES(mu_);
  /// The channel closed (strand): nothing more is taken, what is queued is dropped.
  void close() WHEELRPC_EXCLUDES(mu_);
  /// Closed for writing, read on the strand (its only writer) without the lock.
  bool closed_on_strand() const noexcept WHEELRPC_NO_THREAD_SAFETY_ANALYSIS { return closed_; }
  /// After a quiet read (strand): trims the buffers to kKeptWriteBytes when
  /// no write cycle is under way.
  void trim_idle() WHEELRPC_EXCLUDES(mu_);

  /// Bytes queued and not yet taken (any thread).
  std::size_t queued_bytes() const WHEELRPC_EXCLUDES(mu_);
  /// Heap bytes of the queued and in-flight buffers (any thread).
  std::size_t heap_capacity() const WHEELRPC_EXCLUDES(mu_);
  std::uint64_t frames_out() const noexcept { return frames_out_.load() + strand_frames_out_.load(); }
  std::uint64_t bytes_out() const noexcept { return bytes_out_.load(); }

 private:
  template <class Append>
  boost::system::error_code push_any(const Append& append, std::size_t limit, bool& kick) WHEELRPC_EXCLUDES(mu_);
  template <class Append>
  boost::system::error_code push_strand_any(const Append& append, std::size_t limit);

  mutable common::Mutex mu_;
  std::string queued_ WHEELRPC_GUARDED_BY(mu_);  // encoded by any thread
  bool writing_ WHEELRPC_GUARDED_BY(mu_);        // a write cycle is under way
  // Written on the strand under mu_, so the strand may read it without it.
  bool closed_ WHEELRPC_GUARDED_BY(mu_) = false;
  // refuse(): nothing new, the queue still drains.
  std::atomic<bool> refuse_{false};
  // queued_ holds a frame (written under mu_).
  std::atomic<bool> queued_any_{false};
  common::SingleWriterCounter<std::uint64_t> frames_out_;  // written under mu_
  // Frames sent by the channel's own handler while it delivers a read (a
  // reply from a handler that runs inline), on a plaintext channel whose
  // queued_ is empty: encoded here without mu_, and written before queued_
  // (what is in queued_ came later, or from another thread at the same
  // time). Strand only; the mirrors are for other threads' reads.
  std::string strand_queued_;
  std::atomic<std::size_t> strand_queued_bytes_{0}, strand_capacity_stat_{0};
  common::SingleWriterCounter<std::uint64_t> strand_frames_out_;
  std::string inflight_;  // strand only
  std::atomic<std::size_t> inflight_capacity_stat_{0};
  common::SingleWriterCounter<std::uint64_t> bytes_out_;  // strand
};

}  // namespace wheelrpc::transport::detail
