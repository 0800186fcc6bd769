/// gRPC interop test client on gRPC C++ (Debian's libgrpc++ 1.51, the
/// synchronous API).
///
/// Runs the test cases of gRPC's doc/interop-test-descriptions.md against a
/// grpc.testing.TestService server (interop/proto/grpc/testing/test.proto)
/// and prints one line per case: "PASS <case>" or "FAIL <case>: <why>".
///
///   grpcpp_interop_client --server_host=127.0.0.1 --server_port=N --test_case=all|NAME
///                         [--use_tls=true --ca_file=ca.pem --server_host_override=foo.test.google.fr]
///
/// Exit status 0 only if every case run passed; 1 otherwise; 2 on a usage
/// error. Every call has a 30 s deadline (timeout_on_sleeping_server's 1 ms).
///
/// Compression: a call is compressed with ClientContext::set_compression_algorithm
/// (gzip), one message of it left uncompressed with WriteOptions::set_no_compression;
/// whether a response arrived compressed is read from the core's message
/// flags (message_flags.h).

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>

#include "grpc/testing/empty.pb.h"
#include "grpc/testing/messages.pb.h"
#include "grpc/testing/test.grpc.pb.h"
#include "message_flags.h"
#include "peer_flags.h"

namespace {

using grpc::ClientContext;
using grpc::Status;
using grpc::StatusCode;
using namespace grpc::testing;  // NOLINT: the generated messages

constexpr char kEchoInitialKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoInitialValue[] = "test_initial_metadata_value";
constexpr char kEchoTrailingKey[] = "x-grpc-test-echo-trailing-bin";
const std::string kEchoTrailingValue("\xab\xab\xab", 3);
const std::string kSpecialStatusMessage =
    "\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and non-BMP \xf0\x9f\x98\x88\t\n";
constexpr auto kCallTimeout = std::chrono::seconds(30);

/// A case's assertion that did not hold.
struct CaseFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(bool condition, const std::string& why) {
  if (!condition) throw CaseFailed(why);
}

std::string describe(const Status& status) {
  return "status " + std::to_string(status.error_code()) + " (" + status.error_message() + ")";
}

void check_ok(const Status& status, const std::string& what) { check(status.ok(), what + ": " + describe(status)); }

void check_status(const Status& status, StatusCode code, const std::string& what,
                  const std::optional<std::string>& message = std::nullopt) {
  check(status.error_code() == code, what + ": " + describe(status) + ", expected " + std::to_string(code));
  if (message)
    check(status.error_message() == *message,
          what + ": status message '" + status.error_message() + "', expected '" + *message + "'");
}

/// A context with the usual deadline.
std::unique_ptr<ClientContext> context(std::chrono::microseconds timeout = kCallTimeout) {
  auto c = std::make_unique<ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + timeout);
  return c;
}

Payload zeros(int size) {
  Payload p;
  p.set_type(COMPRESSABLE);
  p.set_body(std::string(static_cast<size_t>(size), '\0'));
  return p;
}

void check_payload(const Payload& payload, int size, const std::string& what) {
  check(payload.type() == COMPRESSABLE, what + ": payload type " + std::to_string(payload.type()));
  check(payload.body().size() == static_cast<size_t>(size),
        what + ": payload of " + std::to_string(payload.body().size()) + " bytes, expected " + std::to_string(size));
  check(payload.body().find_first_not_of('\0') == std::string::npos, what + ": payload is not all zeros");
}

SimpleRequest large_request() {
  SimpleRequest r;
  r.set_response_type(COMPRESSABLE);
  r.set_response_size(314159);
  *r.mutable_payload() = zeros(271828);
  return r;
}

StreamingOutputCallRequest output_request(const std::vector<int>& sizes, std::optional<int> payload = std::nullopt) {
  StreamingOutputCallRequest r;
  r.set_response_type(COMPRESSABLE);
  for (int s : sizes) r.add_response_parameters()->set_size(s);
  if (payload) *r.mutable_payload() = zeros(*payload);
  return r;
}

/// The values of `key` in received metadata.
std::vector<std::string> values(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                const std::string& key) {
  std::vector<std::string> out;
  auto [begin, end] = metadata.equal_range(key);
  for (auto it = begin; it != end; ++it) out.emplace_back(it->second.data(), it->second.size());
  return out;
}

void check_echoed(const ClientContext& c, const std::string& what) {
  auto initial = values(c.GetServerInitialMetadata(), kEchoInitialKey);
  check(initial == std::vector<std::string>{kEchoInitialValue},
        what + ": initial metadata " + kEchoInitialKey + " not echoed (" + std::to_string(initial.size()) + " values)");
  auto trailing = values(c.GetServerTrailingMetadata(), kEchoTrailingKey);
  check(trailing == std::vector<std::string>{kEchoTrailingValue}, what + ": trailing metadata " + kEchoTrailingKey +
                                                                      " not echoed (" +
                                                                      std::to_string(trailing.size()) + " values)");
}

class Client {
 public:
  explicit Client(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(TestService::NewStub(channel)), unimplemented_(UnimplementedService::NewStub(channel)) {}

  void empty_unary() {
    auto c = context();
    Empty response;
    check_ok(stub_->EmptyCall(c.get(), Empty(), &response), "EmptyCall");
  }

  void large_unary() {
    auto c = context();
    SimpleResponse response;
    check_ok(stub_->UnaryCall(c.get(), large_request(), &response), "UnaryCall");
    check_payload(response.payload(), 314159, "response");
  }

  void client_streaming() {
    auto c = context();
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(c.get(), &response);
    for (int size : {27182, 8, 1828, 45904}) {
      StreamingInputCallRequest request;
      *request.mutable_payload() = zeros(size);
      check(writer->Write(request), "a request could not be written");
    }
    check(writer->WritesDone(), "could not half-close");
    check_ok(writer->Finish(), "StreamingInputCall");
    check(response.aggregated_payload_size() == 74922,
          "aggregated_payload_size " + std::to_string(response.aggregated_payload_size()) + ", expected 74922");
  }

  void server_streaming() {
    const std::vector<int> sizes{31415, 9, 2653, 58979};
    auto c = context();
    auto reader = stub_->StreamingOutputCall(c.get(), output_request(sizes));
    StreamingOutputCallResponse response;
    size_t n = 0;
    while (reader->Read(&response)) {
      check(n < sizes.size(), "more than " + std::to_string(sizes.size()) + " responses");
      check_payload(response.payload(), sizes[n], "response " + std::to_string(n));
      ++n;
    }
    check_ok(reader->Finish(), "StreamingOutputCall");
    check(n == sizes.size(), std::to_string(n) + " responses, expected 4");
  }

  void ping_pong() {
    const std::vector<int> request_sizes{27182, 8, 1828, 45904}, response_sizes{31415, 9, 2653, 58979};
    auto c = context();
    auto stream = stub_->FullDuplexCall(c.get());
    StreamingOutputCallResponse response;
    for (size_t i = 0; i < request_sizes.size(); ++i) {
      check(stream->Write(output_request({response_sizes[i]}, request_sizes[i])),
            "request " + std::to_string(i) + " could not be written");
      check(stream->Read(&response), "no response " + std::to_string(i));
      check_payload(response.payload(), response_sizes[i], "response " + std::to_string(i));
    }
    check(stream->WritesDone(), "could not half-close");
    check(!stream->Read(&response), "a fifth response");
    check_ok(stream->Finish(), "FullDuplexCall");
  }

  void empty_stream() {
    auto c = context();
    auto stream = stub_->FullDuplexCall(c.get());
    check(stream->WritesDone(), "could not half-close");
    StreamingOutputCallResponse response;
    check(!stream->Read(&response), "a response, expected none");
    check_ok(stream->Finish(), "FullDuplexCall");
  }

  void cancel_after_begin() {
    auto c = context();
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(c.get(), &response);
    c->TryCancel();
    check_status(writer->Finish(), StatusCode::CANCELLED, "StreamingInputCall");
  }

  void cancel_after_first_response() {
    auto c = context();
    auto stream = stub_->FullDuplexCall(c.get());
    check(stream->Write(output_request({31415}, 27182)), "the request could not be written");
    StreamingOutputCallResponse response;
    check(stream->Read(&response), "no response");
    check_payload(response.payload(), 31415, "response");
    c->TryCancel();
    check_status(stream->Finish(), StatusCode::CANCELLED, "FullDuplexCall");
  }

  void timeout_on_sleeping_server() {
    auto c = context(std::chrono::milliseconds(1));
    auto stream = stub_->FullDuplexCall(c.get());
    StreamingOutputCallRequest request;
    *request.mutable_payload() = zeros(27182);
    stream->Write(request);  // may fail: the deadline can pass first
    check_status(stream->Finish(), StatusCode::DEADLINE_EXCEEDED, "FullDuplexCall");
  }

  void custom_metadata() {
    {
      auto c = context();
      c->AddMetadata(kEchoInitialKey, kEchoInitialValue);
      c->AddMetadata(kEchoTrailingKey, kEchoTrailingValue);
      SimpleResponse response;
      check_ok(stub_->UnaryCall(c.get(), large_request(), &response), "UnaryCall");
      check_payload(response.payload(), 314159, "UnaryCall response");
      check_echoed(*c, "UnaryCall");
    }
    auto c = context();
    c->AddMetadata(kEchoInitialKey, kEchoInitialValue);
    c->AddMetadata(kEchoTrailingKey, kEchoTrailingValue);
    auto stream = stub_->FullDuplexCall(c.get());
    check(stream->Write(output_request({314159}, 271828)), "the request could not be written");
    check(stream->WritesDone(), "could not half-close");
    StreamingOutputCallResponse response;
    int n = 0;
    while (stream->Read(&response)) {
      check_payload(response.payload(), 314159, "FullDuplexCall response");
      ++n;
    }
    check_ok(stream->Finish(), "FullDuplexCall");
    check(n == 1, "FullDuplexCall: " + std::to_string(n) + " responses, expected 1");
    check_echoed(*c, "FullDuplexCall");
  }

  void status_echo(const std::string& message, bool with_duplex) {
    EchoStatus status;
    status.set_code(2);
    status.set_message(message);
    {
      auto c = context();
      SimpleRequest request;
      *request.mutable_response_status() = status;
      SimpleResponse response;
      check_status(stub_->UnaryCall(c.get(), request, &response), StatusCode::UNKNOWN, "UnaryCall", message);
    }
    if (!with_duplex) return;
    auto c = context();
    auto stream = stub_->FullDuplexCall(c.get());
    StreamingOutputCallRequest request;
    *request.mutable_response_status() = status;
    stream->Write(request);
    stream->WritesDone();
    StreamingOutputCallResponse response;
    while (stream->Read(&response)) {
    }
    check_status(stream->Finish(), StatusCode::UNKNOWN, "FullDuplexCall", message);
  }

  void status_code_and_message() { status_echo("test status message", true); }

  void special_status_message() { status_echo(kSpecialStatusMessage, false); }

  void unimplemented_method() {
    auto c = context();
    Empty response;
    check_status(stub_->UnimplementedCall(c.get(), Empty(), &response), StatusCode::UNIMPLEMENTED,
                 "TestService/UnimplementedCall");
  }

  void unimplemented_service() {
    auto c = context();
    Empty response;
    check_status(unimplemented_->UnimplementedCall(c.get(), Empty(), &response), StatusCode::UNIMPLEMENTED,
                 "UnimplementedService/UnimplementedCall");
  }

  void client_compressed_unary() {
    {
      auto c = context();
      SimpleRequest probe = large_request();
      probe.mutable_expect_compressed()->set_value(true);
      SimpleResponse response;
      check_status(stub_->UnaryCall(c.get(), probe, &response), StatusCode::INVALID_ARGUMENT,
                   "the uncompressed probe with expect_compressed");
    }
    for (bool compressed : {true, false}) {
      const std::string what = compressed ? "the compressed call" : "the uncompressed call";
      auto c = context();
      if (compressed) c->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      SimpleRequest request = large_request();
      request.mutable_expect_compressed()->set_value(compressed);
      SimpleResponse response;
      check_ok(stub_->UnaryCall(c.get(), request, &response), what);
      check_payload(response.payload(), 314159, what);
    }
  }

  void server_compressed_unary() {
    for (bool compressed : {true, false}) {
      const std::string what = std::string("response_compressed=") + (compressed ? "true" : "false");
      auto c = context();
      SimpleRequest request = large_request();
      request.mutable_response_compressed()->set_value(compressed);
      SimpleResponse response;
      check_ok(stub_->UnaryCall(c.get(), request, &response), what);
      check_payload(response.payload(), 314159, what);
      const bool was = interop::last_message_compressed(c->c_call());
      check(was == compressed, what + ": the response " + (was ? "has" : "lacks") + " the compressed flag");
    }
  }

  void client_compressed_streaming() {
    {
      auto c = context();
      StreamingInputCallResponse response;
      auto writer = stub_->StreamingInputCall(c.get(), &response);
      StreamingInputCallRequest probe;
      probe.mutable_expect_compressed()->set_value(true);
      *probe.mutable_payload() = zeros(27182);
      writer->Write(probe);  // may fail once the server has rejected the call
      writer->WritesDone();
      check_status(writer->Finish(), StatusCode::INVALID_ARGUMENT, "the uncompressed probe with expect_compressed");
    }
    auto c = context();
    c->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(c.get(), &response);
    StreamingInputCallRequest request;
    request.mutable_expect_compressed()->set_value(true);
    *request.mutable_payload() = zeros(27182);
    check(writer->Write(request), "the compressed request could not be written");
    request.mutable_expect_compressed()->set_value(false);
    *request.mutable_payload() = zeros(45904);
    check(writer->Write(request, grpc::WriteOptions().set_no_compression()),
          "the uncompressed request could not be written");
    check(writer->WritesDone(), "could not half-close");
    check_ok(writer->Finish(), "StreamingInputCall");
    check(response.aggregated_payload_size() == 73086,
          "aggregated_payload_size " + std::to_string(response.aggregated_payload_size()) + ", expected 73086");
  }

  void server_compressed_streaming() {
    const std::vector<std::pair<bool, int>> wanted{{true, 31415}, {false, 92653}};
    StreamingOutputCallRequest request;
    request.set_response_type(COMPRESSABLE);
    for (auto [compressed, size] : wanted) {
      auto* p = request.add_response_parameters();
      p->set_size(size);
      p->mutable_compressed()->set_value(compressed);
    }
    auto c = context();
    auto reader = stub_->StreamingOutputCall(c.get(), request);
    StreamingOutputCallResponse response;
    size_t n = 0;
    while (reader->Read(&response)) {
      const std::string what = "response " + std::to_string(n);
      check(n < wanted.size(), "more than 2 responses");
      check_payload(response.payload(), wanted[n].second, what);
      const bool was = interop::last_message_compressed(c->c_call());
      check(was == wanted[n].first, what + " (compressed=" + (wanted[n].first ? "true" : "false") + ") " +
                                        (was ? "has" : "lacks") + " the compressed flag");
      ++n;
    }
    check_ok(reader->Finish(), "StreamingOutputCall");
    check(n == wanted.size(), std::to_string(n) + " responses, expected 2");
  }

 private:
  std::unique_ptr<TestService::Stub> stub_;
  std::unique_ptr<UnimplementedService::Stub> unimplemented_;
};

const std::vector<std::pair<std::string, void (Client::*)()>> kCases{
    {"empty_unary", &Client::empty_unary},
    {"large_unary", &Client::large_unary},
    {"client_streaming", &Client::client_streaming},
    {"server_streaming", &Client::server_streaming},
    {"ping_pong", &Client::ping_pong},
    {"empty_stream", &Client::empty_stream},
    {"cancel_after_begin", &Client::cancel_after_begin},
    {"cancel_after_first_response", &Client::cancel_after_first_response},
    {"timeout_on_sleeping_server", &Client::timeout_on_sleeping_server},
    {"custom_metadata", &Client::custom_metadata},
    {"status_code_and_message", &Client::status_code_and_message},
    {"special_status_message", &Client::special_status_message},
    {"unimplemented_method", &Client::unimplemented_method},
    {"unimplemented_service", &Client::unimplemented_service},
    {"client_compressed_unary", &Client::client_compressed_unary},
    {"server_compressed_unary", &Client::server_compressed_unary},
    {"client_compressed_streaming", &Client::client_compressed_streaming},
    {"server_compressed_streaming", &Client::server_compressed_streaming},
};

}  // namespace

int main(int argc, char** argv) {
  interop::Flags flags(argc, argv,
                       {{"server_host", "127.0.0.1"},
                        {"server_port", ""},
                        {"test_case", "all"},
                        {"use_tls", "false"},
                        {"ca_file", ""},
                        {"server_host_override", ""}});
  if (flags.str("server_port").empty()) {
    std::fprintf(stderr, "--server_port is required\n");
    return 2;
  }
  const int port = flags.number("server_port");
  std::vector<std::pair<std::string, void (Client::*)()>> cases;
  for (const auto& c : kCases)
    if (flags.str("test_case") == "all" || flags.str("test_case") == c.first) cases.push_back(c);
  if (cases.empty()) {
    std::fprintf(stderr, "unknown --test_case '%s' (all, or one of:", flags.str("test_case").c_str());
    for (const auto& c : kCases) std::fprintf(stderr, " %s", c.first.c_str());
    std::fprintf(stderr, ")\n");
    return 2;
  }

  grpc::ChannelArguments arguments;
  const std::string& override_name = flags.str("server_host_override");
  if (!override_name.empty()) arguments.SetString(GRPC_ARG_DEFAULT_AUTHORITY, override_name);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (flags.boolean("use_tls")) {
    grpc::SslCredentialsOptions options;
    if (!flags.str("ca_file").empty()) options.pem_root_certs = interop::read_file(flags.str("ca_file"));
    credentials = grpc::SslCredentials(options);
    if (!override_name.empty()) arguments.SetSslTargetNameOverride(override_name);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  const std::string target = flags.str("server_host") + ":" + std::to_string(port);
  Client client(grpc::CreateCustomChannel(target, credentials, arguments));

  int failed = 0;
  for (const auto& [name, run] : cases) {
    try {
      (client.*run)();
      std::printf("PASS %s\n", name.c_str());
    } catch (const std::exception& e) {
      ++failed;
      std::string why = e.what();
      for (char& ch : why)
        if (ch == '\n' || ch == '\r') ch = ' ';
      std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    }
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
