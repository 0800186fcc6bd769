#pragma once
/// Channel: one TCP connection carrying frames, on its own strand.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/transport/channel_options.h>
#include <wheelrpc/transport/frame.h>
#include <wheelrpc/transport/tls.h>

namespace wheelrpc::transport {

enum class ChannelState : std::uint8_t { ready, closed };

namespace detail {
class ReadBuffer;
class WriteQueue;
}  // namespace detail

class Channel;

/// Receives a channel's events. Every call runs on the channel's strand.
class ChannelHandler {
 public:
  virtual ~ChannelHandler() = default;
  /// A decoded frame; the handler may move from it. The channel keeps the
  /// handler alive until on_frame returns, even if the frame closes it.
  virtual void on_frame(Channel& channel, Frame& frame) = 0;
  /// The channel closed: locally (`close()`), by the peer (end of stream), on an
  /// I/O error, or on bad input. Called exactly once; no on_frame follows.
  virtual void on_close(Channel& channel, const boost::system::error_code& ec, const std::string& reason) = 0;
  /// The frames of one read were delivered (on the channel's strand): once
  /// after the last on_frame of each such batch, also when a frame closed
  /// the channel (then after on_close). What a handler set up for the
  /// batch (say, a reference it would otherwise take per frame) ends here.
  virtual void on_frames_delivered(Channel& channel) { (void)channel; }
  /// A byte channel's bytes, as read (ChannelOptions::raw, or after
  /// on_http2). The view is valid only during the call; every byte is
  /// taken. A read ends with on_frames_delivered as a frame read does.
  virtual void on_data(Channel& channel, std::string_view bytes) {
    (void)channel;
    (void)bytes;
  }
  /// The peer opened with the HTTP/2 client preface (or chose ALPN `h2`) on
  /// a channel with ChannelOptions::accept_http2: returns the handler that
  /// takes this channel's bytes from now on (the preface first; on_close
  /// goes to it), or null to close the channel.
  virtual std::shared_ptr<ChannelHandler> on_http2(Channel& channel) {
    (void)channel;
    return nullptr;
  }
  /// A byte channel's heartbeat in its handler's protocol (HTTP/2: a PING):
  /// true if one was sent. See Channel::send_heartbeat.
  virtual bool send_heartbeat(Channel& channel) {
    (void)channel;
    return false;
  }
  /// A resume_reading() is about to take effect: true keeps the channel
  /// paused, because the reason the handler paused it holds again (a resume
  /// posted for an earlier pause must not undo a later one). Default false.
  virtual bool keep_paused(Channel& channel) {
    (void)channel;
    return false;
  }
};

/// Counters of every channel in the process (monotonic).
struct ChannelCounters {
  std::uint64_t opened = 0;
  std::uint64_t closed = 0;
  std::uint64_t bad_input = 0;  ///< closed because of undecodable input
};
ChannelCounters channel_counters() noexcept;

/// What a channel holds in buffers now, for tests and diagnostics (a snapshot;
/// each field is read on its own).
struct ChannelBufferStats {
  std::size_t read_capacity = 0;   ///< heap read buffer (bytes); 0 while reads use the inline bytes
  std::size_t read_pending = 0;    ///< bytes of a frame not yet complete
  std::size_t write_capacity = 0;  ///< heap bytes of the write buffers (queued + in flight)
  std::uint64_t reads = 0;         ///< reads completed with data so far
};

/// What a channel carried so far (each field read on its own).
struct ChannelTraffic {
  std::uint64_t bytes_in = 0, bytes_out = 0;    ///< read from / written to the socket
  std::uint64_t frames_in = 0, frames_out = 0;  ///< decoded / queued for writing
  std::uint64_t heartbeats_sent = 0;            ///< note_heartbeat_sent() calls
};

/// A connected socket that reads and decodes frames and writes encoded frames
/// in batches (one write in flight, everything queued meanwhile goes out in the
/// next one). Created by Acceptor or Connector users via `create()`.
///
/// @par Writes
/// A plaintext batch goes out with one non-blocking send; only what the
/// socket does not take at once waits for an async write (TLS: always). The
/// batches are pipelined with the reads: every kEarlyFlushFrames frames of a
/// read, and when a read's frames have all been handled, what their handlers
/// queued is sent before the channel goes on, so the peer works on it while
/// this end handles the rest. A frame that the handler sends while the channel
/// delivers a read (a reply from a handler that runs inline) is queued
/// without the write lock, unless another thread's frame is already queued,
/// which it then follows.
///
/// @par Memory
/// A connection costs memory in proportion to what it carries. A channel that
/// waits for bytes holds no heap read buffer: its pending read goes into the
/// kInlineReadBytes of its read state (allocated once, with the channel),
/// where a heartbeat or a small frame is read and decoded whole. A read that fills those bytes, or a frame larger
/// than they are, moves to a heap buffer sized to need: a frame's buffer grows
/// with what has arrived (at most doubling), never straight to the size its
/// header announces, and is given back once the frame is complete.
/// While the channel is busy (reads that start a frame come at most
/// ChannelOptions::busy_read_interval apart, or a read fills its buffer) it
/// keeps one read buffer between reads, sized to its traffic (from 1 KiB,
/// doubled when a read fills it, at most read_buffer_bytes), so a stream of
/// frames costs one read syscall per batch and no allocation. Reads that
/// continue a frame (the rest of a large one) do not make a channel busy. A
/// read that starts a frame after a quiet spell and leaves no partial frame
/// gives the read buffer back, trims the write buffers (both, when no write
/// is in flight) to at most kKeptWriteBytes each and drops the decoded
/// frame's strings; a write after a quiet spell trims the in-flight write
/// buffer too. So a connection that only carries heartbeats holds no heap
/// buffer, one that went quiet after a burst gives back what the burst
/// needed at its next read (with heartbeats, within one heartbeat interval),
/// and connection setup (a HELLO larger than the inline bytes) leaves nothing
/// behind. Bytes queued for writing are bounded by max_write_queue_bytes; a
/// written buffer over 1 MiB is given back as soon as its write completes.
/// `buffer_stats()` shows all this.
///
/// @par Thread Safety
/// `send`, `close` and the getters are safe from any thread; the handler runs
/// on the channel's strand, where all state changes happen.
class Channel : public std::enable_shared_from_this<Channel> {
 public:
  using Clock = std::chrono::steady_clock;

  /// Bytes inside every Channel that a read goes into while no heap read
  /// buffer is held: a header-only frame (a heartbeat) fits twice.
  static constexpr std::size_t kInlineReadBytes = 64;
  /// Heap bytes each write buffer keeps across a quiet spell.
  static constexpr std::size_t kKeptWriteBytes = 1024;
  /// While a read's frames are handled, what they queued is sent every this
  /// many frames (plaintext, when no write is under way and at least
  /// kEarlyFlushBytes are queued), so the peer starts on it meanwhile.
  static constexpr std::uint32_t kEarlyFlushFrames = 64;
  static constexpr std::size_t kEarlyFlushBytes = 512;

  /// Takes a connected socket; sets TCP_NODELAY. Call `start()` to begin reading.
  ///
  /// With `tls` (not null) the channel speaks TLS in `tls`'s role: `start()`
  /// runs the handshake first (a server first checks that the peer's first
  /// byte opens a TLS handshake record; a plaintext peer gets a TLS alert and
  /// the channel closes with errc::tls_required's reason, naming it). Frames
  /// sent meanwhile wait and go out once it is done. A failed handshake closes
  /// the channel (on_close) with errc::tls_handshake_failed or
  /// errc::tls_not_spoken and a reason naming the cause (unknown CA, name
  /// mismatch, expired certificate, missing client certificate, a peer that
  /// does not speak TLS). Nothing bounds the handshake here: the owner's
  /// timeout (connect or HELLO timeout) closes the channel. A client verifies
  /// the server's certificate against `server_name`, or the peer's IP
  /// address when it is empty. A TLS channel also holds the SSL stream's
  /// buffers (about 34 KiB) and OpenSSL's state. Without `tls` (the default)
  /// the channel is plaintext and pays nothing for TLS but a null check.
  static std::shared_ptr<Channel> create(boost::asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler,
                                         ChannelOptions options = {}, const TlsContext* tls = nullptr,
                                         const std::string& server_name = {});
  ~Channel();

  /// Starts the read loop (on the strand). Call once.
  void start();

  /// Queues `frame` for writing. Fails with errc::closed once closed and with
  /// errc::write_queue_full when the queue is over its limit (the frame is not
  /// queued). Any thread.
  boost::system::error_code send(const Frame& frame);
  /// Queues bytes as they are (a byte channel: ChannelOptions::raw, or
  /// after on_http2). The same errors and threads as send().
  boost::system::error_code send_bytes(std::string_view bytes);
  /// A byte channel's handler, in on_data with more of the read still to
  /// handle: writes what it queued so far now, as a frame channel does every
  /// kEarlyFlushFrames frames, so the peer works on it meanwhile. Plaintext,
  /// when no write is under way and at least kEarlyFlushBytes are queued;
  /// otherwise nothing. On the strand, during on_data.
  void flush_partial();
  /// True once the channel carries bytes rather than frames (strand, or
  /// after the handler switched). Any thread.
  bool is_raw() const noexcept { return raw_.load(std::memory_order_acquire); }

  /// True while this (plaintext) channel delivers a read on the calling
  /// thread: on its strand, inside its handler's on_frame, where the channel
  /// stays alive until on_frame returns.
  bool delivering_here() const noexcept;

  /// Takes a string the handler is done with (say, the payload of a reply it
  /// just sent) as the buffer of the next decoded frame's payload, so a stream
  /// of requests does not allocate one each; kept only if the frame being
  /// delivered holds no payload (the handler moved it out) and the string is
  /// at most kMaxRecycledBytes. Strand only: from the handler, in on_frame.
  void recycle(std::string&& bytes) noexcept;
  static constexpr std::size_t kMaxRecycledBytes = 64 * 1024;

  /// Closes the channel with a reason (logged, passed to on_close). Idempotent;
  /// any thread; the close itself happens on the strand.
  void close(boost::system::error_code ec, std::string reason);
  /// Closes the channel once every frame queued so far is written (a graceful
  /// close: replies already sent reach the peer), or after `limit` (ms) if
  /// the peer does not take them. From the call on, send() fails with
  /// errc::closed. Idempotent with close(); any thread.
  void close_after_flush(boost::system::error_code ec, std::string reason, std::chrono::milliseconds limit);

  ChannelState state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool is_open() const noexcept { return state() != ChannelState::closed; }
  /// Process-unique id, for logs ("conn={}").
  std::uint64_t id() const noexcept { return id_; }
  /// "ip:port" of the peer and of this end, captured at creation.
  const std::string& remote() const noexcept { return remote_; }
  const std::string& local() const noexcept { return local_; }
  /// When bytes were last read from / written to the socket.
  Clock::time_point last_read() const noexcept;
  Clock::time_point last_write() const noexcept;
  /// Bytes queued and not yet handed to the socket.
  std::size_t queued_bytes() const;
  /// Sets TCP_USER_TIMEOUT: once data written stays unacknowledged by the
  /// peer for `timeout` (ms, > 0), the kernel drops the connection and the
  /// channel closes with the socket's error (gRFC A18), instead of
  /// retransmitting for up to ~15 minutes. Linux only (elsewhere
  /// operation_not_supported). Call from the channel's strand or before
  /// start(). Returns the setsockopt error, if any.
  boost::system::error_code set_user_timeout(std::chrono::milliseconds timeout);
  /// The TCP_USER_TIMEOUT in force (0: the kernel's default), as the socket
  /// reports it; for tests. The channel's strand only (or before start()):
  /// elsewhere the socket may be closing.
  std::chrono::milliseconds user_timeout() const;
  /// The buffers this channel holds now (see "Memory" above). For tests and
  /// diagnostics; any thread. Read buffer figures are updated before each
  /// read is started, so they show what the pending read holds.
  ChannelBufferStats buffer_stats() const;
  /// Bytes and frames carried so far; any thread.
  ChannelTraffic traffic() const noexcept;
  /// Stops reading the socket: frames already read stay buffered and are
  /// delivered after resume_reading(); what the peer sends meanwhile backs up
  /// in TCP (back-pressure, not an unbounded queue). Call from the handler
  /// (the channel's strand); takes effect after the current frame. Idempotent.
  void pause_reading() noexcept;
  /// Reading goes on, buffered frames first. Any thread: always posted to the
  /// strand (never run inline), so a resume that races with a pause from the
  /// handler lands after it. A no-op when not paused, or when the handler's
  /// keep_paused() says the pause still holds.
  void resume_reading();
  /// True between pause_reading() and the resume; any thread.
  bool reading_paused() const noexcept { return paused_.load(std::memory_order_acquire); }
  /// Keepalive off while the protocol forbids it (gRPC: no PING on a
  /// connection without calls, or the server disconnects the client): the
  /// owner's heartbeat and idle checks skip the channel meanwhile. Turning
  /// it back on counts as a read now (the silence was ours). Any thread.
  void pause_keepalive(bool paused) noexcept {
    if (!paused) last_read_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    keepalive_paused_.store(paused, std::memory_order_release);
  }
  bool keepalive_paused() const noexcept { return keepalive_paused_.load(std::memory_order_acquire); }
  /// A byte channel: asks its handler to send a heartbeat of its protocol
  /// (ChannelHandler::send_heartbeat), counted when sent. Strand only.
  void send_heartbeat();
  /// Counts a heartbeat sent on this channel (by whoever sends them); any thread.
  void note_heartbeat_sent() noexcept { heartbeats_sent_.fetch_add(1, std::memory_order_relaxed); }
  /// When the channel was created (connection made or accepted).
  Clock::time_point created() const noexcept { return created_; }

  const boost::asio::strand<boost::asio::any_io_executor>& strand() const noexcept { return strand_; }

  /// Whether the channel speaks TLS (fixed at creation).
  bool is_tls() const noexcept { return tls_ != nullptr; }

  /// The TLS state of a TLS channel (transport/src only).
  struct Tls;

 private:
  struct MakeShared;  // lets create() make the channel and its count in one allocation
  Channel(boost::asio::ip::tcp::socket socket, std::shared_ptr<ChannelHandler> handler, ChannelOptions options,
          const TlsContext* tls, const std::string& server_name);
  /// TLS: a server's check of the peer's first byte, then the handshake (strand).
  void do_tls_peek();
  void do_tls_handshake();
  void on_tls_handshake(const boost::system::error_code& ec);
  /// Writes `bytes` at once if the socket takes them (no wait): the last
  /// words before a close (strand, nothing in flight).
  void write_now(const std::string& bytes);
  /// Reads what the peer sent so far, without waiting, and drops it (strand).
  void drain_now();
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  /// Decodes and delivers the complete frames in the read buffer; false if
  /// the channel closed or reading was paused meanwhile (no read follows).
  bool deliver_frames();
  /// A byte channel's read: all of it to the handler (on_data).
  bool deliver_bytes();
  /// The first bytes of an accept_http2 channel: the HTTP/2 preface switches
  /// it to bytes (0), anything else stays frames (1), a partial preface
  /// waits for more (2), a refused switch closed it (3).
  int sniff_http2();
  /// Hands the channel to the handler's on_http2 (strand); false: closed.
  bool switch_to_http2(const char* why);
  /// resume_reading() on the strand.
  void on_resume();
  /// After a delivery: writes what its frames queued (flush_early); false,
  /// with the read buffer given back, if that ended a graceful close.
  bool flush_delivered();
  /// After a quiet read: trims the write buffers and the decoded frame.
  void trim_idle();
  void do_write();
  void write_inflight(std::size_t from);
  std::size_t send_now();
  void wrote_inflight();
  void flush_early(std::size_t min_bytes);
  void on_write(const boost::system::error_code& ec, std::size_t n);
  void do_close(const boost::system::error_code& ec, const std::string& reason);

  const std::uint64_t id_;
  const ChannelOptions options_;
  const Clock::rep busy_interval_;  // busy_read_interval in Clock ticks
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<ChannelHandler> handler_;  // strand only; reset after on_close
  std::string remote_, local_;
  std::atomic<ChannelState> state_{ChannelState::ready};
  std::atomic<bool> paused_{false};            // pause_reading() (set on the strand)
  std::atomic<bool> raw_{false};               // bytes, not frames (set at creation or on the strand)
  std::atomic<bool> keepalive_paused_{false};  // pause_keepalive()
  bool parked_ = false;                        // strand only: paused with no read pending
  // strand only: while parked (no read holds the channel) a wait that never
  // expires holds it instead, as a pending read would: cancelled by the
  // resume or the close, and dropped with the io_context's other pending
  // operations if it is shut down first (no reference cycle outlives it).
  std::unique_ptr<boost::asio::steady_timer> park_;
  std::atomic<Clock::rep> last_read_, last_write_;

  // Reading (strand only): the buffer (kInlineReadBytes of its own, or a
  // heap one), its sizing and the read-side figures (transport/src/read_buffer.h).
  std::unique_ptr<detail::ReadBuffer> read_;
  std::size_t offered_ = 0;          // bytes the pending read may fill
  bool full_means_more_ = false;     // a full read leaves bytes in the socket
  Clock::rep last_frame_start_ = 0;  // last read that started a frame
  bool read_before_ = false;         // a read has started a frame
  bool quiet_ = true;                // that read came after a quiet spell
  FrameDecoder decoder_;
  Frame frame_;
  std::atomic<std::uint64_t> heartbeats_sent_{0};
  const Clock::time_point created_ = Clock::now();

  // Writing: frames queued by any thread and by the handler on the strand,
  // the batch in flight and the write-side figures (transport/src/write_queue.h).
  std::unique_ptr<detail::WriteQueue> writes_;
  bool strand_sent_ = false;              // strand only: the handler queued frames during this read
  bool write_active_ = false;             // strand only: an async write of the batch is under way
  std::uint32_t frames_since_flush_ = 0;  // strand only: frames delivered since the last early flush
  // close_after_flush (strand only): the close to make once the queue drains.
  struct PendingClose;
  std::unique_ptr<PendingClose> pending_close_;
  // TLS (null: plaintext): the stream over socket_, strand only.
  std::unique_ptr<Tls> tls_;
};

}  // namespace wheelrpc::transport
