#pragma once
// A small HTTP/2 client for tests of the server's gRPC wire: nghttp2's
// client session over a blocking loopback socket, driven by the test's own
// thread (no thread of its own: `wait` reads and writes until a condition
// holds or its limit passes). It says exactly what a test asks (any
// headers, any bytes as DATA, RST_STREAM, PING, window updates or none) and
// records what the server answered, per stream and for the connection.
// Not thread-safe; one per test thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct nghttp2_session;

namespace wheelrpc::test {

using H2Headers = std::vector<std::pair<std::string, std::string>>;

/// What the server sent on one stream.
struct H2Stream {
  H2Headers headers;   ///< the first HEADERS (the response's, or a trailers-only answer)
  H2Headers trailers;  ///< a second HEADERS
  std::string data;    ///< the DATA bytes, in order
  bool closed = false;
  std::uint32_t close_code = 0;  ///< the stream's close code (RST_STREAM's, NO_ERROR otherwise)
  bool reset = false;            ///< the server sent RST_STREAM
  std::uint32_t reset_code = 0;

  /// The value of `name` in the headers, or in the trailers, or nothing.
  std::optional<std::string> header(std::string_view name) const;
  std::optional<std::string> trailer(std::string_view name) const;
  /// grpc-status, wherever it came (trailers, or a trailers-only answer); -1: none.
  int grpc_status() const;
  /// grpc-message, percent-decoded by the test itself (see grpc_wire_test).
  std::string grpc_message() const;
  /// The gRPC messages in `data` (their 5-byte prefixes taken off); a
  /// partial one at the end is left out.
  std::vector<std::string> messages() const;
};

/// A GOAWAY the server sent.
struct H2Goaway {
  std::int32_t last_stream_id = 0;
  std::uint32_t error_code = 0;
  std::string debug;
};

struct H2ClientOptions {
  /// SETTINGS_INITIAL_WINDOW_SIZE the client announces (what the server may
  /// send on a stream before the client's WINDOW_UPDATE).
  std::uint32_t stream_window = 1u << 20;
  /// The connection's window (65535 is HTTP/2's initial one; more is
  /// opened with a WINDOW_UPDATE on stream 0).
  std::uint32_t connection_window = 16u << 20;
  /// false: the client never opens a window by itself; `consume` does.
  bool auto_window_update = true;
};

/// The 5-byte prefix of a gRPC message and the message.
std::string grpc_frame(std::string_view message, bool compressed = false);
/// The request headers of a gRPC call to `path` (POST, http, 127.0.0.1,
/// content-type application/grpc, te trailers), then `extra`.
H2Headers grpc_request_headers(std::string_view path, const H2Headers& extra = {});

class H2Client {
 public:
  /// Connects to 127.0.0.1:port and sends the preface and SETTINGS.
  explicit H2Client(std::uint16_t port, H2ClientOptions options = {});
  ~H2Client();
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  /// The socket is connected (and not yet seen closed).
  bool connected() const noexcept { return fd_ >= 0 && !eof_; }

  /// Opens a stream with `headers` (in the order given, nothing added) and
  /// sends `body` on it as DATA; END_STREAM after it when `end_stream`.
  /// Returns the stream's id (negative: nghttp2 refused).
  std::int32_t request(const H2Headers& headers, std::string body = {}, bool end_stream = true);
  /// A unary gRPC call: `message` in one gRPC frame, then END_STREAM.
  std::int32_t grpc_call(std::string_view path, std::string_view message, const H2Headers& extra = {});
  /// More DATA on an open stream (END_STREAM after it when `end_stream`).
  void send(std::int32_t stream_id, std::string_view bytes, bool end_stream = false);
  void reset(std::int32_t stream_id, std::uint32_t error_code);
  void ping();
  /// Opens the stream's and the connection's windows by `bytes` (with
  /// auto_window_update off: what the test's "application" read).
  void consume(std::int32_t stream_id, std::size_t bytes);
  /// Bytes written as they are, past the session (frames the session would
  /// never write); after what the session had queued.
  void write_raw(std::string_view bytes);

  /// Writes what is queued and reads until `done()` holds, the server
  /// closes the connection, or `limit` passes; returns `done()`.
  bool wait(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(20));
  /// Until the stream is closed (its answer complete).
  bool wait_closed(std::int32_t stream_id, std::chrono::milliseconds limit = std::chrono::seconds(20));
  /// Until the server closes the connection.
  bool wait_eof(std::chrono::milliseconds limit = std::chrono::seconds(20));

  H2Stream& stream(std::int32_t stream_id) { return streams_[stream_id]; }
  const std::vector<H2Goaway>& goaways() const noexcept { return goaways_; }
  int ping_acks() const noexcept { return ping_acks_; }
  /// PINGs the server sent (not ACKs), by their opaque data.
  const std::vector<std::string>& server_pings() const noexcept { return server_pings_; }
  /// The server closed the connection (EOF or a reset).
  bool eof() const noexcept { return eof_; }
  /// nghttp2's error if the session failed on what the server sent.
  int session_error() const noexcept { return session_error_; }

  struct Callbacks;

 private:
  struct Outgoing {
    std::string bytes;
    std::size_t pos = 0;
    bool end = false;
  };
  void flush();
  void read_some(std::chrono::milliseconds limit);

  int fd_ = -1;
  bool eof_ = false;
  int session_error_ = 0;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, H2Stream> streams_;
  std::map<std::int32_t, Outgoing> out_;
  std::vector<H2Goaway> goaways_;
  std::vector<std::string> server_pings_;
  int ping_acks_ = 0;
};

}  // namespace wheelrpc::test
