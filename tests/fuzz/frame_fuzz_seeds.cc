// Writes the seed corpus of frame_decoder_fuzz: a few valid frames of each kind
// (and several back to back), encoded by encode_frame so they stay valid if the
// format changes. The seeds are checked in under tests/fuzz/corpus/frame_decoder/; regenerate
// them with
//   build/fuzz/tests/fuzz/frame_fuzz_seeds tests/fuzz/corpus/frame_decoder
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <wheelrpc/transport/frame.h>

namespace {

using namespace wheelrpc::transport;

constexpr std::uint8_t kHeartbeatFlags = kFlagRequest | kFlagTwoWay | kFlagEvent;

Frame request() {
  Frame f;
  f.header.flags = kFlagRequest | kFlagTwoWay;
  f.header.request_id = 1;
  f.header.deadline_ms = 3000;
  f.method = "echo.Echo";
  f.attachments = {{"trace-id", "4bf92f3577b34da6"}, {"auth", ""}};
  f.payload = std::string("hello\0world", 11);
  return f;
}

Frame response() {
  Frame f;
  f.header.request_id = 1;
  f.payload = "hello";
  return f;
}

Frame error_response() {
  Frame f;
  f.header.request_id = 2;
  f.header.status = 2 /* rpc::Status::method_not_found */;
  f.payload = "no method echo.Nope";
  return f;
}

Frame one_way() {
  Frame f;
  f.header.flags = kFlagRequest;
  f.header.request_id = 3;
  f.method = "log";
  f.payload = "x";
  return f;
}

Frame hello() {
  Frame f;
  f.header.flags = kHeartbeatFlags;
  f.method = "hello";
  f.attachments = {{"version", "1"}, {"heartbeat_ms", "30000"}};
  return f;
}

Frame hello_response() {
  Frame f;
  f.header.flags = kFlagEvent;
  f.attachments = {{"version", "1"}, {"heartbeat_ms", "30000"}};
  return f;
}

Frame heartbeat() {
  Frame f;
  f.header.flags = kHeartbeatFlags;
  f.header.request_id = 4;
  return f;
}

Frame heartbeat_response() {
  Frame f;
  f.header.flags = kFlagEvent;
  f.header.request_id = 4;
  return f;
}

/// A stream's frames (docs/protocol.md, "Streams"): stream_op 1 open, 2
/// message, 3 half-close, 4 credit, 5 end, 6 reset.
Frame stream_frame(std::uint8_t op, bool from_client) {
  Frame f;
  f.header.flags = static_cast<std::uint8_t>(kFlagStream | (from_client ? kFlagRequest : 0));
  f.header.stream_op = op;
  f.header.request_id = 7;
  return f;
}

Frame stream_open() {
  Frame f = stream_frame(1, true);
  f.header.flags |= kFlagTwoWay;
  f.header.deadline_ms = 60000;
  f.method = "/echo.Echo/Chat";
  f.attachments = {{"auth", "token"}};
  return f;
}

Frame stream_message(bool from_client) {
  Frame f = stream_frame(2, from_client);
  f.payload = "chunk";
  return f;
}

Frame stream_credit() {
  Frame f = stream_frame(4, false);
  f.header.deadline_ms = 32768;
  return f;
}

Frame stream_end() {
  Frame f = stream_frame(5, false);
  f.header.status = 16 + 7;  // permission denied
  f.attachments = {{"count", "3"}};
  f.payload = "not for you";
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<std::pair<const char*, std::vector<Frame>>> seeds = {
      {"request", {request()}},
      {"response", {response()}},
      {"error_response", {error_response()}},
      {"one_way", {one_way()}},
      {"hello", {hello()}},
      {"hello_response", {hello_response()}},
      {"heartbeat", {heartbeat()}},
      {"heartbeat_response", {heartbeat_response()}},
      {"pipelined", {hello(), request(), heartbeat(), one_way(), response()}},
      {"stream_open", {stream_open()}},
      {"stream_client", {stream_open(), stream_message(true), stream_frame(3, true), stream_frame(6, true)}},
      {"stream_server", {stream_frame(1, false), stream_message(false), stream_credit(), stream_end()}},
  };
  for (const auto& [name, frames] : seeds) {
    std::string bytes;
    for (const Frame& f : frames) encode_frame(f, bytes);
    const std::string path = dir + "/" + name + ".bin";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
