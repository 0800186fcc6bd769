#pragma once
// Deterministic payloads for the compression tests: text-like (compresses
// well, as JSON or logs do) and random (does not compress).

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace wheelrpc::test {

/// `size` bytes of words from a small vocabulary, spaces and newlines, the
/// same for the same `seed`.
inline std::string text_like(std::size_t size, std::uint32_t seed = 1) {
  static constexpr std::string_view kWords[] = {"request", "response",    "deadline", "stream", "credit",  "wheel",
                                                "timer",   "\"method\":", "{\"id\":", "42",     "echo",    "payload",
                                                "retry",   "the",         "a",        "of",     "channel", "provider"};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::size_t> pick(0, std::size(kWords) - 1);
  std::string out;
  out.reserve(size + 16);
  while (out.size() < size) {
    out += kWords[pick(gen)];
    out += gen() % 8 == 0 ? '\n' : ' ';
  }
  out.resize(size);
  return out;
}

/// `size` random bytes, the same for the same `seed`.
inline std::string random_bytes(std::size_t size, std::uint32_t seed = 2) {
  std::mt19937 gen(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(gen() & 0xff);
  return out;
}

}  // namespace wheelrpc::test
