#include "base/orca_load_report.h"

#include <algorithm>
#include <bit>

namespace wheelrpc::rpc::detail {

namespace {
// Named apart from the health codec's helpers: a unity build may put both
// files in one translation unit.
namespace orca_wire {

constexpr unsigned kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(static_cast<std::uint8_t>(v) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_tag(std::string& out, std::uint32_t number, unsigned wire_type) {
  put_varint(out, (static_cast<std::uint64_t>(number) << 3) | wire_type);
}

void put_fixed64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(static_cast<std::uint8_t>(v >> (8 * i))));
}

void put_double(std::string& out, double d) { put_fixed64(out, std::bit_cast<std::uint64_t>(d)); }

/// A proto3 double field: left out at its default, +0.0 (protobuf compares
/// the bits: -0.0 is written).
void put_double_field(std::string& out, std::uint32_t number, double d) {
  if (std::bit_cast<std::uint64_t>(d) == 0) return;
  put_tag(out, number, kFixed64);
  put_double(out, d);
}

/// Each entry of a map<string, double>: a length-delimited MapEntry with its
/// key (1, string) and value (2, double), both written, as libprotobuf does.
void put_map(std::string& out, std::uint32_t number, const std::vector<std::pair<std::string, double>>& map) {
  for (const auto& [key, value] : map) {
    std::string entry;
    entry.reserve(key.size() + 12);
    put_tag(entry, 1, kLengthDelimited);
    put_varint(entry, key.size());
    entry.append(key);
    put_tag(entry, 2, kFixed64);
    put_double(entry, value);
    put_tag(out, number, kLengthDelimited);
    put_varint(out, entry.size());
    out.append(entry);
  }
}

/// Reads a varint of at most ten bytes at `pos`; nullopt if truncated or
/// overlong (a tenth byte above 1 would overflow 64 bits).
std::optional<std::uint64_t> get_varint(std::string_view in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos >= in.size()) return std::nullopt;
    const auto byte = static_cast<std::uint8_t>(in[pos++]);
    if (i == 9 && byte > 1) return std::nullopt;
    v |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return v;
  }
  return std::nullopt;
}

double get_double(std::string_view in, std::size_t pos) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(in[pos + i])) << (8 * i);
  return std::bit_cast<double>(v);
}

/// One field as read: its number, wire type and value (the varint, the
/// fixed64's bits as a double, or the bytes of a length-delimited one).
struct Field {
  std::uint32_t number = 0;
  unsigned wire_type = 0;
  std::uint64_t varint = 0;
  double fixed = 0;
  std::string_view bytes;
};

/// Reads the field at `pos`; false on malformed input (groups included: an
/// OrcaLoadReport has none, and skipping one takes nesting we do not need).
bool get_field(std::string_view in, std::size_t& pos, Field& f) {
  const auto key = get_varint(in, pos);
  if (!key || (*key >> 3) == 0 || (*key >> 3) > 0x1fffffff) return false;
  f.number = static_cast<std::uint32_t>(*key >> 3);
  f.wire_type = static_cast<unsigned>(*key & 7);
  switch (f.wire_type) {
    case kVarint: {
      const auto v = get_varint(in, pos);
      if (!v) return false;
      f.varint = *v;
      return true;
    }
    case kFixed64:
      if (in.size() - pos < 8) return false;
      f.fixed = get_double(in, pos);
      pos += 8;
      return true;
    case kLengthDelimited: {
      const auto len = get_varint(in, pos);
      if (!len || *len > in.size() - pos) return false;
      f.bytes = in.substr(pos, static_cast<std::size_t>(*len));
      pos += static_cast<std::size_t>(*len);
      return true;
    }
    case kFixed32:
      if (in.size() - pos < 4) return false;
      pos += 4;
      return true;
    default:  // 3, 4: groups; 6, 7: no such wire type
      return false;
  }
}

/// A map<string, double> entry; a missing key or value is its default, as
/// protobuf reads it.
bool get_map_entry(std::string_view in, std::pair<std::string, double>& out) {
  std::size_t pos = 0;
  Field f;
  while (pos < in.size()) {
    if (!get_field(in, pos, f)) return false;
    if (f.number == 1) {
      if (f.wire_type != kLengthDelimited) return false;
      out.first.assign(f.bytes.data(), f.bytes.size());
    } else if (f.number == 2) {
      if (f.wire_type != kFixed64) return false;
      out.second = f.fixed;
    }
  }
  return true;
}

/// One entry per key, the last one read (protobuf's rule), in the order the
/// kept entries came.
void dedupe(std::vector<std::pair<std::string, double>>& map) {
  if (map.size() < 2) return;
  std::vector<std::size_t> order(map.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return map[a].first < map[b].first; });
  std::vector<bool> keep(map.size(), true);
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    if (map[order[i]].first == map[order[i + 1]].first) keep[order[i]] = false;  // a later one has its key
  }
  std::size_t w = 0;
  for (std::size_t r = 0; r < map.size(); ++r) {
    if (!keep[r]) continue;
    if (w != r) map[w] = std::move(map[r]);
    ++w;
  }
  map.resize(w);
}

}  // namespace orca_wire
}  // namespace

std::optional<double> LoadReport::named_metric(std::string_view name) const {
  for (const auto& [key, value] : named_metrics) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::string encode(const LoadReport& r) {
  std::string out;
  out.reserve(64 + 24 * r.named_metrics.size());
  orca_wire::put_double_field(out, 1, r.cpu_utilization);
  orca_wire::put_double_field(out, 2, r.mem_utilization);
  if (r.rps != 0) {
    orca_wire::put_tag(out, 3, orca_wire::kVarint);
    orca_wire::put_varint(out, r.rps);
  }
  orca_wire::put_map(out, 4, r.request_cost);
  orca_wire::put_map(out, 5, r.utilization);
  orca_wire::put_double_field(out, 6, r.rps_fractional);
  orca_wire::put_double_field(out, 7, r.eps);
  orca_wire::put_map(out, 8, r.named_metrics);
  orca_wire::put_double_field(out, 9, r.application_utilization);
  return out;
}

std::optional<LoadReport> decode(std::string_view in) {
  if (in.size() > kMaxLoadReportBytes) return std::nullopt;
  LoadReport r;
  std::size_t pos = 0;
  orca_wire::Field f;
  while (pos < in.size()) {
    if (!orca_wire::get_field(in, pos, f)) return std::nullopt;
    double* scalar = nullptr;
    std::vector<std::pair<std::string, double>>* map = nullptr;
    switch (f.number) {
      case 1: scalar = &r.cpu_utilization; break;
      case 2: scalar = &r.mem_utilization; break;
      case 3:
        if (f.wire_type != orca_wire::kVarint) return std::nullopt;
        r.rps = f.varint;
        continue;
      case 4: map = &r.request_cost; break;
      case 5: map = &r.utilization; break;
      case 6: scalar = &r.rps_fractional; break;
      case 7: scalar = &r.eps; break;
      case 8: map = &r.named_metrics; break;
      case 9: scalar = &r.application_utilization; break;
      default: continue;  // unknown: skipped
    }
    if (scalar) {
      if (f.wire_type != orca_wire::kFixed64) return std::nullopt;
      *scalar = f.fixed;  // repeated: the last one, as protobuf reads a scalar
    } else {
      if (f.wire_type != orca_wire::kLengthDelimited) return std::nullopt;
      std::pair<std::string, double> entry;
      if (!orca_wire::get_map_entry(f.bytes, entry)) return std::nullopt;
      map->push_back(std::move(entry));
    }
  }
  orca_wire::dedupe(r.request_cost);
  orca_wire::dedupe(r.utilization);
  orca_wire::dedupe(r.named_metrics);
  return r;
}

}  // namespace wheelrpc::rpc::detail
