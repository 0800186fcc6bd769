/// gRPC interop test server on gRPC C++ (Debian's libgrpc++ 1.51, the
/// synchronous API).
///
/// Serves grpc.testing.TestService (interop/proto/grpc/testing/test.proto) as
/// gRPC's doc/interop-test-descriptions.md describes it: echo of
/// x-grpc-test-echo-initial (initial metadata) and x-grpc-test-echo-trailing-bin
/// (trailing metadata), of response_status, payloads of the sizes asked for
/// after interval_us, responses compressed (gzip) when asked, per message in
/// streams, and INVALID_ARGUMENT when a request's expect_compressed does not
/// match how it arrived. UnimplementedCall is not overridden, so grpc++
/// answers UNIMPLEMENTED; UnimplementedService is not registered at all.
///
///   grpcpp_interop_server --port=0 [--use_tls=true --tls_cert_file=server.pem
///                         --tls_key_file=server.key] [--reflection=true]
///
/// --reflection=true also serves gRPC's own server reflection (grpc++'s
/// ProtoServerReflectionPlugin: grpc.reflection.v1alpha in 1.51), for
/// tools such as wheelctl; off by default.
///
/// Listens on 127.0.0.1 only; prints "listening on 127.0.0.1:PORT" when it
/// accepts calls. SIGTERM or SIGINT: shuts down (calls in flight get a second)
/// and exits 0. Exit status 2 on a usage error, 1 if it cannot listen.

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>
#ifdef WHEELRPC_PEER_REFLECTION
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#endif

#include "grpc/testing/empty.pb.h"
#include "grpc/testing/messages.pb.h"
#include "grpc/testing/test.grpc.pb.h"
#include "message_flags.h"
#include "peer_flags.h"

namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using namespace grpc::testing;  // NOLINT: the generated messages

constexpr char kEchoInitialKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoTrailingKey[] = "x-grpc-test-echo-trailing-bin";

/// Copies the echo keys the client sent into the response's metadata.
void echo_metadata(ServerContext* context) {
  for (const auto& [key, value] : context->client_metadata()) {
    std::string k(key.data(), key.size()), v(value.data(), value.size());
    if (k == kEchoInitialKey) context->AddInitialMetadata(k, v);
    if (k == kEchoTrailingKey) context->AddTrailingMetadata(k, v);
  }
}

/// OK, or INVALID_ARGUMENT when the request says how it should have arrived
/// (expect_compressed) and it did not arrive so.
template <typename Request>
Status check_compression(ServerContext* context, const Request& request) {
  if (!request.has_expect_compressed()) return Status::OK;
  const bool expected = request.expect_compressed().value();
  const bool compressed = interop::last_message_compressed(context->c_call());
  if (expected == compressed) return Status::OK;
  return Status(StatusCode::INVALID_ARGUMENT, std::string("expected a ") + (expected ? "compressed" : "uncompressed") +
                                                  " request message, got a " +
                                                  (compressed ? "compressed" : "uncompressed") + " one");
}

/// Fills `payload` with `size` zero bytes of `type`; INVALID_ARGUMENT for a
/// type this server cannot make or a negative size.
Status make_payload(PayloadType type, int size, Payload* payload) {
  if (type != COMPRESSABLE) return Status(StatusCode::INVALID_ARGUMENT, "unsupported response_type");
  if (size < 0) return Status(StatusCode::INVALID_ARGUMENT, "negative payload size");
  payload->set_type(type);
  payload->set_body(std::string(static_cast<size_t>(size), '\0'));
  return Status::OK;
}

Status echo_status(const EchoStatus& status) {
  return Status(static_cast<StatusCode>(status.code()), status.message());
}

bool wants_compression(const StreamingOutputCallRequest& request) {
  for (const auto& p : request.response_parameters())
    if (p.compressed().value()) return true;
  return false;
}

/// Writes the responses one StreamingOutputCallRequest asks for, each after
/// its interval_us, compressed only if its `compressed` says so (the call's
/// algorithm is gzip once any response asked for compression).
template <typename Writer>
Status write_responses(const StreamingOutputCallRequest& request, Writer* writer) {
  for (const auto& parameters : request.response_parameters()) {
    StreamingOutputCallResponse response;
    if (Status s = make_payload(request.response_type(), parameters.size(), response.mutable_payload()); !s.ok())
      return s;
    if (parameters.interval_us() > 0) std::this_thread::sleep_for(std::chrono::microseconds(parameters.interval_us()));
    grpc::WriteOptions options;
    if (!parameters.compressed().value()) options.set_no_compression();
    if (!writer->Write(response, options)) return Status(StatusCode::INTERNAL, "the response could not be written");
  }
  return Status::OK;
}

class TestServiceImpl final : public TestService::Service {
 public:
  Status EmptyCall(ServerContext* context, const Empty*, Empty*) override {
    echo_metadata(context);
    return Status::OK;
  }

  Status UnaryCall(ServerContext* context, const SimpleRequest* request, SimpleResponse* response) override {
    echo_metadata(context);
    if (Status s = check_compression(context, *request); !s.ok()) return s;
    if (request->response_compressed().value()) context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    if (Status s = make_payload(request->response_type(), request->response_size(), response->mutable_payload());
        !s.ok())
      return s;
    if (request->has_response_status()) return echo_status(request->response_status());
    return Status::OK;
  }

  Status CacheableUnaryCall(ServerContext* context, const SimpleRequest*, SimpleResponse* response) override {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    response->mutable_payload()->set_body(
        std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    context->AddInitialMetadata("cache-control", "max-age=60, public");
    return Status::OK;
  }

  Status StreamingOutputCall(ServerContext* context, const StreamingOutputCallRequest* request,
                             grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    echo_metadata(context);
    if (wants_compression(*request)) context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    if (Status s = write_responses(*request, writer); !s.ok()) return s;
    if (request->has_response_status()) return echo_status(request->response_status());
    return Status::OK;
  }

  Status StreamingInputCall(ServerContext* context, grpc::ServerReader<StreamingInputCallRequest>* reader,
                            StreamingInputCallResponse* response) override {
    echo_metadata(context);
    StreamingInputCallRequest request;
    int total = 0;
    while (reader->Read(&request)) {
      if (Status s = check_compression(context, request); !s.ok()) return s;
      total += static_cast<int>(request.payload().body().size());
    }
    response->set_aggregated_payload_size(total);
    return Status::OK;
  }

  Status FullDuplexCall(
      ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream) override {
    echo_metadata(context);
    StreamingOutputCallRequest request;
    bool first = true;
    while (stream->Read(&request)) {
      // The call's compression goes out with the initial metadata, that is
      // with the first response: only the first request can ask for it.
      if (first && wants_compression(request)) context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      first = false;
      if (request.has_response_status()) return echo_status(request.response_status());
      if (Status s = write_responses(request, stream); !s.ok()) return s;
    }
    return Status::OK;
  }

  Status HalfDuplexCall(
      ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream) override {
    echo_metadata(context);
    std::vector<StreamingOutputCallRequest> requests;
    StreamingOutputCallRequest request;
    bool compress = false;
    while (stream->Read(&request)) {
      compress = compress || wants_compression(request);
      requests.push_back(request);
    }
    if (compress) context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    for (const auto& r : requests) {
      if (r.has_response_status()) return echo_status(r.response_status());
      if (Status s = write_responses(r, stream); !s.ok()) return s;
    }
    return Status::OK;
  }
};

#ifdef WHEELRPC_PEER_REFLECTION
// Linking libgrpc++_reflection registers its plugin for every server (a
// static initializer): without --reflection=true this option takes it out
// again, so the server is what it was before the flag existed.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const auto& p) { return p->name() == "proto_server_reflection"; }),
                   plugins->end());
  }
};
#endif

}  // namespace

int main(int argc, char** argv) {
  interop::Flags flags(
      argc, argv,
      {{"port", "0"}, {"use_tls", "false"}, {"tls_cert_file", ""}, {"tls_key_file", ""}, {"reflection", "false"}});
  const int port = flags.number("port");
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (flags.boolean("use_tls")) {
    if (flags.str("tls_cert_file").empty() || flags.str("tls_key_file").empty()) {
      std::fprintf(stderr, "--use_tls=true needs --tls_cert_file and --tls_key_file\n");
      return 2;
    }
    grpc::SslServerCredentialsOptions options;
    options.pem_key_cert_pairs.push_back(
        {interop::read_file(flags.str("tls_key_file")), interop::read_file(flags.str("tls_cert_file"))});
    credentials = grpc::SslServerCredentials(options);
  } else {
    credentials = grpc::InsecureServerCredentials();
  }

  // SIGTERM and SIGINT are blocked in every thread (gRPC's included, which
  // inherit this mask) and taken by sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  TestServiceImpl service;
  const bool reflection = flags.boolean("reflection");
#ifdef WHEELRPC_PEER_REFLECTION
  // test.proto holds services only: nothing refers to its descriptor, which
  // the linker would then leave out of the static library, and reflection
  // would not find grpc.testing.TestService ("Symbol not found").
  static const void* volatile keep_test_proto = &descriptor_table_grpc_2ftesting_2ftest_2eproto;
  (void)keep_test_proto;
  if (reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
#else
  if (reflection) {
    std::fprintf(stderr, "--reflection=true: built without libgrpc++_reflection\n");
    return 2;
  }
#endif
  grpc::ServerBuilder builder;
#ifdef WHEELRPC_PEER_REFLECTION
  if (!reflection) builder.SetOption(std::make_unique<WithoutReflection>());
#endif
  int bound_port = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), credentials, &bound_port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a taken port is an error, not shared
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    std::fprintf(stderr, "cannot listen on 127.0.0.1:%d\n", port);
    return 1;
  }
  std::printf("listening on 127.0.0.1:%d\n", bound_port);
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}
