/// gRPC C++ unary echo (system "grpc_cpp"): the RPC system wheelrpc's echo is
/// compared with in bench/compare_rpc.sh, plaintext, and with TLS in
/// bench/grpc_tls.sh. Service: echo.proto beside this file.
///
///   grpc_echo server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--host 127.0.0.1] [--tls DIR]
///   grpc_echo client --port N [--concurrency 16] [--payload 64] [--warmup 1] [--duration 10]
///                    [--server-pid PID] [--host 127.0.0.1] [--tls DIR]
///
/// The command line and the client's JSON line are those of wheelrpc's
/// rpc_bench (bench/rpc_bench.cc), "deadline_ms" 1000 and "tls" included.
///
/// Server: the async completion-queue API; one completion queue polled by the
/// main thread (gRPC adds its own threads: `server_threads` counts them).
/// kServerSlots calls are kept requested, so an arriving call never waits for
/// one; the reply is the request message.
///
/// Client: the async completion-queue API, one thread polling one completion
/// queue, one channel (one HTTP/2 connection), connected before the clock
/// starts (TLS handshake included). Closed loop with C calls in flight, each
/// with a new ClientContext and a 1 s deadline, each reply compared with the
/// request. Calls completed in [warm-up, warm-up + duration) are measured;
/// the CPU of both processes is sampled at the first completion at or after
/// each edge of that window (with C calls in flight, microseconds after it).
/// Then no new call starts and the run ends when the last one completes (the
/// deadlines bound that). Exit status 1 if any call failed, 2 on a usage error.
///
/// --tls DIR: TLS on both ends, from files that bench/grpc_tls.sh makes with
/// the openssl command: the server presents DIR/server.pem with the key
/// DIR/server.key; the client trusts DIR/ca.pem and checks that the
/// certificate names the host it connects to (127.0.0.1: an IP subject
/// alternative name).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "echo.grpc.pb.h"
#include "peer_util.h"

namespace {

using peers::echo::Blob;
using peers::echo::Echo;

/// Calls the server keeps requested: twice the largest concurrency the
/// scripts run, so that every call in flight finds one even while a slot is
/// between its reply and its next request.
constexpr int kServerSlots = 256;
/// Every call's deadline, as wheelrpc's echo.
constexpr std::chrono::milliseconds kDeadline{1000};
/// How long the client waits for its channel to be ready.
constexpr std::chrono::seconds kConnectTimeout{5};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The --tls directory, or "" without --tls.
std::string tls_dir(const peers::Flags& flags) {
  if (!flags.has("tls")) return "";
  const std::string dir = flags.str("tls", "");
  if (dir.empty()) throw peers::UsageError("--tls needs a directory");
  return dir;
}

// ---- server ---------------------------------------------------------------------

/// One requested call, reused call after call: requested -> (a call arrived)
/// replying -> (reply sent or call cancelled) requested again. Its address is
/// its completion-queue tag. A ServerContext serves one call only, so each
/// cycle makes a new one.
class ServerSlot {
 public:
  ServerSlot(Echo::AsyncService& service, grpc::ServerCompletionQueue& cq) : service_(service), cq_(cq) {}

  void request() {
    responder_.reset();  // refers to the context: goes first
    context_.emplace();
    responder_.emplace(&*context_);
    message_.Clear();
    replying_ = false;
    service_.RequestEcho(&*context_, &message_, &*responder_, &cq_, &cq_, this);
  }

  /// The completion of this slot's pending operation.
  void on_event(bool ok) {
    if (replying_) return request();  // the reply went out (or the client went away)
    if (!ok) return;                  // the server is shutting down: no call came
    replying_ = true;
    responder_->Finish(message_, grpc::Status::OK, this);
  }

 private:
  Echo::AsyncService& service_;
  grpc::ServerCompletionQueue& cq_;
  std::optional<grpc::ServerContext> context_;
  std::optional<grpc::ServerAsyncResponseWriter<Blob>> responder_;
  Blob message_;  ///< the request, then the reply
  bool replying_ = false;
};

int server(const peers::Flags& flags) {
  const std::string dir = tls_dir(flags);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!dir.empty()) {
    grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    options.pem_key_cert_pairs.push_back(
        {read_file(std::filesystem::path(dir) / "server.key"), read_file(std::filesystem::path(dir) / "server.pem")});
    credentials = grpc::SslServerCredentials(options);
  }
  const std::string address = flags.str("host", "127.0.0.1") + ":" + std::to_string(flags.integer("port", 0, 0, 65535));
  peers::exit_after(flags.seconds("lifetime", 0));

  Echo::AsyncService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, credentials, &port);
  builder.RegisterService(&service);
  const std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  const std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
  if (!grpc_server || port == 0) {
    std::fprintf(stderr, "grpc_echo server: cannot listen on %s\n", address.c_str());
    return 1;
  }
  peers::write_port_file(flags.str("port-file", ""), static_cast<unsigned>(port));

  std::vector<std::unique_ptr<ServerSlot>> slots;
  for (int i = 0; i < kServerSlots; ++i) {
    slots.push_back(std::make_unique<ServerSlot>(service, *cq));
    slots.back()->request();
  }
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<ServerSlot*>(tag)->on_event(ok);  // until killed
  return 0;
}

// ---- client ---------------------------------------------------------------------

/// One of the C calls in flight, reused call after call; its address is its
/// completion-queue tag.
struct CallSlot {
  std::optional<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Blob>> reader;  ///< lives in the call's arena
  Blob reply;
  grpc::Status status;
  std::int64_t started_ns = 0;
};

int client(const peers::Flags& flags) {
  peers::EchoRun run;
  run.system = "grpc_cpp";
  run.version = grpc::Version();
  run.deadline_ms = kDeadline.count();
  run.read_flags(flags);
  if (!flags.has("port")) throw peers::UsageError("the client needs --port");
  const std::string dir = tls_dir(flags);
  run.tls = !dir.empty();
  const std::string target = flags.str("host", "127.0.0.1") + ":" + std::to_string(flags.integer("port", 0, 1, 65535));

  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (run.tls) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = read_file(std::filesystem::path(dir) / "ca.pem");
    credentials = grpc::SslCredentials(options);
  }
  const std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(target, credentials);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectTimeout)) {
    std::fprintf(stderr, "grpc_echo client: cannot connect to %s%s\n", target.c_str(), run.tls ? " (TLS)" : "");
    return 1;
  }
  const std::unique_ptr<Echo::Stub> stub = Echo::NewStub(channel);
  Blob request;
  request.set_payload(std::string(static_cast<std::size_t>(run.payload), 'x'));

  grpc::CompletionQueue cq;
  const auto start = [&](CallSlot& call) {
    call.reader.reset();  // before its context, whose call arena holds it
    call.context.emplace();
    call.context->set_deadline(std::chrono::system_clock::now() + kDeadline);
    call.reply.Clear();
    call.started_ns = peers::now_ns();
    call.reader = stub->AsyncEcho(&*call.context, request, &cq);
    call.reader->Finish(&call.reply, &call.status, &call);
  };

  const std::int64_t t0 = peers::now_ns();
  const std::int64_t t_measure = t0 + static_cast<std::int64_t>(run.warmup_s * 1e9);
  const std::int64_t t_end = t_measure + static_cast<std::int64_t>(run.duration_s * 1e9);
  std::vector<CallSlot> calls(static_cast<std::size_t>(run.concurrency));
  for (CallSlot& call : calls) start(call);

  std::size_t in_flight = calls.size();
  bool measuring = false;
  bool ended = false;
  void* tag = nullptr;
  bool ok = false;
  while (in_flight > 0 && cq.Next(&tag, &ok)) {
    CallSlot& call = *static_cast<CallSlot*>(tag);
    const std::int64_t now = peers::now_ns();
    if (!measuring && now >= t_measure) {
      measuring = true;
      run.begin_window(run.cpu_now());
    }
    if (!ended && now >= t_end) {
      ended = true;
      run.end_window(run.cpu_now());
    }
    if (!ok || !call.status.ok() || call.reply.payload() != request.payload()) {
      if (run.errors++ == 0) {
        std::fprintf(stderr, "grpc_echo client: first failed call: code %d, %s\n",
                     static_cast<int>(call.status.error_code()),
                     call.status.ok() ? "the reply is not the request" : call.status.error_message().c_str());
      }
    } else if (measuring && !ended) {
      run.latency.record(static_cast<std::uint64_t>(now - call.started_ns));
    }
    if (ended) {
      --in_flight;
    } else {
      start(call);  // closed loop: the slot's next call
    }
  }
  for (CallSlot& call : calls) call.reader.reset();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  run.json().print();
  return run.errors == 0 ? 0 : 1;
}

int usage(std::string_view problem) {
  if (!problem.empty()) std::fprintf(stderr, "grpc_echo: %.*s\n", static_cast<int>(problem.size()), problem.data());
  std::fprintf(stderr,
               "usage: grpc_echo server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--host 127.0.0.1]\n"
               "                        [--tls DIR]\n"
               "       grpc_echo client --port N [--concurrency 16] [--payload 64] [--warmup 1] [--duration 10]\n"
               "                        [--server-pid PID] [--host 127.0.0.1] [--tls DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "server") return server(peers::Flags(argc, argv, {"port", "port-file", "lifetime", "host", "tls"}));
    if (mode == "client") {
      return client(peers::Flags(
          argc, argv, {"port", "concurrency", "payload", "warmup", "duration", "server-pid", "host", "tls"}));
    }
    return usage(mode.empty() ? "" : "unknown mode " + std::string(mode));
  } catch (const peers::UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grpc_echo %.*s: %s\n", static_cast<int>(mode.size()), mode.data(), e.what());
    return 1;
  }
}
