#include "etcd_json.h"

#include <charconv>

#include <boost/beast/core/detail/base64.hpp>
#include <boost/json.hpp>

#include <wheelrpc/registry/errc.h>

namespace wheelrpc::registry::detail {
namespace json = boost::json;
namespace b64 = boost::beast::detail::base64;

std::string base64_encode(std::string_view bytes) {
  std::string out(b64::encoded_size(bytes.size()), '\0');
  out.resize(b64::encode(out.data(), bytes.data(), bytes.size()));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  while (pad < text.size() && pad < 2 && text[text.size() - 1 - pad] == '=') ++pad;
  std::string out(b64::decoded_size(text.size()), '\0');
  const auto [written, read] = b64::decode(out.data(), text.data(), text.size());
  // Beast stops at the first '=' or invalid character: everything but the
  // padding must have been read.
  if (read != text.size() - pad) return std::nullopt;
  out.resize(written);
  return out;
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

namespace {

// A decoding failure, carried up to the public decoder (never out of it).
struct DecodeError {
  std::string why;
};

const json::object& as_object(const json::value& v, std::string_view what) {
  if (!v.is_object()) throw DecodeError{std::string(what) + " is not a JSON object"};
  return v.get_object();
}

// An int64 field: a JSON string of digits (the gateway's form), a JSON
// integer, or absent (zero).
std::int64_t get_int64(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->get_uint64());
  if (v->is_string()) {
    const auto& s = v->get_string();
    std::int64_t out = 0;
    const auto [ptr, rc] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (!s.empty() && rc == std::errc{} && ptr == s.data() + s.size()) return out;
  }
  throw DecodeError{"field '" + std::string(field) + "' is not an int64: " + json::serialize(*v)};
}

bool get_bool(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return false;
  if (!v->is_bool()) throw DecodeError{"field '" + std::string(field) + "' is not a bool"};
  return v->get_bool();
}

std::string get_string(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_string()) throw DecodeError{"field '" + std::string(field) + "' is not a string"};
  return std::string(v->get_string());
}

std::string get_bytes(const json::object& o, std::string_view field) {
  const std::string text = get_string(o, field);
  auto bytes = base64_decode(text);
  if (!bytes) throw DecodeError{"field '" + std::string(field) + "' is not base64: \"" + text + "\""};
  return std::move(*bytes);
}

std::int64_t header_revision(const json::object& o) {
  const auto* h = o.if_contains("header");
  if (h == nullptr) return 0;
  return get_int64(as_object(*h, "header"), "revision");
}

KeyValue decode_kv(const json::value& v) {
  const auto& o = as_object(v, "kv");
  KeyValue kv;
  kv.key = get_bytes(o, "key");
  kv.value = get_bytes(o, "value");
  kv.create_revision = get_int64(o, "create_revision");
  kv.mod_revision = get_int64(o, "mod_revision");
  kv.version = get_int64(o, "version");
  kv.lease = get_int64(o, "lease");
  return kv;
}

std::optional<std::string> error_message(const json::object& o) {
  const auto* e = o.if_contains("error");
  if (e == nullptr) return std::nullopt;
  // Unary errors: {"error":"...","message":"...","code":5}; stream errors:
  // {"error":{"grpc_code":14,"http_code":503,"message":"..."}}.
  if (e->is_string()) {
    std::string msg(e->get_string());
    if (const auto* c = o.if_contains("code"); c != nullptr && c->is_int64())
      msg += " (code " + std::to_string(c->get_int64()) + ")";
    return msg;
  }
  if (e->is_object()) {
    if (const auto* m = e->get_object().if_contains("message"); m != nullptr && m->is_string())
      return std::string(m->get_string());
    return json::serialize(*e);
  }
  return json::serialize(*e);
}

std::string excerpt(std::string_view body) {
  constexpr std::size_t kMax = 120;
  if (body.size() <= kMax) return std::string(body);
  return std::string(body.substr(0, kMax)) + "...";
}

// Parses `body` as a JSON object, turns an etcd error object into
// errc::etcd_error, and hands the object to `fill`; any DecodeError becomes
// errc::bad_response.
template <class Fill>
void decode(std::string_view body, boost::system::error_code& ec, std::string& why, Fill&& fill) {
  ec.clear();
  why.clear();
  json::error_code jec;
  const json::value v = json::parse(body, jec);
  if (jec) {
    ec = make_error_code(errc::bad_response);
    why = "invalid JSON (" + jec.message() + "): " + excerpt(body);
    return;
  }
  try {
    const auto& o = as_object(v, "answer");
    if (auto msg = error_message(o)) {
      ec = make_error_code(errc::etcd_error);
      why = *msg;
      return;
    }
    fill(o);
  } catch (const DecodeError& e) {
    ec = make_error_code(errc::bad_response);
    why = e.why + ": " + excerpt(body);
  }
}

}  // namespace

std::string encode_put(std::string_view key, std::string_view value, std::int64_t lease) {
  json::object o;
  o["key"] = base64_encode(key);
  o["value"] = base64_encode(value);
  if (lease != 0) o["lease"] = std::to_string(lease);
  return json::serialize(o);
}

std::string encode_range_prefix(std::string_view prefix) {
  json::object o;
  o["key"] = base64_encode(prefix.empty() ? std::string_view("\0", 1) : prefix);
  o["range_end"] = base64_encode(prefix_range_end(prefix));
  return json::serialize(o);
}

std::string encode_delete(std::string_view key) {
  json::object o;
  o["key"] = base64_encode(key);
  return json::serialize(o);
}

std::string encode_lease_grant(std::chrono::seconds ttl) {
  json::object o;
  o["TTL"] = std::to_string(ttl.count());
  return json::serialize(o);
}

std::string encode_lease_id(std::int64_t id) {
  json::object o;
  o["ID"] = std::to_string(id);
  return json::serialize(o);
}

std::string encode_watch_create(std::string_view prefix, std::int64_t start_revision) {
  json::object c;
  c["key"] = base64_encode(prefix.empty() ? std::string_view("\0", 1) : prefix);
  c["range_end"] = base64_encode(prefix_range_end(prefix));
  if (start_revision > 0) c["start_revision"] = std::to_string(start_revision);
  json::object o;
  o["create_request"] = std::move(c);
  return json::serialize(o) + "\n";
}

void decode_put(std::string_view body, PutResult& out, boost::system::error_code& ec, std::string& why) {
  decode(body, ec, why, [&](const json::object& o) { out.revision = header_revision(o); });
}

void decode_range(std::string_view body, RangeResult& out, boost::system::error_code& ec, std::string& why) {
  decode(body, ec, why, [&](const json::object& o) {
    out.revision = header_revision(o);
    out.kvs.clear();
    if (const auto* kvs = o.if_contains("kvs"); kvs != nullptr && !kvs->is_null()) {
      if (!kvs->is_array()) throw DecodeError{"field 'kvs' is not an array"};
      for (const auto& kv : kvs->get_array()) out.kvs.push_back(decode_kv(kv));
    }
  });
}

void decode_delete(std::string_view body, DeleteResult& out, boost::system::error_code& ec, std::string& why) {
  decode(body, ec, why, [&](const json::object& o) {
    out.revision = header_revision(o);
    out.deleted = get_int64(o, "deleted");
  });
}

void decode_lease_grant(std::string_view body, LeaseGrantResult& out, boost::system::error_code& ec, std::string& why) {
  decode(body, ec, why, [&](const json::object& o) {
    out.id = get_int64(o, "ID");
    out.ttl = std::chrono::seconds(get_int64(o, "TTL"));
    if (out.id == 0) throw DecodeError{"lease grant without an ID"};
  });
}

void decode_keepalive(std::string_view body, KeepAliveResult& out, boost::system::error_code& ec, std::string& why) {
  decode(body, ec, why, [&](const json::object& o) {
    const auto* r = o.if_contains("result");
    if (r == nullptr) throw DecodeError{"keepalive answer without 'result'"};
    const auto& result = as_object(*r, "result");
    out.id = get_int64(result, "ID");
    out.ttl = std::chrono::seconds(std::max<std::int64_t>(0, get_int64(result, "TTL")));
  });
}

void decode_empty(std::string_view body, boost::system::error_code& ec, std::string& why) {
  decode(body, ec, why, [](const json::object&) {});
}

void decode_watch_response(std::string_view line, WatchResponse& out, boost::system::error_code& ec, std::string& why) {
  decode(line, ec, why, [&](const json::object& o) {
    const auto* r = o.if_contains("result");
    if (r == nullptr) throw DecodeError{"watch message without 'result'"};
    const auto& result = as_object(*r, "result");
    out = WatchResponse{};
    out.revision = header_revision(result);
    out.watch_id = get_int64(result, "watch_id");
    out.created = get_bool(result, "created");
    out.canceled = get_bool(result, "canceled");
    out.compact_revision = get_int64(result, "compact_revision");
    out.cancel_reason = get_string(result, "cancel_reason");
    if (const auto* evs = result.if_contains("events"); evs != nullptr && !evs->is_null()) {
      if (!evs->is_array()) throw DecodeError{"field 'events' is not an array"};
      for (const auto& ev : evs->get_array()) {
        const auto& e = as_object(ev, "event");
        WatchEvent event;
        // A PUT is the zero value of the enum, so the gateway omits its "type".
        const std::string type = get_string(e, "type");
        if (type.empty() || type == "PUT") {
          event.type = EventType::put;
        } else if (type == "DELETE") {
          event.type = EventType::del;
        } else {
          throw DecodeError{"unknown event type \"" + type + "\""};
        }
        const auto* kv = e.if_contains("kv");
        if (kv == nullptr) throw DecodeError{"event without 'kv'"};
        event.kv = decode_kv(*kv);
        out.events.push_back(std::move(event));
      }
    }
  });
}

std::optional<std::string> decode_error_message(std::string_view body) {
  json::error_code jec;
  const json::value v = json::parse(body, jec);
  if (jec || !v.is_object()) return std::nullopt;
  return error_message(v.get_object());
}

std::vector<std::string> WatchStreamSplitter::feed(std::string_view bytes, bool& overflow) {
  overflow = false;
  std::vector<std::string> out;
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      buf_.append(bytes);
      break;
    }
    buf_.append(bytes.substr(0, nl));
    bytes.remove_prefix(nl + 1);
    if (!buf_.empty() && buf_.back() == '\r') buf_.pop_back();
    if (!buf_.empty()) out.push_back(std::move(buf_));
    buf_.clear();
  }
  if (buf_.size() > max_message_) overflow = true;
  return out;
}

}  // namespace wheelrpc::registry::detail
