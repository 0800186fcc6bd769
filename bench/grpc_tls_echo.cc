/// gRPC C++ unary echo, plaintext or TLS, to set beside rpc_bench (bench/grpc_tls.sh).
/// The peer benchmark shared/peers/rpc/grpc_echo.cpp plus `--tls DIR`: same
/// service (shared/peers/rpc/echo.proto), same command line, same measurement
/// and JSON fields (shared/peers/common.hpp EchoRun), plus "tls": "on"|"off".
///
///   grpc_tls_echo server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--tls DIR]
///   grpc_tls_echo client --port N [--concurrency 16] [--payload 64] [--warmup 1]
///                        [--duration 10] [--server-pid PID] [--tls DIR]
///
/// Server: async completion-queue API, one completion queue polled by one
/// thread, on 127.0.0.1; runs until killed (or `--lifetime` seconds, a safety
/// net should the run script die).
///
/// Client: async completion-queue API, one thread, one channel to 127.0.0.1,
/// closed loop with C calls in flight, each call with a 1 s deadline. One JSON
/// line on stdout; exit status 1 if any call failed, 2 on a usage error.
///
/// --tls DIR: TLS on both ends. The server presents DIR/server.pem with the
/// key DIR/server.key; the client trusts DIR/ca.pem and checks the server's
/// certificate names 127.0.0.1 (an IP subject alternative name). Unlike
/// rpc_bench, nothing makes the files: bench/grpc_tls.sh does, with the
/// openssl command. The client connects before its clock starts, so the
/// handshake is outside the measured window, as in rpc_bench.
///
/// Build (bench/grpc_tls.sh does it, into build/peers):
///   protoc + grpc_cpp_plugin on echo.proto, then
///   g++ -std=c++20 -O2 -I<peers> -I<gen> grpc_tls_echo.cc echo.pb.cc echo.grpc.pb.cc
///       $(pkg-config --cflags --libs grpc++ protobuf)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>

#include <grpcpp/grpcpp.h>

#include "common.hpp"
#include "echo.grpc.pb.h"

namespace {

using peerbench::Echo;
using peerbench::EchoMsg;

/// Accepted-call slots the server keeps posted (>= the largest concurrency run).
constexpr int kServerSlots = 128;
/// Per-call deadline, as the peers (1 s).
constexpr std::chrono::seconds kDeadline{1};
/// How long the client waits for its channel to connect (handshake included).
constexpr std::chrono::seconds kConnectTimeout{5};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The directory after --tls ("" without --tls); a --tls with no value is a usage error.
std::string tls_dir(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--tls") {
      if (i + 1 >= argc || std::string(argv[i + 1]).empty()) throw UsageError("--tls needs a directory");
      return argv[i + 1];
    }
  return "";
}

/// The whole of a (PEM) file.
std::string read_whole(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// ---- server --------------------------------------------------------------------

/// One accepted call: posted (waiting for a call), then finishing (reply
/// sent), then deleted. Its own address is its completion-queue tag.
class ServerCall {
 public:
  ServerCall(Echo::AsyncService& service, grpc::ServerCompletionQueue& cq) : service_(service), cq_(cq) {
    service_.RequestEcho(&ctx_, &request_, &responder_, &cq_, &cq_, this);
  }

  /// The next event of this call; `ok` false: the call is cancelled or the queue shut down.
  void step(bool ok) {
    if (finishing_ || !ok) {
      delete this;
      return;
    }
    new ServerCall(service_, cq_);  // keep the slot count: post a replacement first
    finishing_ = true;
    responder_.Finish(request_, grpc::Status::OK, this);  // the reply is the request
  }

 private:
  Echo::AsyncService& service_;
  grpc::ServerCompletionQueue& cq_;
  grpc::ServerContext ctx_;
  EchoMsg request_;
  grpc::ServerAsyncResponseWriter<EchoMsg> responder_{&ctx_};
  bool finishing_ = false;
};

int server(int argc, char** argv) {
  const std::string dir = tls_dir(argc, argv);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!dir.empty()) {
    grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    options.pem_key_cert_pairs.push_back(
        {read_whole(std::filesystem::path(dir) / "server.key"), read_whole(std::filesystem::path(dir) / "server.pem")});
    credentials = grpc::SslServerCredentials(options);
  }
  peers::exit_after(std::stod(peers::flag(argc, argv, "lifetime", "0")));

  Echo::AsyncService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:" + peers::flag(argc, argv, "port", "0"), credentials, &port);
  builder.RegisterService(&service);
  const auto cq = builder.AddCompletionQueue();
  const auto srv = builder.BuildAndStart();
  if (!srv || port == 0) {
    std::fprintf(stderr, "grpc_tls_echo server: cannot listen\n");
    return 1;
  }
  peers::write_port_file(peers::flag(argc, argv, "port-file", ""), port);

  for (int i = 0; i < kServerSlots; ++i) new ServerCall(service, *cq);
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<ServerCall*>(tag)->step(ok);  // runs until killed
  return 0;
}

// ---- client --------------------------------------------------------------------

/// One call in flight; its own address is its completion-queue tag.
struct ClientCall {
  grpc::ClientContext ctx;
  EchoMsg reply;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<EchoMsg>> rpc;
  std::int64_t start_ns = 0;  ///< steady clock, ns
};

/// EchoRun's JSON line with "tls" added as its last field. EchoRun::print
/// writes to stdout, so stdout is a memory stream for the time of the call
/// (glibc lets a program assign stdout).
void print_run(const peers::EchoRun& run, bool tls) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* const mem = open_memstream(&buf, &len);
  if (mem == nullptr) throw std::runtime_error("open_memstream failed");
  std::FILE* const out = stdout;
  stdout = mem;
  run.print();
  stdout = out;
  std::fclose(mem);
  std::string line(buf, len);
  std::free(buf);
  const auto brace = line.rfind('}');
  if (brace == std::string::npos) throw std::runtime_error("EchoRun printed no JSON object");
  line.insert(brace, std::string(",\"tls\":\"") + (tls ? "on" : "off") + "\"");
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

int client(int argc, char** argv) {
  peers::EchoRun run;
  run.system = "grpc_cpp";
  run.version = grpc::Version();
  run.concurrency = std::stoi(peers::flag(argc, argv, "concurrency", "16"));
  run.payload = std::stoi(peers::flag(argc, argv, "payload", "64"));
  run.warmup_s = std::stod(peers::flag(argc, argv, "warmup", "1"));
  run.duration_s = std::stod(peers::flag(argc, argv, "duration", "10"));
  run.server_pid = std::stoi(peers::flag(argc, argv, "server-pid", "0"));
  if (run.concurrency < 1 || !(run.duration_s > 0)) throw UsageError("--concurrency must be >= 1, --duration > 0");

  const std::string dir = tls_dir(argc, argv);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!dir.empty()) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = read_whole(std::filesystem::path(dir) / "ca.pem");
    credentials = grpc::SslCredentials(options);
  }
  const auto channel = grpc::CreateChannel("127.0.0.1:" + peers::flag(argc, argv, "port", "0"), credentials);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectTimeout)) {
    std::fprintf(stderr, "grpc_tls_echo client: cannot connect%s\n", dir.empty() ? "" : " (TLS)");
    return 1;
  }
  const auto stub = Echo::NewStub(channel);
  EchoMsg request;
  request.set_payload(std::string(static_cast<std::size_t>(run.payload), 'x'));

  grpc::CompletionQueue cq;
  auto start_call = [&] {
    auto* call = new ClientCall;
    call->ctx.set_deadline(std::chrono::system_clock::now() + kDeadline);
    call->start_ns = peers::now_ns();
    call->rpc = stub->AsyncEcho(&call->ctx, request, &cq);
    call->rpc->Finish(&call->reply, &call->status, call);
  };

  const std::int64_t t0 = peers::now_ns();
  const std::int64_t t_measure = t0 + static_cast<std::int64_t>(run.warmup_s * 1e9);
  const std::int64_t t_end = t_measure + static_cast<std::int64_t>(run.duration_s * 1e9);
  for (int i = 0; i < run.concurrency; ++i) start_call();

  int outstanding = run.concurrency;
  bool measuring = false, ended = false;
  double c0 = 0, s0 = -1;  // CPU seconds at the window's start: client, server
  void* tag = nullptr;
  bool ok = false;
  while (outstanding > 0 && cq.Next(&tag, &ok)) {
    const std::unique_ptr<ClientCall> call(static_cast<ClientCall*>(tag));
    const std::int64_t now = peers::now_ns();
    if (!measuring && now >= t_measure) {
      measuring = true;
      c0 = peers::process_cpu_s();
      s0 = run.server_cpu_now();
    }
    if (!ended && now >= t_end) {
      ended = true;
      run.client_cpu_s = peers::process_cpu_s() - c0;
      run.server_cpu_s = peers::EchoRun::delta(s0, run.server_cpu_now());
    }
    if (!ok || !call->status.ok() || call->reply.payload() != request.payload()) {
      if (run.errors++ == 0)
        std::fprintf(stderr, "grpc_tls_echo client: first error: code %d %s\n",
                     static_cast<int>(call->status.error_code()), call->status.error_message().c_str());
    } else if (measuring && !ended) {
      run.hist.record(static_cast<std::uint64_t>(now - call->start_ns));
    }
    if (ended)
      --outstanding;  // stop issuing; the drain is bounded by the deadlines
    else
      start_call();
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  print_run(run, !dir.empty());
  return run.errors ? 1 : 0;
}

int usage(const char* problem) {
  if (problem && *problem) std::fprintf(stderr, "grpc_tls_echo: %s\n", problem);
  std::fprintf(stderr,
               "usage: grpc_tls_echo server [--port 0] [--port-file PATH] [--lifetime SECONDS] [--tls DIR]\n"
               "       grpc_tls_echo client --port N [--concurrency 16] [--payload 64] [--warmup 1]\n"
               "                            [--duration 10] [--server-pid PID] [--tls DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "server") return server(argc, argv);
    if (mode == "client") return client(argc, argv);
    return usage(mode.empty() ? "" : ("unknown mode " + mode).c_str());
  } catch (const UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {  // unreadable files, malformed numbers
    std::fprintf(stderr, "grpc_tls_echo %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
