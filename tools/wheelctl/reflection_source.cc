#include "reflection_source.h"

#include <algorithm>

#include <wheelrpc/rpc/status_code.h>

#include "session.h"

namespace wheelrpc::wheelctl {

namespace gpb = google::protobuf;
namespace refl = grpc::reflection::v1;

namespace {

constexpr const char* kV1Path = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
constexpr const char* kV1AlphaPath = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// The pool's view of the server: asks the source for what it lacks.
class ReflectionDatabase final : public gpb::DescriptorDatabase {
 public:
  explicit ReflectionDatabase(ReflectionSource& source) : source_(source) {}
  bool FindFileByName(const std::string& filename, gpb::FileDescriptorProto* output) override {
    return source_.fetch_file(filename, *output);
  }
  bool FindFileContainingSymbol(const std::string& symbol_name, gpb::FileDescriptorProto* output) override {
    return source_.fetch_symbol(symbol_name, *output);
  }
  bool FindFileContainingExtension(const std::string&, int, gpb::FileDescriptorProto*) override { return false; }

 private:
  ReflectionSource& source_;
};

}  // namespace

ReflectionSource::ReflectionSource(Session& session)
    : session_(session),
      database_(std::make_unique<ReflectionDatabase>(*this)),
      pool_(std::make_unique<gpb::DescriptorPool>(database_.get())) {}

ReflectionSource::~ReflectionSource() = default;

std::string ReflectionSource::origin() const {
  return "the server's reflection (grpc.reflection." + (version_.empty() ? std::string("v1") : version_) + ")";
}

std::optional<Failure> ReflectionSource::ask(const std::string& path, const refl::ServerReflectionRequest& request,
                                             refl::ServerReflectionResponse& response, bool& unimplemented) {
  unimplemented = false;
  auto options = session_.stream_options(false);
  // The answer must come within the timeout: a server that stops answering
  // ends the stream instead of hanging the tool.
  options.message_timeout = options.timeout.value();
  rpc::ClientStream stream;
  Session::Outcome outcome = session_.open_stream(path, options, stream);
  std::optional<std::string> bytes;
  if (outcome) outcome = session_.write(stream, request.SerializeAsString());
  if (outcome) outcome = session_.writes_done(stream);
  if (outcome) outcome = session_.read(stream, bytes);
  if (outcome) outcome = session_.finish(stream);
  if (!outcome) {
    stream.cancel();
    if (rpc::status_code_of(outcome.ec) == rpc::StatusCode::unimplemented) {
      unimplemented = true;
      return std::nullopt;
    }
    return session_.failure(outcome);
  }
  if (!bytes) return Failure{kExitFailed, "the reflection stream ended without an answer"};
  if (!response.ParseFromString(*bytes)) {
    return Failure{kExitFailed, "the reflection answer is not a ServerReflectionResponse"};
  }
  return std::nullopt;
}

std::optional<Failure> ReflectionSource::exchange(const refl::ServerReflectionRequest& request,
                                                  refl::ServerReflectionResponse& response) {
  // One stream per request, half-closed at once: a server without the
  // method may answer UNIMPLEMENTED only once the client's side ended.
  if (failure_) return failure_;
  response.Clear();
  bool unimplemented = false;
  if (!version_.empty()) {
    failure_ = ask(version_ == "v1" ? kV1Path : kV1AlphaPath, request, response, unimplemented);
  } else {
    failure_ = ask(kV1Path, request, response, unimplemented);
    if (!failure_ && !unimplemented) version_ = "v1";
    if (!failure_ && unimplemented) {
      failure_ = ask(kV1AlphaPath, request, response, unimplemented);
      if (!failure_ && !unimplemented) version_ = "v1alpha";
    }
  }
  if (!failure_ && unimplemented) {
    failure_ = Failure{kExitUnknownSymbol,
                       session_.flags().target +
                           " does not serve server reflection (grpc.reflection.v1 and v1alpha answered "
                           "UNIMPLEMENTED): give the service's .proto files with --proto FILE (and --import-path DIR)"};
  }
  return failure_;
}

bool ReflectionSource::keep_files(const refl::ServerReflectionResponse& response, gpb::FileDescriptorProto* first) {
  if (!response.has_file_descriptor_response()) return false;
  const auto& files = response.file_descriptor_response().file_descriptor_proto();
  bool found = false;
  for (int i = 0; i < files.size(); ++i) {
    gpb::FileDescriptorProto file;
    if (!file.ParseFromString(files[i])) continue;
    if (first && !found) {
      *first = file;
      found = true;
    }
    files_.emplace(file.name(), std::move(file));
  }
  return found;
}

bool ReflectionSource::fetch_file(const std::string& filename, gpb::FileDescriptorProto& out) {
  if (const auto it = files_.find(filename); it != files_.end()) {
    out = it->second;
    return true;
  }
  refl::ServerReflectionRequest request;
  request.set_file_by_filename(filename);
  refl::ServerReflectionResponse response;
  if (exchange(request, response)) return false;
  keep_files(response, nullptr);
  if (const auto it = files_.find(filename); it != files_.end()) {
    out = it->second;
    return true;
  }
  return false;
}

bool ReflectionSource::fetch_symbol(const std::string& symbol, gpb::FileDescriptorProto& out) {
  refl::ServerReflectionRequest request;
  request.set_file_containing_symbol(symbol);
  refl::ServerReflectionResponse response;
  if (exchange(request, response)) return false;
  return keep_files(response, &out);
}

std::optional<Failure> ReflectionSource::list_services(std::vector<std::string>& out) {
  refl::ServerReflectionRequest request;
  request.set_list_services("*");
  refl::ServerReflectionResponse response;
  if (auto failure = exchange(request, response)) return failure;
  if (response.has_error_response()) {
    return Failure{kExitFailed,
                   "the server's reflection could not list its services: " + response.error_response().error_message()};
  }
  out.clear();
  for (const auto& s : response.list_services_response().service()) out.push_back(s.name());
  std::sort(out.begin(), out.end());
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
