#include "base/health_codec.h"

#include <optional>

namespace wheelrpc::rpc::detail {

namespace {

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(static_cast<std::uint8_t>(v) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

/// Reads a varint of at most ten bytes at `pos`; nullopt if truncated or
/// overlong.
std::optional<std::uint64_t> get_varint(std::string_view in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return std::nullopt;
    const auto byte = static_cast<std::uint8_t>(in[pos++]);
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  return std::nullopt;
}

/// Walks the fields of a message, calling `on_field(number, wire_type,
/// varint, bytes)` for each; false on malformed input or when `on_field`
/// refuses a field.
template <class OnField>
bool walk_fields(std::string_view in, OnField&& on_field) {
  std::size_t pos = 0;
  while (pos < in.size()) {
    const auto key = get_varint(in, pos);
    if (!key || (*key >> 3) == 0 || (*key >> 3) > 0x1fffffff) return false;
    const auto number = static_cast<std::uint32_t>(*key >> 3);
    const auto wire_type = static_cast<unsigned>(*key & 7);
    std::uint64_t varint = 0;
    std::string_view bytes;
    switch (wire_type) {
      case 0: {  // varint
        const auto v = get_varint(in, pos);
        if (!v) return false;
        varint = *v;
        break;
      }
      case 1:  // fixed64
        if (in.size() - pos < 8) return false;
        pos += 8;
        break;
      case 2: {  // length-delimited
        const auto len = get_varint(in, pos);
        if (!len || *len > in.size() - pos) return false;
        bytes = in.substr(pos, static_cast<std::size_t>(*len));
        pos += static_cast<std::size_t>(*len);
        break;
      }
      case 5:  // fixed32
        if (in.size() - pos < 4) return false;
        pos += 4;
        break;
      default:  // groups (3, 4) and the unused 6, 7: not in these messages
        return false;
    }
    if (!on_field(number, wire_type, varint, bytes)) return false;
  }
  return true;
}

}  // namespace

std::string encode_health_request(std::string_view service) {
  std::string out;
  if (service.empty()) return out;
  out.reserve(service.size() + 6);
  out.push_back(static_cast<char>(0x0a));  // field 1, length-delimited
  put_varint(out, service.size());
  out.append(service);
  return out;
}

bool decode_health_request(std::string_view bytes, std::string& service) {
  service.clear();
  return walk_fields(bytes, [&](std::uint32_t number, unsigned wire_type, std::uint64_t, std::string_view value) {
    // A field 1 of another wire type is an unknown field to protobuf, not an error.
    if (number != 1 || wire_type != 2) return true;
    service.assign(value);
    return true;
  });
}

std::string encode_health_response(std::uint32_t status) {
  std::string out;
  if (status == 0) return out;
  out.push_back(static_cast<char>(0x08));  // field 1, varint
  put_varint(out, status);
  return out;
}

bool decode_health_response(std::string_view bytes, std::uint32_t& status) {
  status = 0;
  return walk_fields(bytes, [&](std::uint32_t number, unsigned wire_type, std::uint64_t varint, std::string_view) {
    if (number != 1 || wire_type != 0) return true;  // unknown to protobuf too
    status = static_cast<std::uint32_t>(varint);     // an enum is an int32 on the wire
    return true;
  });
}

}  // namespace wheelrpc::rpc::detail
