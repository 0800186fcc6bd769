#include "toxic_json.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <variant>

#include <boost/json/parse.hpp>

#include <wheelrpc/transport/connector.h>

namespace wheelrpc::fault::detail {
namespace json = boost::json;

namespace {

constexpr std::uint64_t kMaxMs = 86'400'000;  // a day, as validate() allows

/// A non-negative whole number ≤ max (an integral double such as 200.0 too).
std::optional<std::uint64_t> whole(const json::value& v, std::uint64_t max) {
  std::uint64_t n = 0;
  if (v.is_uint64()) {
    n = v.get_uint64();
  } else if (v.is_int64()) {
    if (v.get_int64() < 0) return std::nullopt;
    n = static_cast<std::uint64_t>(v.get_int64());
  } else if (v.is_double()) {
    const double d = v.get_double();
    if (!(d >= 0) || d > static_cast<double>(max) || std::floor(d) != d) return std::nullopt;
    n = static_cast<std::uint64_t>(d);
  } else {
    return std::nullopt;
  }
  if (n > max) return std::nullopt;
  return n;
}

std::string out_of_range(std::string_view attribute, std::uint64_t max) {
  std::string e("attribute '");
  e.append(attribute).append("' must be a whole number from 0 to ").append(std::to_string(max));
  return e;
}

/// Reads the attributes object for the toxic type named `type` into `out`.
std::string parse_attributes(std::string_view type, const json::object* attrs, ToxicAttributes& out) {
  struct Field {
    std::string_view name;
    std::uint64_t max;
    std::uint64_t value = 0;
  };
  std::vector<Field> fields;
  if (type == "latency")
    fields = {{"latency", kMaxMs}, {"jitter", kMaxMs}};
  else if (type == "bandwidth")
    fields = {{"rate", 100'000'000}};
  else if (type == "blackhole")
    fields = {};
  else if (type == "reset_peer")
    fields = {{"timeout", kMaxMs}};
  else if (type == "limit_data")
    fields = {{"bytes", std::numeric_limits<std::int64_t>::max()}};
  else if (type == "slicer")
    fields = {{"average_size", 1u << 30}, {"size_variation", 1u << 30}, {"delay", kMaxMs * 1000}};
  else {
    std::string e("unknown toxic type '");
    return e.append(type).append("' (latency, bandwidth, blackhole, reset_peer, limit_data, slicer)");
  }
  if (attrs) {
    for (const auto& kv : *attrs) {
      Field* f = nullptr;
      for (auto& candidate : fields) {
        if (candidate.name == std::string_view(kv.key())) f = &candidate;
      }
      if (!f) {
        std::string e("unknown attribute '");
        return e.append(kv.key()).append("' for type ").append(type);
      }
      const auto n = whole(kv.value(), f->max);
      if (!n) return out_of_range(f->name, f->max);
      f->value = *n;
    }
  }
  const auto ms = [&](std::size_t i) { return std::chrono::milliseconds(static_cast<std::int64_t>(fields[i].value)); };
  if (type == "latency")
    out = Latency{ms(0), ms(1)};
  else if (type == "bandwidth")
    out = Bandwidth{fields[0].value};
  else if (type == "blackhole")
    out = Blackhole{};
  else if (type == "reset_peer")
    out = ResetPeer{ms(0)};
  else if (type == "limit_data")
    out = LimitData{fields[0].value};
  else {
    out = Slicer{static_cast<std::size_t>(fields[0].value), static_cast<std::size_t>(fields[1].value),
                 std::chrono::microseconds(static_cast<std::int64_t>(fields[2].value))};
  }
  return {};
}

json::object attributes_json(const ToxicAttributes& attributes) {
  json::object a;
  std::visit(
      [&](const auto& t) {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, Latency>) {
          a["latency"] = t.latency.count();
          a["jitter"] = t.jitter.count();
        } else if constexpr (std::is_same_v<T, Bandwidth>) {
          a["rate"] = t.rate_kb_per_s;
        } else if constexpr (std::is_same_v<T, ResetPeer>) {
          a["timeout"] = t.timeout.count();
        } else if constexpr (std::is_same_v<T, LimitData>) {
          a["bytes"] = t.bytes;
        } else if constexpr (std::is_same_v<T, Slicer>) {
          a["average_size"] = t.average_size;
          a["size_variation"] = t.size_variation;
          a["delay"] = t.delay.count();
        }
      },
      attributes);
  return a;
}

}  // namespace

std::string parse_toxic(std::string_view body, Toxic& out) {
  boost::system::error_code ec;
  const json::value doc = json::parse(body, ec);
  if (ec) return std::string("malformed JSON: ").append(ec.message());
  const json::object* obj = doc.if_object();
  if (!obj) return "the body must be a JSON object";

  const json::string* type = nullptr;
  const json::object* attrs = nullptr;
  Toxic toxic;
  bool named = false;
  for (const auto& kv : *obj) {
    const std::string_view key = kv.key();
    const json::value& v = kv.value();
    if (key == "name") {
      if (!v.is_string()) return "'name' must be a string";
      toxic.name = std::string(v.get_string());
      named = true;
    } else if (key == "type") {
      if (!v.is_string()) return "'type' must be a string";
      type = &v.get_string();
    } else if (key == "stream") {
      if (!v.is_string() || !parse_stream(v.get_string(), toxic.stream)) {
        return "'stream' must be \"upstream\", \"downstream\" or \"both\"";
      }
    } else if (key == "toxicity") {
      // Toxiproxy's probability per connection; only "always" is supported.
      if (!v.is_number() || v.to_number<double>() != 1.0) return "'toxicity' other than 1 is not supported";
    } else if (key == "attributes") {
      if (!v.is_object()) return "'attributes' must be an object";
      attrs = &v.get_object();
    } else {
      return std::string("unknown field '").append(key).append("'");
    }
  }
  if (!type) return "'type' is required";
  if (std::string e = parse_attributes(*type, attrs, toxic.attributes); !e.empty()) return e;
  if (!named) toxic.name = std::string(type_name(toxic.attributes)).append("_").append(stream_name(toxic.stream));
  if (std::string e = validate(toxic); !e.empty()) return e;
  out = std::move(toxic);
  return {};
}

json::object to_json(const ToxicInfo& info) {
  json::object o;
  o["name"] = info.toxic.name;
  o["type"] = type_name(info.toxic.attributes);
  o["stream"] = stream_name(info.toxic.stream);
  o["toxicity"] = 1;
  o["attributes"] = attributes_json(info.toxic.attributes);
  o["applied"] = info.applied;
  return o;
}

json::object to_json(const ProxyStats& s, const boost::asio::ip::tcp::endpoint& listen,
                     const boost::asio::ip::tcp::endpoint& upstream) {
  json::object o;
  o["up"] = s.up;
  o["listen"] = transport::endpoint_text(listen);
  o["upstream"] = transport::endpoint_text(upstream);
  o["connections_accepted"] = s.connections_accepted;
  o["connections_active"] = s.connections_active;
  o["upstream_connect_failures"] = s.upstream_connect_failures;
  o["bytes_upstream_in"] = s.bytes_upstream_in;
  o["bytes_upstream_out"] = s.bytes_upstream_out;
  o["bytes_downstream_in"] = s.bytes_downstream_in;
  o["bytes_downstream_out"] = s.bytes_downstream_out;
  o["bytes_dropped"] = s.bytes_dropped;
  o["toxics_applied"] = s.toxics_applied;
  o["resets"] = s.resets;
  o["limit_closes"] = s.limit_closes;
  return o;
}

}  // namespace wheelrpc::fault::detail
