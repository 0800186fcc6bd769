#pragma once
// A channel's read buffer (strand only): kInlineReadBytes of its own, or a
// heap buffer sized to need; [begin, end) of it is the frame not yet
// complete. It holds the read-side figures other threads read (buffer_stats,
// traffic); the sizing policy (how much a busy channel keeps) is the
// channel's ("Memory" in channel.h).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <wheelrpc/common/single_writer_counter.h>
#include <wheelrpc/transport/channel.h>

namespace wheelrpc::transport::detail {

class ReadBuffer {
 public:
  static constexpr std::size_t kInlineBytes = Channel::kInlineReadBytes;

  /// `max_kept`: the most a busy channel keeps between reads (read_buffer_bytes).
  explicit ReadBuffer(std::size_t max_kept) noexcept;

  std::size_t max_kept() const noexcept { return max_kept_; }
  /// The buffer kept between reads while the channel is busy; 0: quiet.
  std::size_t busy_bytes() const noexcept { return busy_bytes_; }
  void set_busy_bytes(std::size_t n) noexcept { busy_bytes_ = n; }

  /// Picks the buffer for the next read: inline, the kept one, or one grown
  /// (or shrunk) to what the partial frame (`needed` bytes in all, as the
  /// decoder says) and busy_bytes() need; moves the partial frame to its front.
  void prepare(std::size_t needed);
  /// Gives back the heap buffer and the busy size (no read pending).
  void release() noexcept;

  std::size_t capacity() const noexcept { return heap_ ? heap_capacity_ : kInlineBytes; }
  /// The partial frame.
  const std::uint8_t* pending() const noexcept { return data() + begin_; }
  std::size_t pending_size() const noexcept { return end_ - begin_; }
  /// True while the buffer holds no bytes at all (not even consumed ones).
  bool unused() const noexcept { return end_ == 0; }
  /// Where the next read goes, and how much it may fill.
  std::uint8_t* tail() noexcept { return data() + end_; }
  std::size_t room() const noexcept { return capacity() - end_; }
  /// A read put `n` bytes at tail().
  void filled(std::size_t n) noexcept {
    reads_.add();
    bytes_in_.add(n);
    end_ += n;
  }
  /// A decoded frame's `n` bytes are done with.
  void consume_frame(std::size_t n) noexcept {
    begin_ += n;
    frames_in_.add();
  }
  /// Starts over at the front once everything read is consumed.
  void rewind_if_consumed() noexcept {
    if (begin_ == end_) begin_ = end_ = 0;
  }

  /// Figures for other threads (single writer: the strand).
  std::size_t capacity_stat() const noexcept { return capacity_stat_.load(std::memory_order_relaxed); }
  std::size_t pending_stat() const noexcept { return pending_stat_.load(std::memory_order_relaxed); }
  std::uint64_t reads() const noexcept { return reads_.load(); }
  std::uint64_t bytes_in() const noexcept { return bytes_in_.load(); }
  std::uint64_t frames_in() const noexcept { return frames_in_.load(); }

 private:
  std::uint8_t* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const std::uint8_t* data() const noexcept { return heap_ ? heap_.get() : inline_; }

  const std::size_t max_kept_;
  std::unique_ptr<std::uint8_t[]> heap_;
  std::size_t heap_capacity_ = 0;
  std::size_t begin_ = 0, end_ = 0;
  std::size_t busy_bytes_ = 0;
  std::atomic<std::size_t> capacity_stat_{0}, pending_stat_{0};
  common::SingleWriterCounter<std::uint64_t> reads_, bytes_in_, frames_in_;
  std::uint8_t inline_[kInlineBytes];
};

}  // namespace wheelrpc::transport::detail
