#pragma once
/// Payloads for the compression benchmarks (rpc_bench's `--content` and its
/// `codec` mode): realistic content of an exact size, made by the benchmark
/// itself from a fixed seed (splitmix64, bench_util.h), so every run and
/// every machine compresses the same bytes.
///
/// `json` and `proto` carry the same records, a page of user accounts as
/// an API returns them (ids, names and e-mail addresses from a small
/// vocabulary, a random UUID, a status and a role, timestamps, prices and
/// scores with two decimals, booleans, tags, a nested address and nested
/// counters): `json` as JSON text, `proto` in protobuf's wire format,
/// written by hand (the schema is in payload_gen.cc). Either is padded to
/// the exact size with a free-text field of words from the vocabulary, and
/// stays a valid document (a JSON object from 22 bytes up, a protobuf
/// message from 2); below that it is the start of one.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wheelrpc::bench {

/// What a payload holds.
enum class Content {
  fill,    ///< 'x' repeated: what rpc_bench always sent (the default)
  json,    ///< JSON text: a page of records
  proto,   ///< protobuf wire format: the same records
  random,  ///< uniform random bytes (incompressible)
  zeros,   ///< zero bytes (as compressible as it gets)
};

/// "fill", "json", "proto", "random", "zeros".
std::string_view to_string(Content c) noexcept;
/// The names above; std::nullopt otherwise.
std::optional<Content> parse_content(std::string_view name) noexcept;

/// `size` bytes of `content`, the same for the same arguments.
std::string make_payload(Content content, std::size_t size, std::uint64_t seed = 42);

}  // namespace wheelrpc::bench
