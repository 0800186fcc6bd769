/// gRPC C++ streaming (system "grpc_cpp", workload "stream"): the peer of
/// wheelrpc's `rpc_bench stream`. Service: stream.proto beside this file.
///
///   grpc_stream server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--host 127.0.0.1]
///   grpc_stream client --port N [--streams 1] [--payload 64] [--mode echo|oneway|idle]
///                      [--warmup 1] [--duration 10] [--server-pid PID] [--host 127.0.0.1]
///
/// Server: the async completion-queue API, one completion queue polled by the
/// main thread, as grpc_echo. (Measured against it on 2 cores, the callback
/// API, a ServerBidiReactor per stream run on gRPC's threads, echoed 8-12 %
/// fewer messages/s at 1 and 128 streams, its server using 45 % more CPU at 1;
/// one way, both varied from 100 to 225 thousand messages/s from run to run,
/// neither ahead.) Chat writes every message back on its stream (read, write
/// it, read the next); Sink counts the messages and, when the client
/// half-closes, replies with the count. Both send their initial metadata at
/// once, so that a client knows its stream reached the server. One stream of
/// each method is kept requested: each arrival requests the next, so that the
/// server's memory grows with its streams.
///
/// Client: the async completion-queue API, one thread polling one completion
/// queue, one channel (one HTTP/2 connection), connected before anything
/// starts. It opens --streams streams; one is ready when its start completed
/// and the server's initial metadata arrived; the clock starts when all are.
/// Each message carries its stream's sequence number in its first 8 bytes.
///   echo:   every Chat stream keeps one message in flight: write it, once
///           written read its echo (it must be the message), write the next.
///           Measured: the echoes completed in [warm-up, warm-up + duration)
///           and their round trip (from the write to the echo's arrival).
///   oneway: every Sink stream writes back to back, the next write when the
///           previous one completed. Measured: the writes completed in the
///           window. At the end each stream half-closes, and the server's count
///           must equal the writes (`check`).
///   idle:   every Chat stream exchanges one message, then keeps a read pending
///           and sends nothing. 1 s after the last exchange, the RSS of both
///           processes less their RSS before the streams opened, / --streams,
///           is what an open stream costs; the CPU is over that second.
///           --warmup and --duration are not used. The server's figure is
///           only right from a fresh server: one that served as many streams
///           before reuses the memory they freed (about 0 bytes per stream).
/// The CPU of both processes is sampled as grpc_echo does: at the first
/// completion at or after each edge of the window. After the window a stream
/// finishes its message in flight, half-closes, and must end with status OK.
/// The client prints one JSON line (its fields: README.md). Exit status 1 if a
/// stream failed or `check` is not ok, 2 on a usage error.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "peer_util.h"
#include "stream.grpc.pb.h"

namespace {

using peers::stream::Blob;
using peers::stream::Count;
using peers::stream::Stream;

/// How long the client waits for its channel to be ready.
constexpr std::chrono::seconds kConnectTimeout{5};
/// How long idle streams stay open before the RSS is read.
constexpr std::chrono::seconds kIdleSettle{1};

/// What a completion is, on either side: an operation's tag is the address of
/// its stream with the Event in the low bits.
enum Event : std::uintptr_t { kStarted, kMetadata, kWritten, kRead, kWritesDone, kFinished };
constexpr std::uintptr_t kEventMask = 7;  ///< the streams are aligned to 8 bytes at least

template <class T>
void* tag(T* stream, Event event) {
  static_assert(alignof(T) > kEventMask);
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(stream) | event);
}
template <class T>
std::pair<T*, Event> untag(void* tag) {
  const auto bits = reinterpret_cast<std::uintptr_t>(tag);
  return {reinterpret_cast<T*>(bits & ~kEventMask), static_cast<Event>(bits & kEventMask)};
}

// ---- server ---------------------------------------------------------------------

/// A stream the server serves, from its request to its end; each of its
/// operations is tagged with its address and an Event.
class ServerStream {
 public:
  virtual ~ServerStream() = default;
  /// Handles the completion of one of its operations; deletes it once it ended.
  virtual void complete(Event event, bool ok) = 0;
};

/// Chat (Responder: a ServerAsyncReaderWriter) reads a message, writes it
/// back, reads the next; Sink (a ServerAsyncReader) reads and counts. Both
/// end when the client half-closes (or goes away), Sink replying with its count.
template <class Responder>
class ServedStream final : public ServerStream {
  static constexpr bool kChat = std::is_same_v<Responder, grpc::ServerAsyncReaderWriter<Blob, Blob>>;

 public:
  ServedStream(Stream::AsyncService& service, grpc::ServerCompletionQueue& cq) : service_(service), cq_(cq) {
    if constexpr (kChat) {
      service_.RequestChat(&context_, &stream_, &cq_, &cq_, op(kStarted));
    } else {
      service_.RequestSink(&context_, &stream_, &cq_, &cq_, op(kStarted));
    }
  }

  void complete(Event event, bool ok) override {
    --pending_;
    if (event == kStarted) {
      if (!ok) return delete this;      // the server is shutting down: no stream came
      new ServedStream(service_, cq_);  // the next stream of the method
      stream_.SendInitialMetadata(op(kMetadata));
      return stream_.Read(&message_, op(kRead));
    }
    if (event == kRead && ok) {
      if constexpr (kChat) return stream_.Write(message_, op(kWritten));
      ++received_;
      return stream_.Read(&message_, op(kRead));
    }
    if (event == kWritten && ok) return stream_.Read(&message_, op(kRead));
    if (event == kRead || event == kWritten) {
      if constexpr (kChat) {
        stream_.Finish(grpc::Status::OK, op(kFinished));
      } else {
        reply_.set_messages(received_);
        stream_.Finish(reply_, grpc::Status::OK, op(kFinished));
      }
      ending_ = true;
    }
    if (ending_ && pending_ == 0) delete this;
  }

 private:
  void* op(Event event) {
    ++pending_;
    return tag(static_cast<ServerStream*>(this), event);
  }

  Stream::AsyncService& service_;
  grpc::ServerCompletionQueue& cq_;
  grpc::ServerContext context_;
  Responder stream_{&context_};
  Blob message_;
  Count reply_;
  std::uint64_t received_ = 0;
  int pending_ = 0;
  bool ending_ = false;  ///< Finish was called
};

int server(const peers::Flags& flags) {
  const std::string address = flags.str("host", "127.0.0.1") + ":" + std::to_string(flags.integer("port", 0, 0, 65535));
  peers::exit_after(flags.seconds("lifetime", 0));
  Stream::AsyncService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  const std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  const std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
  if (!grpc_server || port == 0) {
    std::fprintf(stderr, "grpc_stream server: cannot listen on %s\n", address.c_str());
    return 1;
  }
  peers::write_port_file(flags.str("port-file", ""), static_cast<unsigned>(port));
  new ServedStream<grpc::ServerAsyncReaderWriter<Blob, Blob>>(service, *cq);  // Chat
  new ServedStream<grpc::ServerAsyncReader<Count, Blob>>(service, *cq);       // Sink
  void* got = nullptr;
  bool ok = false;
  while (cq->Next(&got, &ok)) {  // until killed
    const auto [stream, event] = untag<ServerStream>(got);
    stream->complete(event, ok);
  }
  return 0;
}

// ---- client ---------------------------------------------------------------------

enum class Mode { kEcho, kOneway, kIdle };

/// One stream of the client; its operations are tagged with its address and an Event.
struct StreamState {
  std::optional<grpc::ClientContext> context;
  // The call: Chat's (echo, idle) or Sink's (oneway); they live in the call's arena.
  std::unique_ptr<grpc::ClientAsyncReaderWriter<Blob, Blob>> chat;
  std::unique_ptr<grpc::ClientAsyncWriter<Blob>> sink;
  Blob out;     ///< the message in flight
  Blob in;      ///< its echo
  Count count;  ///< Sink's reply
  grpc::Status status;
  std::uint64_t sent = 0;    ///< messages written (Chat: and echoed)
  std::int64_t sent_ns = 0;  ///< when the message in flight was written
  int pending = 0;           ///< operations whose completion has not been polled
  bool closing = false;      ///< half-closed
  bool behind = false;       ///< has not reached the step run() waits for
  bool failed = false;
};

class StreamClient {
 public:
  StreamClient(const peers::Flags& flags, Stream::Stub& stub)
      : stub_(stub),
        mode_name_(flags.str("mode", "echo")),
        streams_(static_cast<std::size_t>(flags.integer("streams", 1, 1, 100000))),
        payload_(static_cast<int>(flags.integer("payload", 64, 8, 16 << 20))),
        warmup_s_(flags.seconds("warmup", 1)),
        duration_s_(flags.seconds("duration", 10)),
        server_pid_(static_cast<pid_t>(flags.integer("server-pid", 0, 0, 1 << 30))) {
    mode_ = mode_name_ == "echo"     ? Mode::kEcho
            : mode_name_ == "oneway" ? Mode::kOneway
            : mode_name_ == "idle"   ? Mode::kIdle
                                     : throw peers::UsageError("--mode takes echo, oneway or idle");
    if (!(duration_s_ > 0)) throw peers::UsageError("--duration must be > 0");
  }

  int run() {
    const long client_rss0 = peers::rss_bytes();
    const long server_rss0 = server_rss();
    for (StreamState& s : streams_) open(s);
    wait_for_all();  // every stream ready
    if (mode_ != Mode::kIdle) {
      t_measure_ = peers::now_ns() + static_cast<std::int64_t>(warmup_s_ * 1e9);
      t_end_ = t_measure_ + static_cast<std::int64_t>(duration_s_ * 1e9);
    }
    for (StreamState& s : streams_) {
      if (!s.failed) send(s);
    }
    if (mode_ == Mode::kIdle) {
      wait_for_all();  // every stream exchanged its message
      const auto cpu0 = cpu_now();
      std::this_thread::sleep_for(kIdleSettle);
      set_cpu(cpu0, cpu_now());
      client_rss_ = per_stream(client_rss0, peers::rss_bytes());
      server_rss_ = per_stream(server_rss0, server_rss());
      for (StreamState& s : streams_) {
        if (!s.failed) close(s);
      }
    }
    poll_until([] { return false; });  // until no operation is pending: every stream ended
    for (StreamState& s : streams_) {  // before their contexts, whose call arenas hold them
      s.chat.reset();
      s.sink.reset();
    }
    cq_.Shutdown();
    void* got = nullptr;
    bool ok = false;
    while (cq_.Next(&got, &ok)) {
    }
    return report();
  }

 private:
  /// The tag of an operation of `s`, counted as pending.
  void* op(StreamState& s, Event event) {
    ++pending_;
    ++s.pending;
    return tag(&s, event);
  }
  /// Calls `f` with the stream's call object: Sink's writer or Chat's reader-writer.
  template <class F>
  void call(StreamState& s, F f) {
    if (s.sink) return f(*s.sink);
    f(*s.chat);
  }

  /// Polls the completion queue until `done()` or no operation is pending.
  template <class Done>
  void poll_until(Done done) {
    void* got = nullptr;
    bool ok = false;
    while (!done() && pending_ > 0 && cq_.Next(&got, &ok)) {
      --pending_;
      const auto [stream, event] = untag<StreamState>(got);
      --stream->pending;
      on_event(*stream, event, ok);
    }
  }

  /// Marks every live stream behind, then polls until none is.
  void wait_for_all() {
    for (StreamState& s : streams_) {
      s.behind = !s.failed;
      behind_ += s.behind ? 1 : 0;
    }
    poll_until([this] { return behind_ == 0; });
  }
  void caught_up(StreamState& s) {
    if (!s.behind) return;
    s.behind = false;
    --behind_;
  }

  void open(StreamState& s) {
    s.context.emplace();
    s.out.set_payload(std::string(static_cast<std::size_t>(payload_), 'x'));
    if (mode_ == Mode::kOneway) {
      s.sink = stub_.PrepareAsyncSink(&*s.context, &s.count, &cq_);
    } else {
      s.chat = stub_.PrepareAsyncChat(&*s.context, &cq_);
    }
    call(s, [&](auto& c) {
      c.StartCall(op(s, kStarted));
      c.ReadInitialMetadata(op(s, kMetadata));
    });
  }

  /// Writes the stream's next message (on Chat, its echo is read once written).
  void send(StreamState& s) {
    std::memcpy(s.out.mutable_payload()->data(), &s.sent, sizeof s.sent);
    s.sent_ns = peers::now_ns();
    call(s, [&](auto& c) { c.Write(s.out, op(s, kWritten)); });
  }

  /// Half-closes the stream; Finish follows once no other operation is pending.
  void close(StreamState& s) {
    s.closing = true;
    call(s, [&](auto& c) { c.WritesDone(op(s, kWritesDone)); });
  }
  void finish_if_quiet(StreamState& s) {
    if (s.pending == 0) call(s, [&](auto& c) { c.Finish(&s.status, op(s, kFinished)); });
  }

  void on_event(StreamState& s, Event event, bool ok) {
    const std::int64_t now = peers::now_ns();
    if (!measuring_ && now >= t_measure_) {
      measuring_ = true;
      window_start_ = cpu_now();
    }
    if (!ended_ && now >= t_end_) {
      ended_ = true;
      set_cpu(window_start_, cpu_now());
    }
    if (s.failed) return;  // cancelled: its operations drain
    const bool in_window = measuring_ && !ended_;
    switch (event) {
      case kStarted:  // StartCall's batch sends the initial metadata: no write before it completes
      case kMetadata:
        if (!ok) return fail(s, event == kStarted ? "the stream did not start" : "no initial metadata from the server");
        return s.pending == 0 ? caught_up(s) : void();  // ready once both completed
      case kWritten:
        if (!ok) return fail(s, "a write failed");
        if (s.chat) return s.chat->Read(&s.in, op(s, kRead));
        ++s.sent;
        messages_ += in_window ? 1 : 0;
        return now >= t_end_ ? close(s) : send(s);
      case kRead:
        if (!ok) return s.closing ? finish_if_quiet(s) : fail(s, "the stream ended early");
        if (s.in.payload() != s.out.payload() || (mode_ == Mode::kIdle && s.sent > 0)) {  // idle: one only
          return fail(s, "a message that is not the echo");
        }
        return echoed(s, now, in_window);
      case kWritesDone: return ok ? finish_if_quiet(s) : fail(s, "the half-close failed");
      case kFinished:
        if (!s.status.ok()) {
          return fail(s, "status " + std::to_string(s.status.error_code()) + " " + s.status.error_message());
        }
        server_count_ += s.count.messages();
        client_count_ += s.sent;
        return;
    }
  }

  /// The message in flight on a Chat stream came back.
  void echoed(StreamState& s, std::int64_t now, bool in_window) {
    ++s.sent;
    if (mode_ == Mode::kIdle) {  // its one exchange: stay open with a read pending
      ++messages_;
      s.chat->Read(&s.in, op(s, kRead));
      return caught_up(s);
    }
    if (in_window) {
      ++messages_;
      latency_.record(static_cast<std::uint64_t>(now - s.sent_ns));
    }
    now >= t_end_ ? close(s) : send(s);
  }

  void fail(StreamState& s, const std::string& why) {
    s.failed = true;
    caught_up(s);
    if (errors_++ == 0) std::fprintf(stderr, "grpc_stream client: first failed stream: %s\n", why.c_str());
    s.context->TryCancel();
  }

  std::pair<double, double> cpu_now() const {
    return {peers::process_cpu_s(), server_pid_ > 0 ? peers::other_process_cpu_s(server_pid_) : -1.0};
  }
  void set_cpu(std::pair<double, double> start, std::pair<double, double> end) {
    client_cpu_s_ = end.first - start.first;
    server_cpu_s_ = start.second < 0 || end.second < 0 ? -1 : end.second - start.second;
  }
  long server_rss() const {
    const long kib =
        server_pid_ > 0 ? peers::status_field("/proc/" + std::to_string(server_pid_) + "/status", "VmRSS") : -1;
    return kib < 0 ? -1 : kib * 1024;
  }
  double per_stream(long before, long after) const {
    return before < 0 || after < 0 ? -1 : static_cast<double>(after - before) / static_cast<double>(streams_.size());
  }

  int report() const {
    peers::Check check;
    check.expect(errors_ == 0, std::to_string(errors_) + " of " + std::to_string(streams_.size()) + " streams failed");
    if (mode_ != Mode::kIdle) check.expect(messages_ > 0, "no message completed in the window");
    if (mode_ == Mode::kOneway) {
      check.expect(server_count_ == client_count_, "the server counted " + std::to_string(server_count_) +
                                                       " messages, the client wrote " + std::to_string(client_count_));
    }
    peers::JsonLine line;
    line.str("system", "grpc_cpp")
        .str("version", grpc::Version())
        .str("workload", "stream")
        .str("mode", mode_name_)
        .num("streams", static_cast<unsigned long long>(streams_.size()))
        .num("payload_bytes", payload_)
        .num("warmup_s", warmup_s_, 1)
        .num("duration_s", duration_s_, 1)
        .num("messages", static_cast<unsigned long long>(messages_))
        .num("messages_per_s", mode_ == Mode::kIdle ? 0.0 : static_cast<double>(messages_) / duration_s_, 0)
        .num("p50_us", latency_.quantile(0.50) / 1e3, 1)
        .num("p99_us", latency_.quantile(0.99) / 1e3, 1)
        .num("errors", static_cast<unsigned long long>(errors_))
        .num("client_cpu_s", client_cpu_s_, 2)
        .num("server_cpu_s", server_cpu_s_, 2);
    if (mode_ == Mode::kIdle) {
      line.num("client_rss_bytes_per_stream", client_rss_, 0).num("server_rss_bytes_per_stream", server_rss_, 0);
    }
    line.str("check", check.text()).print();
    return check.ok() ? 0 : 1;
  }

  Stream::Stub& stub_;
  grpc::CompletionQueue cq_;
  std::string mode_name_;
  Mode mode_ = Mode::kEcho;
  std::vector<StreamState> streams_;
  int payload_;
  double warmup_s_;
  double duration_s_;
  pid_t server_pid_;  ///< 0: the server's CPU and RSS are not reported (-1)

  std::size_t pending_ = 0;  ///< operations whose completion has not been polled
  std::size_t behind_ = 0;   ///< live streams that have not reached the step run() waits for
  std::int64_t t_measure_ = std::numeric_limits<std::int64_t>::max();  ///< the window (idle: none)
  std::int64_t t_end_ = std::numeric_limits<std::int64_t>::max();
  bool measuring_ = false;
  bool ended_ = false;
  std::pair<double, double> window_start_{0, -1};

  peers::Histogram latency_;        ///< ns, echo round trips completed in the window
  std::uint64_t messages_ = 0;      ///< completed in the window (idle: the exchanges)
  std::uint64_t errors_ = 0;        ///< failed streams
  std::uint64_t server_count_ = 0;  ///< oneway: Sink's replies, summed
  std::uint64_t client_count_ = 0;  ///< oneway: the writes of the streams that ended OK
  double client_cpu_s_ = 0;
  double server_cpu_s_ = -1;
  double client_rss_ = -1;  ///< idle: bytes per stream
  double server_rss_ = -1;
};

int client(const peers::Flags& flags) {
  if (!flags.has("port")) throw peers::UsageError("the client needs --port");
  const std::string target = flags.str("host", "127.0.0.1") + ":" + std::to_string(flags.integer("port", 0, 1, 65535));
  const std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  const std::unique_ptr<Stream::Stub> stub = Stream::NewStub(channel);
  StreamClient stream_client(flags, *stub);  // checks the flags before connecting
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectTimeout)) {
    std::fprintf(stderr, "grpc_stream client: cannot connect to %s\n", target.c_str());
    return 1;
  }
  return stream_client.run();
}

int usage(std::string_view problem) {
  if (!problem.empty()) std::fprintf(stderr, "grpc_stream: %.*s\n", static_cast<int>(problem.size()), problem.data());
  std::fprintf(stderr,
               "usage: grpc_stream server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--host 127.0.0.1]\n"
               "       grpc_stream client --port N [--streams 1] [--payload 64] [--mode echo|oneway|idle]\n"
               "                          [--warmup 1] [--duration 10] [--server-pid PID] [--host 127.0.0.1]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "server") return server(peers::Flags(argc, argv, {"port", "port-file", "lifetime", "host"}));
    if (mode == "client") {
      return client(
          peers::Flags(argc, argv, {"port", "streams", "payload", "mode", "warmup", "duration", "server-pid", "host"}));
    }
    return usage(mode.empty() ? "" : "unknown mode " + std::string(mode));
  } catch (const peers::UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grpc_stream %.*s: %s\n", static_cast<int>(mode.size()), mode.data(), e.what());
    return 1;
  }
}
