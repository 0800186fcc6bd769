#pragma once
// Pure encoding and decoding of etcd v3 JSON gateway messages (etcd 3.4,
// paths under /v3). No I/O: every function here is a pure function, safe to
// call from any thread.
//
// The gateway's JSON (protobuf's JSON mapping): keys and values are base64;
// int64 fields are JSON strings ("revision":"2") and are accepted either way;
// fields at their zero value are omitted (a PUT event has no "type", TTL 0 is
// absent).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/error_code.hpp>

namespace wheelrpc::registry::detail {

std::string base64_encode(std::string_view bytes);
/// Standard base64 with padding; nullopt if `text` is not valid base64.
std::optional<std::string> base64_decode(std::string_view text);

/// The `range_end` selecting every key that starts with `prefix`: the prefix
/// with its last byte below 0xff incremented (trailing 0xff bytes dropped);
/// "\0" (every key) for an empty or all-0xff prefix.
std::string prefix_range_end(std::string_view prefix);

struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;  ///< 0: no lease
};

struct RangeResult {
  std::int64_t revision = 0;  ///< the store's revision when the range was read (header.revision)
  std::vector<KeyValue> kvs;
};

struct PutResult {
  std::int64_t revision = 0;
};

struct DeleteResult {
  std::int64_t revision = 0;
  std::int64_t deleted = 0;  ///< number of keys deleted
};

struct LeaseGrantResult {
  std::int64_t id = 0;
  std::chrono::seconds ttl{0};
};

struct KeepAliveResult {
  std::int64_t id = 0;
  /// Remaining TTL; zero (etcd omits the field) means the lease is gone
  /// (expired, revoked or never existed): grant a new one.
  std::chrono::seconds ttl{0};
};

enum class EventType { put, del };

struct WatchEvent {
  EventType type = EventType::put;
  KeyValue kv;  ///< for a delete: the key and its mod_revision (the delete's revision)
};

/// One message of a watch stream (`{"result":{...}}`).
struct WatchResponse {
  std::int64_t revision = 0;  ///< header.revision; absent in a cancellation
  std::int64_t watch_id = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;  ///< > 0: the start revision was compacted (and the watch cancelled)
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

// Request bodies.
std::string encode_put(std::string_view key, std::string_view value, std::int64_t lease);
std::string encode_range_prefix(std::string_view prefix);
std::string encode_delete(std::string_view key);
std::string encode_lease_grant(std::chrono::seconds ttl);
/// `{"ID":"<id>"}`: the body of keepalive and revoke.
std::string encode_lease_id(std::int64_t id);
/// One line `{"create_request":{...}}` for /v3/watch over every key under
/// `prefix` from `start_revision` (0: from now), with a trailing newline.
std::string encode_watch_create(std::string_view prefix, std::int64_t start_revision);

// Response decoders: on failure set `ec` (errc::bad_response, or
// errc::etcd_error for an etcd error object) and `why` (a message quoting what
// was wrong), and leave `out` unspecified.
void decode_put(std::string_view body, PutResult& out, boost::system::error_code& ec, std::string& why);
void decode_range(std::string_view body, RangeResult& out, boost::system::error_code& ec, std::string& why);
void decode_delete(std::string_view body, DeleteResult& out, boost::system::error_code& ec, std::string& why);
void decode_lease_grant(std::string_view body, LeaseGrantResult& out, boost::system::error_code& ec, std::string& why);
void decode_keepalive(std::string_view body, KeepAliveResult& out, boost::system::error_code& ec, std::string& why);
/// A body with only a header (revoke): checks it is a JSON object and not an error.
void decode_empty(std::string_view body, boost::system::error_code& ec, std::string& why);
/// One line of a watch stream.
void decode_watch_response(std::string_view line, WatchResponse& out, boost::system::error_code& ec, std::string& why);

/// The message of an etcd error body (`{"error":..,"message":..,"code":N}`),
/// or nullopt if `body` is not one.
std::optional<std::string> decode_error_message(std::string_view body);

/// Splits a watch response stream into messages: feed it the body's bytes as
/// they arrive (a chunk may hold part of a message or several), take the
/// complete newline-terminated lines out. Empty lines are dropped. Not
/// thread-safe: one stream, one reader.
class WatchStreamSplitter {
 public:
  /// `max_message` bytes: a message longer than this without a newline is an error.
  explicit WatchStreamSplitter(std::size_t max_message = 16 * 1024 * 1024) : max_message_(max_message) {}

  /// Appends `bytes`, returns the complete messages they finish (without the
  /// newline), in order. Sets `overflow` when the unfinished message passes
  /// `max_message` (the caller should drop the stream).
  std::vector<std::string> feed(std::string_view bytes, bool& overflow);

  /// Bytes of an unfinished message held back; non-zero at the end of the
  /// stream means the stream was truncated mid-message.
  std::size_t pending() const noexcept { return buf_.size(); }

 private:
  std::string buf_;
  std::size_t max_message_;
};

}  // namespace wheelrpc::registry::detail
