// wheelctl call: one call of any method, unary or streaming, with protobuf
// JSON in and out (grpcurl's invocation), descriptors from reflection or
// --proto files.
#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "connection_flags.h"
#include "descriptor_source.h"
#include "message_codec.h"
#include "method_path.h"
#include "request_feed.h"
#include "session.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;
namespace gpb = google::protobuf;

namespace {

constexpr const char* kUsage =
    "usage: wheelctl call HOST:PORT METHOD [JSON] [-d JSON|@] [-H 'K: V']... [flags]\n"
    "Calls METHOD (\"/pkg.Service/Method\", \"pkg.Service/Method\" or \"pkg.Service.Method\")\n"
    "with requests written in protobuf's JSON mapping and prints each reply as one line\n"
    "of JSON on stdout. The requests: JSON (or -d JSON), or with -d @ read from stdin,\n"
    "one object after another (one per line, or spread over lines), sent as they\n"
    "arrive; none given: one empty request {}. A unary or server-streaming method takes\n"
    "exactly one request; client and bidi streams take any number, then half-close.\n"
    "Descriptors come from the server's reflection, or from --proto files.\n"
    "A failed call prints \"STATUS: message\" on stderr (gRPC's status name and the\n"
    "library's message: phase, elapsed time, peer, method; a timeout's timeline).\n"
    "--timeout-ms bounds the call, or the whole stream (0: no bound once open).\n"
    "Exit status: 0 the call succeeded, 1 it failed (its status printed), 2 usage or a\n"
    "malformed request, 3 cannot resolve or connect, 5 unknown service or method, or no\n"
    "reflection on the server (give --proto).\n";

/// What the reply-reading thread found.
struct ReadSide {
  std::optional<Failure> failure;  // a reply that does not decode
  Session::Outcome outcome;        // the read that ended the loop
};

void read_replies(Session& session, rpc::ClientStream& stream, MessageCodec& codec, std::ostream& out, ReadSide& side) {
  for (int n = 1;; ++n) {
    std::optional<std::string> bytes;
    side.outcome = session.read(stream, bytes);
    if (!side.outcome || !bytes) return;
    std::string json;
    if (auto f = codec.reply_json(*bytes, n, json)) {
      side.failure = f;
      stream.cancel();
      return;
    }
    out << json << std::endl;
  }
}

int call_unary(Session& session, const MethodPath& path, MessageCodec& codec, const std::string& request, Io& io) {
  rpc::Response response;
  const auto outcome = session.call(path.path(), request, response);
  if (!outcome) return report(io, "call", session.failure(outcome));
  std::string json;
  if (auto f = codec.reply_json(response.payload, 1, json)) return report(io, "call", *f);
  io.out << json << std::endl;
  return kExitOk;
}

int call_stream(Session& session, const MethodPath& path, MessageCodec& codec, RequestFeed& feed,
                std::optional<std::string> first, Io& io) {
  rpc::ClientStream stream;
  if (auto outcome = session.open_stream(path.path(), session.stream_options(true), stream); !outcome) {
    return report(io, "call", session.failure(outcome));
  }
  ReadSide side;
  std::thread reader([&] { read_replies(session, stream, codec, io.out, side); });
  std::optional<Failure> input_failure;
  for (int n = 1; first; ++n) {
    std::string bytes;
    if ((input_failure = codec.request_bytes(*first, n, bytes))) break;
    if (!session.write(stream, std::move(bytes))) break;  // it ended: its status comes from finish
    if ((input_failure = feed.next(first))) break;
  }
  if (input_failure) {
    stream.cancel();
  } else {
    (void)session.writes_done(stream);
  }
  reader.join();
  if (input_failure) return report(io, "call", *input_failure);
  if (side.failure) return report(io, "call", *side.failure);
  const auto end = session.finish(stream);
  if (!end) return report(io, "call", session.failure(end));
  return kExitOk;
}

}  // namespace

int run_call(const Args& args, Io& io) {
  VerbFlags flags("call", kUsage);
  ConnectionFlags::declare(flags, true);
  DescriptorFlags::declare(flags);
  flags.options().add_options()("data,d", po::value<std::string>()->value_name("JSON|@"),
                                "the request(s) as JSON, or @ to read them from stdin");
  if (auto status = flags.parse(args, io)) return *status;
  const auto& words = flags.positional();
  if (words.size() < 2 || words.size() > 3) return flags.usage_error(io, "expected HOST:PORT METHOD [JSON]");
  ConnectionFlags connection;
  if (auto problem = connection.read(flags, words[0])) return flags.usage_error(io, *problem);
  const auto path = MethodPath::parse(words[1]);
  if (!path) {
    return flags.usage_error(io,
                             "expected METHOD as /pkg.Service/Method, pkg.Service/Method or "
                             "pkg.Service.Method, got '" +
                                 words[1] + "'");
  }
  DescriptorFlags descriptors;
  descriptors.read(flags);
  const bool data_flag = flags.values().count("data") > 0;
  if (data_flag && words.size() == 3) return flags.usage_error(io, "give the request as JSON or with -d, not both");
  std::unique_ptr<RequestFeed> feed;
  if (data_flag && flags.values()["data"].as<std::string>() == "@") {
    feed = std::make_unique<RequestFeed>(io.in);
  } else {
    feed = std::make_unique<RequestFeed>(data_flag           ? flags.values()["data"].as<std::string>()
                                         : words.size() == 3 ? words[2]
                                                             : std::string("{}"));
  }

  Failure failure;
  auto session = Session::open(connection, failure);
  if (!session) return report(io, "call", failure);
  auto source = descriptors.make_source(session.get(), failure);
  if (!source) return report(io, "call", failure);
  const gpb::MethodDescriptor* method = nullptr;
  if (auto f = find_method(*source, *path, method)) return report(io, "call", *f);
  source->close();
  MessageCodec codec(*method);

  std::optional<std::string> first;
  if (auto f = feed->next(first)) return report(io, "call", *f);
  if (!first) first = "{}";
  if (!method->client_streaming()) {
    std::string bytes;
    if (auto f = codec.request_bytes(*first, 1, bytes)) return report(io, "call", *f);
    std::optional<std::string> more;
    if (auto f = feed->next(more)) return report(io, "call", *f);
    if (more) {
      return report(io, "call", Failure{kExitUsage, path->full_name() + " takes exactly one request, got more"});
    }
    if (!method->server_streaming()) return call_unary(*session, *path, codec, bytes, io);
    RequestFeed none{std::string()};
    return call_stream(*session, *path, codec, none, first, io);
  }
  return call_stream(*session, *path, codec, *feed, first, io);
}

}  // namespace wheelrpc::wheelctl
