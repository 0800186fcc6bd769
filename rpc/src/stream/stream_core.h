#pragma once
// One stream, either end (docs/streams.md): its messages both ways with
// credit-based flow control, its four timers on the shared wheel, and its
// exactly-once end. It speaks no wire: the connection that carries it says
// its operations in its own protocol (StreamWire, stream_wire.h) and calls
// its on_* functions with what the peer did, on the connection's strand; the
// user's ClientStream / ServerStream call in from any thread.
//
// Threads and locks: the state is guarded by `mu_`, taken by the user's
// calls, the wire's deliveries and the posted timer work; operations are
// handed to the wire with it held (so a stream's operations keep their
// order), and a wire never calls into a stream with a lock of its own held. No completion handler runs under it: each
// is dispatched to its associated executor (default: `Settings::ex`) after the lock is released. The timer's worker
// only posts to `Settings::ex`; the task holds the stream weakly and enters the owner's WorkGate first.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/common/work_gate.h>
#include <wheelrpc/rpc/detail/stream_ops.h>
#include <wheelrpc/rpc/status.h>
#include <wheelrpc/rpc/stream_info.h>
#include <wheelrpc/timer/clock.h>
#include <wheelrpc/timer/timer.h>
#include <wheelrpc/transport/attachments.h>
#include <wheelrpc/transport/compression.h>

#include "base/method_metrics.h"
#include "base/payload_coding.h"
#include "stream/stream_counters.h"
#include "stream/stream_side.h"
#include "stream/stream_wire.h"

namespace wheelrpc::rpc::detail {

class StreamTable;
struct StreamPending;
class TimeoutLog;

/// A stream timer's slot in StreamCore's per-timer arrays.
inline constexpr std::size_t index(StreamTimer t) noexcept { return static_cast<std::size_t>(t); }

class StreamCore : public std::enable_shared_from_this<StreamCore> {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  /// Whole milliseconds from `from` to `to` (for messages).
  static std::chrono::milliseconds ms_between(TimePoint from, TimePoint to) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from);
  }
  /// What one stream is made with: what its side shares (`side`, never
  /// null), and what is its own (the call's options, the opening's).
  struct Settings {
    std::shared_ptr<const StreamSide> side;
    std::string method;
    std::chrono::milliseconds deadline{0};  // 0: none (server: the client's, from the OPEN)
    std::chrono::milliseconds message_timeout{0}, stall_timeout{0}, first_message_timeout{0};
    std::uint32_t window = kDefaultStreamWindow;  // what we grant the peer
    /// Compression of the messages this side writes (docs/compression.md).
    transport::Compression compression = transport::Compression::identity;
    int compression_level = 0;
    /// Its method's metric cells (payload bytes); may be null.
    MethodCells* cells = nullptr;
  };

  explicit StreamCore(Settings s);
  ~StreamCore();
  StreamCore(const StreamCore&) = delete;
  StreamCore& operator=(const StreamCore&) = delete;

  bool is_client() const noexcept { return s_.side->client; }
  const std::string& method() const noexcept { return s_.method; }
  /// The largest message it takes (StreamSide::max_message).
  std::uint32_t max_message() const noexcept { return s_.side->max_message; }
  const boost::asio::any_io_executor& executor() const noexcept { return s_.side->ex; }
  TimePoint now() const noexcept { return s_.side->clock ? s_.side->clock->now() : timer::fast_steady_now(); }
  /// What it shares with the other streams of its side.
  const std::shared_ptr<const StreamSide>& side() const noexcept { return s_.side; }
  /// The stream's remaining budget (0: none), for its opening.
  std::chrono::milliseconds remaining_budget() const;

  // ---- set-up
  /// Starts its timers (the start is when it was made). Once.
  void start();
  /// The connection's `wire` carries it from now on, as `id`;
  /// `peer_window`: the credit the peer granted, `peer_max_body` the largest
  /// body it takes, `peer_accept` what it decodes (its handshake);
  /// `receive_window`: the window this side grants (0: Settings::window).
  /// The connection's strand. False (nothing bound) if it ended meanwhile:
  /// the caller resets it on the wire.
  bool bind(std::shared_ptr<StreamWire> wire, std::weak_ptr<StreamTable> table, std::uint64_t id,
            std::uint32_t peer_window, std::uint32_t peer_max_body, std::string peer,
            transport::CompressionSet peer_accept, std::uint32_t receive_window = 0);
  /// Server: the client's metadata and deadline, from its OPEN.
  void set_request(transport::Attachments metadata, std::optional<TimePoint> deadline);
  /// Server: the client's metadata as the server's interceptors left it,
  /// before the handler runs (the handler's thread sees it through the post
  /// or call that starts it).
  void replace_metadata(transport::Attachments metadata) { metadata_ = std::move(metadata); }
  /// Server, once bound: answers its opening, accepted, through its wire
  /// (before any message of the handler). False, answering nothing, if it
  /// ended meanwhile (its deadline, the client's cancel, the connection).
  bool accept_open();
  /// Server, once bound: refuses its opening with `ec` and `message` (an
  /// interceptor's rejection): answered through its wire, the stream ends
  /// (StreamEnd::refused) telling the peer nothing more. False if it had
  /// ended already.
  bool refuse_open(const boost::system::error_code& ec, std::string message);
  /// Client: its opening failed (refused, unreachable, timed out).
  void fail_open(const boost::system::error_code& ec, std::string message);
  /// Client: what its opener is told, given the open call's outcome: that
  /// error; or, accepted, none (what came after is the stream's to tell); or
  /// the error of a timer that ended it while it opened.
  boost::system::error_code open_result(const boost::system::error_code& ec) const;

  // ---- from the wire: what the peer did (the connection's strand, no wire lock held)
  /// A message as it came: `encoding` its compression (0: none); `initial`
  /// (client): the server's initial metadata that came with it, or null.
  /// `payload` may be moved from.
  void on_message(std::string& payload, std::uint8_t encoding, transport::Attachments* initial);
  /// Server: the client sends no more messages.
  void on_half_close();
  /// Room for `bytes` (the stream's unit) more.
  void on_credit(std::uint64_t bytes);
  /// Client: the server's end: `ec` empty for OK, its `message` (for a
  /// failure), its metadata (metadata_split.h's shape; moved from).
  void on_end(const boost::system::error_code& ec, std::string message, transport::Attachments& metadata);
  /// Server: the client cancelled the stream.
  void on_reset();
  /// Something the wire could not take as an operation of a stream
  /// (`why`): the stream ends with INTERNAL.
  void on_bad_operation(std::string why);
  void on_connection_lost(const boost::system::error_code& ec, const std::string& reason);

  // ---- the user (any thread but the timer's worker)
  void read(StreamReadHandler h);
  /// `compress`: false sends this message uncompressed (WriteOptions::no_compression).
  void write(std::string message, StreamDoneHandler h, bool compress = true);
  void writes_done(StreamDoneHandler h);
  void wait_end(StreamDoneHandler h);
  /// Ends it from this side: the client cancels (RESET), the server answers
  /// `ec` (END). `cause` for the counters. A no-op once ended.
  void end_local(boost::system::error_code ec, std::string message, StreamEnd cause);
  /// Server: the handler's finish (success when `ec` is empty).
  void finish(const boost::system::error_code& ec, std::string message);
  void add_trailer(std::string key, std::string value);
  // ---- metadata and compression (stream_coding.cc)
  /// Server: metadata sent before the first message (gRPC's response
  /// headers): with the first message, or in the end before its
  /// trailers (kTrailersMarker between them) when it writes none. Ignored
  /// once a message went.
  void add_initial_metadata(std::string key, std::string value);
  /// Server: what is still to send; client: what the server sent (empty
  /// until its first message or its END).
  transport::Attachments initial_metadata() const;
  /// Client: the server's trailers (its END's metadata); server: the
  /// trailers to send.
  transport::Attachments trailers() const;
  /// The algorithm (and level: 0 = its default) of the messages this side
  /// writes from now on, instead of Settings::compression.
  void set_compression(transport::Compression compression, int level);
  /// Whether the message the last completed read returned came compressed.
  bool last_read_compressed() const noexcept { return last_read_compressed_.load(std::memory_order_relaxed); }
  /// The user's last handle went: cancel (client) or server_error (server).
  void handle_dropped();

  bool cancelled() const;
  const transport::Attachments& metadata() const noexcept { return metadata_; }
  std::optional<TimePoint> deadline() const noexcept { return deadline_at_; }
  std::string error_message() const;
  StreamInfo info() const;
  std::uint64_t id() const noexcept { return id_.load(std::memory_order_relaxed); }

 private:
  using Pending = StreamPending;  // handlers to run once the lock is released (stream_pending.h)
  /// `wire_size`: the message's size as it came (its credit cost counts that).
  void take_message(std::string& payload, bool compressed, std::size_t wire_size, transport::Attachments* initial,
                    Pending& p) WHEELRPC_REQUIRES(mu_);
  /// Compression (stream_coding.cc), outside the lock: a message to write
  /// compressed in place if worth it (its encoding byte returned), and a
  /// compressed one received decoded in place (an error ends the stream).
  std::uint8_t compress_message(std::string& message, bool allowed) const;
  /// Server: the END's metadata (the initial metadata no message carried,
  /// then, if there is any metadata, the marker and the trailers); client:
  /// an END's metadata taken in (all of it trailers without a marker).
  transport::Attachments end_metadata() WHEELRPC_REQUIRES(mu_);
  void take_end_metadata(transport::Attachments& all) WHEELRPC_REQUIRES(mu_);
  boost::system::error_code decode_message(std::uint8_t encoding, std::string& payload, std::string& why) const;
  void add_credit(std::uint64_t n, Pending& p) WHEELRPC_REQUIRES(mu_);
  void take_end(const boost::system::error_code& ec, std::string& message, transport::Attachments& metadata, Pending& p)
      WHEELRPC_REQUIRES(mu_);
  /// Sends the waiting write if the credit allows it.
  void try_send_write(Pending& p) WHEELRPC_REQUIRES(mu_);
  bool can_send(std::uint64_t cost) const WHEELRPC_REQUIRES(mu_);
  void send_message(std::string& payload, Pending& p) WHEELRPC_REQUIRES(mu_);
  /// A message the application took: credit back to the peer past half the window.
  void consumed(std::uint64_t cost) WHEELRPC_REQUIRES(mu_);
  /// Tells the peer this side half-closed, if it is still carried.
  void send_half_close() WHEELRPC_REQUIRES(mu_);
  /// The exactly-once end: completes what waits, stops the timers, leaves
  /// the table. `wire`: what to tell the peer (a reset or an end; none).
  /// `message` says what happened; its full text (error_message()) adds the
  /// method, the peer and the messages each way, unless `raw` (the message
  /// is complete: the handler's, or a failed open's).
  enum class Wire : std::uint8_t { none, reset, end };
  void end_locked(boost::system::error_code ec, std::string message, StreamEnd cause, Wire wire, Pending& p,
                  bool raw = false) WHEELRPC_REQUIRES(mu_);
  std::string describe(std::string_view what) const WHEELRPC_REQUIRES(mu_);
  void arm(StreamTimer which, TimePoint at) WHEELRPC_REQUIRES(mu_);
  void on_timer(StreamTimer which, TimePoint fired);
  void expire(StreamTimer which, TimePoint since, TimePoint fired, Pending& p) WHEELRPC_REQUIRES(mu_);
  void run(Pending& p);
  /// Cancelling the handler's operation through its slot cancels the stream.
  template <class Handler>
  void watch_cancellation(Handler& h);

  const Settings s_;
  const TimePoint start_;
  std::atomic<std::uint64_t> id_{0};
  std::atomic<std::uint8_t> peer_accept_{0};  // what the peer decodes (CompressionSet bits), from bind
  transport::Attachments metadata_;           // server: the client's; set before the handler runs
  std::optional<TimePoint> deadline_at_;

  mutable common::SpinLock mu_;  // short sections: an operation handed to the wire at most
  std::shared_ptr<StreamWire> wire_ WHEELRPC_GUARDED_BY(mu_);  // the connection's (see bind); null once ended
  std::weak_ptr<StreamTable> table_ WHEELRPC_GUARDED_BY(mu_);
  std::string peer_ WHEELRPC_GUARDED_BY(mu_);
  bool bound_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool ended_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool finished_ WHEELRPC_GUARDED_BY(mu_) = false;   // server: ended by finish()
  bool peer_done_ WHEELRPC_GUARDED_BY(mu_) = false;  // client: END read; server: HALF_CLOSE read
  bool writes_done_ WHEELRPC_GUARDED_BY(mu_) = false;
  bool handle_gone_ WHEELRPC_GUARDED_BY(mu_) = false;
  boost::system::error_code end_ec_ WHEELRPC_GUARDED_BY(mu_);
  // What few streams carry, made when first needed: an idle stream holds none.
  struct Extras {
    std::string end_message;                  // its error's full text (error_message())
    transport::Attachments trailers;          // server: to send; client: received
    transport::Attachments initial_metadata;  // server: to send; client: received
  };
  std::unique_ptr<Extras> extras_ WHEELRPC_GUARDED_BY(mu_);
  Extras& extras() WHEELRPC_REQUIRES(mu_) {
    if (!extras_) extras_ = std::make_unique<Extras>();
    return *extras_;
  }
  bool initial_sent_ WHEELRPC_GUARDED_BY(mu_) = false;  // server: it went with a message
  // set_compression's algorithm (-1: Settings::compression) and level.
  std::atomic<int> compression_{-1};
  std::atomic<int> compression_level_{0};
  std::atomic<bool> last_read_compressed_{false};
  // Messages received and not yet read (bounded by the window we grant).
  // A vector read from `inbox_head_` (no deque: libstdc++'s allocates 576
  // bytes up front, more than the rest of an idle stream).
  std::vector<std::string> inbox_ WHEELRPC_GUARDED_BY(mu_);
  std::size_t inbox_head_ WHEELRPC_GUARDED_BY(mu_) = 0;
  // Beside inbox_, per message: its credit cost (of its size as it came) and
  // whether it came compressed.
  struct Received {
    std::uint64_t cost;
    bool compressed;
  };
  std::vector<Received> inbox_received_ WHEELRPC_GUARDED_BY(mu_);
  StreamReadHandler read_ WHEELRPC_GUARDED_BY(mu_);
  std::string write_msg_ WHEELRPC_GUARDED_BY(mu_);
  std::uint32_t write_bytes_ WHEELRPC_GUARDED_BY(mu_) = 0;    // its size before compression
  std::uint8_t write_encoding_ WHEELRPC_GUARDED_BY(mu_) = 0;  // its compression (a Compression value)
  StreamDoneHandler write_ WHEELRPC_GUARDED_BY(mu_);          // a write waiting for credit
  bool half_close_after_write_ WHEELRPC_GUARDED_BY(mu_) = false;
  StreamDoneHandler writes_done_h_ WHEELRPC_GUARDED_BY(mu_);
  std::vector<StreamDoneHandler> end_waiters_ WHEELRPC_GUARDED_BY(mu_);
  // Flow control (bytes): what we may send; what the peer sent past the last
  // credit we gave; what the application read and we have not credited yet.
  std::int64_t send_credit_ WHEELRPC_GUARDED_BY(mu_) = 0;
  std::uint32_t peer_window_ WHEELRPC_GUARDED_BY(mu_) = 0;
  std::uint32_t peer_max_body_ WHEELRPC_GUARDED_BY(mu_) = kDefaultPeerMaxBody;
  std::uint64_t recv_outstanding_ WHEELRPC_GUARDED_BY(mu_) = 0;
  std::uint32_t window_ WHEELRPC_GUARDED_BY(mu_) = 0;  // what we grant: Settings::window, or bind's
  std::uint64_t recv_consumed_ WHEELRPC_GUARDED_BY(mu_) = 0;
  // Figures.
  std::uint64_t sent_ WHEELRPC_GUARDED_BY(mu_) = 0, received_ WHEELRPC_GUARDED_BY(mu_) = 0;
  std::uint64_t bytes_sent_ WHEELRPC_GUARDED_BY(mu_) = 0, bytes_received_ WHEELRPC_GUARDED_BY(mu_) = 0;
  TimePoint last_message_ WHEELRPC_GUARDED_BY(mu_);
  TimePoint stall_since_ WHEELRPC_GUARDED_BY(mu_);                 // a write waits for credit since (when write_)
  std::optional<TimePoint> last_credit_ WHEELRPC_GUARDED_BY(mu_);  // when the peer's last credit came
  std::optional<StreamTimer> fired_ WHEELRPC_GUARDED_BY(mu_);
  std::chrono::milliseconds fired_elapsed_ WHEELRPC_GUARDED_BY(mu_){0};
  // The timers: one Timeout each, armed lazily (the idle and stall ones
  // re-arm themselves for what is left when they find the watched time moved),
  // made with the first one armed: a stream without timers holds none.
  std::unique_ptr<std::array<timer::Timeout, 4>> timeouts_ WHEELRPC_GUARDED_BY(mu_);
  std::array<bool, 4> armed_ WHEELRPC_GUARDED_BY(mu_){};
};

}  // namespace wheelrpc::rpc::detail
