// Writes the seed corpus of http2_server_fuzz: what a client sends after the
// preface, as frames made by support/h2_frames.h (a unary call, a stream,
// control frames, a header block in pieces, HPACK's dynamic table, a
// refused call). The seeds are checked in under tests/fuzz/corpus/http2/;
// regenerate them with
//   build/fuzz/tests/fuzz/http2_fuzz_seeds tests/fuzz/corpus/http2
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "support/h2_frames.h"

namespace {

namespace h2 = wheelrpc::test::h2;
using wheelrpc::test::H2Headers;

H2Headers call(std::string path, const H2Headers& extra = {}) {
  H2Headers h{{":method", "POST"},
              {":scheme", "http"},
              {":authority", "127.0.0.1"},
              {":path", std::move(path)},
              {"content-type", "application/grpc"},
              {"te", "trailers"}};
  h.insert(h.end(), extra.begin(), extra.end());
  return h;
}

std::string message(std::string_view m, bool compressed = false) {
  std::string out(1, compressed ? '\1' : '\0');
  h2::put32(out, static_cast<std::uint32_t>(m.size()));
  return out.append(m);
}

std::vector<std::pair<std::string, std::string>> seeds() {
  const std::string settings = h2::settings({{4, 65535}, {3, 100}});
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("unary",
                   settings + h2::headers(1, call("/fuzz.Echo/Echo"), false) + h2::data(1, message("hello"), true));
  out.emplace_back("bidi", settings + h2::headers(1, call("/fuzz.Echo/Chat"), false) +
                               h2::data(1, message("one") + message("two"), false) + h2::window_update(0, 1 << 16) +
                               h2::window_update(1, 1 << 16) + h2::data(1, message(""), true));
  out.emplace_back("control", settings + h2::settings_ack() + h2::ping() + h2::window_update(0, 1000) +
                                  h2::headers(1, call("/fuzz.Echo/Echo"), false) + h2::rst_stream(1, 8) +
                                  h2::frame(h2::kGoaway, 0, 0, std::string(8, '\0') + "bye"));
  const std::string block = h2::block(call("/fuzz.Echo/Echo", {{"grpc-timeout", "100m"}, {"x-id-bin", "AAEC"}}));
  out.emplace_back("continuation", settings + h2::frame(h2::kHeaders, 0, 3, block.substr(0, 20)) +
                                       h2::frame(h2::kContinuation, 0, 3, block.substr(20, 30)) +
                                       h2::frame(h2::kContinuation, h2::kEndHeaders, 3, block.substr(50)) +
                                       h2::data(3, message("x"), true));
  out.emplace_back(
      "hpack_dynamic",
      settings +
          h2::frame(h2::kHeaders, h2::kEndHeaders, 1,
                    h2::block(call("/fuzz.Echo/Echo")) + h2::literal("x-big", std::string(100, 'b'), true)) +
          h2::data(1, message("a"), true) +
          h2::frame(h2::kHeaders, h2::kEndHeaders, 3,
                    h2::block(call("/fuzz.Echo/Echo")) + h2::indexed(62) + h2::indexed(62)) +
          h2::data(3, message("b"), true));
  out.emplace_back("refused", settings + h2::headers(1, call("/fuzz.Echo/Echo", {{"grpc-encoding", "snappy"}}), false) +
                                  h2::data(1, message("zz", true), true) +
                                  h2::headers(3, {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}}, true) +
                                  h2::headers(5, call("/fuzz.Echo/Echo"), false) +
                                  h2::data(5, std::string_view("\0\xff\xff\xff\xff", 5), false));
  out.emplace_back("gzip_flag",
                   settings + h2::headers(1, call("/fuzz.Echo/Echo", {{"grpc-encoding", "gzip"}}), false) +
                       h2::data(1, message(std::string_view("\x1f\x8b\x08\0\0\0\0\0\0\x03", 10), true), true));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
    return 2;
  }
  for (const auto& [name, bytes] : seeds()) {
    std::ofstream(std::string(argv[1]) + "/" + name + ".bin", std::ios::binary) << bytes;
  }
  return 0;
}
