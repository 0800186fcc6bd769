// Server reflection end to end (wheelrpc::services::ServerReflection): a
// server with a typed service (reflection_probe.proto, which imports
// reflection_types.proto and wheelrpc/options.proto), an untyped handler
// and reflection, asked through the generated reflection stubs on both
// wires and in both versions (v1, v1alpha): list_services, the file of a
// symbol (service, method, nested message, enum, enum value, field, oneof),
// a file by name with its imports sent once per stream, extensions, and the
// errors gRPC answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <google/protobuf/descriptor.pb.h>

#include <wheelrpc/services/server_reflection.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "grpc/reflection/v1/reflection.wheelrpc.h"
#include "grpc/reflection/v1alpha/reflection.wheelrpc.h"
#include "reflection_probe.wheelrpc.h"
#include "support/rpc_fixture.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
namespace pb = google::protobuf;
using wheelrpc::services::ServerReflection;
using wheelrpc::test::IoThreads;

namespace {

constexpr auto kLimit = std::chrono::seconds(30);

class PainterImpl : public reflecttest::Painter::Service {
  asio::awaitable<reflecttest::DrawReply> Draw(rpc::ServerContext&, const reflecttest::DrawRequest&) override {
    co_return reflecttest::DrawReply{};
  }
};

/// A server with the typed Painter, an untyped handler and reflection
/// (health off unless asked), and a client on `wire`.
struct Fixture {
  wheelrpc::timer::HashedWheelTimer timer;  // outlives the io threads
  IoThreads threads;
  PainterImpl painter;
  std::unique_ptr<rpc::Server> server;
  std::unique_ptr<ServerReflection> reflection;
  std::unique_ptr<rpc::Client> client;

  explicit Fixture(rpc::WireProtocol wire, bool health = false) {
    rpc::ServerOptions options;
    options.health_service = health;
    server = std::make_unique<rpc::Server>(threads.io.get_executor(), timer, options);
    server->add_service(painter);
    server->handle("/reflecttest.Untyped/Do", [](rpc::Request, rpc::Responder r) { r.reply("done"); });
    reflection = std::make_unique<ServerReflection>(*server);
    EXPECT_FALSE(server->listen({asio::ip::make_address("127.0.0.1"), 0}));
    rpc::ClientOptions copts;
    copts.protocol = wire;
    client = std::make_unique<rpc::Client>(threads.io.get_executor(), timer,
                                           std::vector<asio::ip::tcp::endpoint>{server->local_endpoint()}, copts);
  }
  ~Fixture() {
    client->close();
    server->stop();
    threads.stop();
  }

  /// Runs the coroutine `f` on the io threads; waits for its result (bounded).
  template <class F>
  auto run(F f) {
    auto future = asio::co_spawn(threads.io, std::move(f), asio::use_future);
    if (future.wait_for(kLimit) != std::future_status::ready) throw std::runtime_error("no completion in 30 s");
    return future.get();
  }
};

/// The names of the files of a file_descriptor_response, in order.
template <class Response>
std::vector<std::string> file_names(const Response& response) {
  std::vector<std::string> names;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    pb::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    names.push_back(file.name());
  }
  return names;
}

/// Opens one ServerReflectionInfo stream of version `Generated`, sends each
/// request and reads its response, then half-closes and finishes.
template <class Generated>
std::vector<typename Generated::Methods::ServerReflectionInfo::Reply> ask(
    Fixture& fx, std::vector<typename Generated::Methods::ServerReflectionInfo::Request> requests) {
  using Reply = typename Generated::Methods::ServerReflectionInfo::Reply;
  typename Generated::Stub stub(*fx.client);
  return fx.run([&]() -> asio::awaitable<std::vector<Reply>> {
    auto stream = co_await stub.async_ServerReflectionInfo(asio::use_awaitable);
    std::vector<Reply> replies;
    for (const auto& request : requests) {
      co_await stream.async_write(request, asio::use_awaitable);
      std::optional<Reply> reply = co_await stream.async_read(asio::use_awaitable);
      if (!reply) throw std::runtime_error("the stream ended before its reply");
      replies.push_back(std::move(*reply));
    }
    co_await stream.async_writes_done(asio::use_awaitable);
    if (co_await stream.async_read(asio::use_awaitable)) throw std::runtime_error("a reply nobody asked for");
    co_await stream.async_finish(asio::use_awaitable);
    co_return replies;
  });
}

template <class Request>
Request symbol(const std::string& name) {
  Request r;
  r.set_file_containing_symbol(name);
  return r;
}
template <class Request>
Request filename(const std::string& name) {
  Request r;
  r.set_file_by_filename(name);
  return r;
}

const std::vector<std::string> kProbeFiles = {"reflection_probe.proto", "reflection_types.proto",
                                              "wheelrpc/options.proto", "google/protobuf/descriptor.proto"};

/// The behaviour every test checks, for one version of reflection.proto.
template <class Generated>
void lists_the_typed_services(Fixture& fx) {
  using Request = typename Generated::Methods::ServerReflectionInfo::Request;
  Request list;
  list.set_list_services("*");
  list.set_host("reflect.example:443");
  const auto replies = ask<Generated>(fx, {list});
  ASSERT_EQ(replies.size(), 1u);
  const auto& reply = replies[0];
  ASSERT_TRUE(reply.has_list_services_response()) << reply.DebugString();
  std::vector<std::string> names;
  for (const auto& s : reply.list_services_response().service()) names.push_back(s.name());
  // Registration order; the untyped handler has no descriptor: not listed.
  EXPECT_EQ(names, (std::vector<std::string>{"reflecttest.Painter", "grpc.reflection.v1.ServerReflection",
                                             "grpc.reflection.v1alpha.ServerReflection"}));
  EXPECT_EQ(reply.valid_host(), "reflect.example:443");
  EXPECT_EQ(reply.original_request().SerializeAsString(), list.SerializeAsString());
}

template <class Generated>
void sends_a_symbols_file_and_its_imports_once_per_stream(Fixture& fx) {
  using Request = typename Generated::Methods::ServerReflectionInfo::Request;
  const auto replies = ask<Generated>(fx, {
                                              symbol<Request>("reflecttest.Painter"),
                                              symbol<Request>("reflecttest.Painter.Draw"),
                                              symbol<Request>("reflecttest.types.Shape.Corner"),
                                              symbol<Request>("reflecttest.types.Shape.Kind"),
                                              symbol<Request>("reflecttest.types.RED"),
                                              symbol<Request>("reflecttest.types.Shape.corners"),
                                              symbol<Request>("reflecttest.types.Shape.label"),
                                              symbol<Request>("reflecttest.DrawRequest"),
                                          });
  ASSERT_EQ(replies.size(), 8u);
  EXPECT_EQ(file_names(replies[0]), kProbeFiles) << "the file first, then its imports, breadth first";
  EXPECT_EQ(file_names(replies[1]), std::vector<std::string>{"reflection_probe.proto"});
  for (std::size_t i = 2; i < 7; ++i) {
    EXPECT_EQ(file_names(replies[i]), std::vector<std::string>{"reflection_types.proto"})
        << replies[i].original_request().file_containing_symbol();
  }
  EXPECT_EQ(file_names(replies[7]), std::vector<std::string>{"reflection_probe.proto"});

  // The bytes describe the service as the generated pool does.
  pb::FileDescriptorProto probe;
  ASSERT_TRUE(probe.ParseFromString(replies[0].file_descriptor_response().file_descriptor_proto(0)));
  pb::FileDescriptorProto expected;
  reflecttest::DrawRequest::descriptor()->file()->CopyTo(&expected);
  EXPECT_EQ(probe.SerializeAsString(), expected.SerializeAsString());
}

template <class Generated>
void sends_a_file_by_name_with_its_imports(Fixture& fx) {
  using Request = typename Generated::Methods::ServerReflectionInfo::Request;
  const auto replies =
      ask<Generated>(fx, {filename<Request>("reflection_types.proto"), filename<Request>("reflection_probe.proto"),
                          filename<Request>("reflection_probe.proto")});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(file_names(replies[0]), std::vector<std::string>{"reflection_types.proto"});
  EXPECT_EQ(file_names(replies[1]), (std::vector<std::string>{"reflection_probe.proto", "wheelrpc/options.proto",
                                                              "google/protobuf/descriptor.proto"}))
      << "reflection_types.proto went already on this stream";
  EXPECT_EQ(file_names(replies[2]), std::vector<std::string>{"reflection_probe.proto"});
  // A new stream sends the imports again.
  const auto again = ask<Generated>(fx, {filename<Request>("reflection_probe.proto")});
  EXPECT_EQ(file_names(again.at(0)), kProbeFiles);
}

template <class Generated>
void answers_extensions(Fixture& fx) {
  using Request = typename Generated::Methods::ServerReflectionInfo::Request;
  Request extension;
  extension.mutable_file_containing_extension()->set_containing_type("google.protobuf.MethodOptions");
  extension.mutable_file_containing_extension()->set_extension_number(51000);
  Request numbers;
  numbers.set_all_extension_numbers_of_type("google.protobuf.MethodOptions");
  const auto replies = ask<Generated>(fx, {extension, numbers});
  EXPECT_EQ(file_names(replies.at(0)),
            (std::vector<std::string>{"wheelrpc/options.proto", "google/protobuf/descriptor.proto"}));
  ASSERT_TRUE(replies.at(1).has_all_extension_numbers_response()) << replies[1].DebugString();
  EXPECT_EQ(replies[1].all_extension_numbers_response().base_type_name(), "google.protobuf.MethodOptions");
  ASSERT_EQ(replies[1].all_extension_numbers_response().extension_number_size(), 1);
  EXPECT_EQ(replies[1].all_extension_numbers_response().extension_number(0), 51000);
}

template <class Generated>
void answers_errors_as_grpc_does(Fixture& fx) {
  using Request = typename Generated::Methods::ServerReflectionInfo::Request;
  Request no_type;
  no_type.mutable_file_containing_extension()->set_containing_type("reflecttest.Nope");
  Request no_extension;
  no_extension.mutable_file_containing_extension()->set_containing_type("google.protobuf.MethodOptions");
  no_extension.mutable_file_containing_extension()->set_extension_number(7);
  Request no_numbers;
  no_numbers.set_all_extension_numbers_of_type("reflecttest.Nope");
  Request empty;
  empty.set_host("h");
  const auto replies =
      ask<Generated>(fx, {symbol<Request>("reflecttest.Nope"), filename<Request>("nope.proto"), no_type, no_extension,
                          no_numbers, empty, symbol<Request>("reflecttest.Painter")});
  ASSERT_EQ(replies.size(), 7u);
  const std::vector<std::pair<int, std::string>> expected = {{5, "Symbol not found."}, {5, "File not found."},
                                                             {5, "Type not found."},   {5, "Extension not found."},
                                                             {5, "Type not found."},   {12, ""}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(replies[i].has_error_response()) << replies[i].DebugString();
    EXPECT_EQ(replies[i].error_response().error_code(), expected[i].first) << i;
    EXPECT_EQ(replies[i].error_response().error_message(), expected[i].second) << i;
    EXPECT_TRUE(replies[i].has_original_request()) << i;
  }
  EXPECT_EQ(replies[5].valid_host(), "h");
  EXPECT_EQ(replies[5].original_request().SerializeAsString(), empty.SerializeAsString());
  EXPECT_EQ(replies[0].original_request().file_containing_symbol(), "reflecttest.Nope");
  EXPECT_EQ(file_names(replies[6]), kProbeFiles) << "the stream goes on after errors";
}

struct Case {
  rpc::WireProtocol wire;
  const char* name;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
class Reflection : public ::testing::TestWithParam<Case> {};
INSTANTIATE_TEST_SUITE_P(BothWires, Reflection,
                         ::testing::Values(Case{rpc::WireProtocol::native, "native"},
                                           Case{rpc::WireProtocol::grpc, "grpc"}),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

using V1 = grpc::reflection::v1::ServerReflection;
using V1alpha = grpc::reflection::v1alpha::ServerReflection;

}  // namespace

TEST_P(Reflection, V1ListsTheTypedServicesButNotUntypedHandlers) {
  Fixture fx(GetParam().wire);
  lists_the_typed_services<V1>(fx);
}
TEST_P(Reflection, V1alphaListsTheTypedServicesButNotUntypedHandlers) {
  Fixture fx(GetParam().wire);
  lists_the_typed_services<V1alpha>(fx);
}
TEST_P(Reflection, V1SendsASymbolsFileAndItsImportsOncePerStream) {
  Fixture fx(GetParam().wire);
  sends_a_symbols_file_and_its_imports_once_per_stream<V1>(fx);
}
TEST_P(Reflection, V1alphaSendsASymbolsFileAndItsImportsOncePerStream) {
  Fixture fx(GetParam().wire);
  sends_a_symbols_file_and_its_imports_once_per_stream<V1alpha>(fx);
}
TEST_P(Reflection, V1SendsAFileByNameWithItsImports) {
  Fixture fx(GetParam().wire);
  sends_a_file_by_name_with_its_imports<V1>(fx);
}
TEST_P(Reflection, V1alphaSendsAFileByNameWithItsImports) {
  Fixture fx(GetParam().wire);
  sends_a_file_by_name_with_its_imports<V1alpha>(fx);
}
TEST_P(Reflection, V1AnswersExtensions) {
  Fixture fx(GetParam().wire);
  answers_extensions<V1>(fx);
}
TEST_P(Reflection, V1alphaAnswersExtensions) {
  Fixture fx(GetParam().wire);
  answers_extensions<V1alpha>(fx);
}
TEST_P(Reflection, V1AnswersUnknownNamesWithNotFoundAndAnEmptyRequestWithUnimplemented) {
  Fixture fx(GetParam().wire);
  answers_errors_as_grpc_does<V1>(fx);
}
TEST_P(Reflection, V1alphaAnswersUnknownNamesWithNotFoundAndAnEmptyRequestWithUnimplemented) {
  Fixture fx(GetParam().wire);
  answers_errors_as_grpc_does<V1alpha>(fx);
}

// The reflection services describe themselves (their descriptors are
// embedded in the services module's generated headers).
TEST_P(Reflection, TheReflectionServicesResolveTheirOwnSymbols) {
  Fixture fx(GetParam().wire);
  using Request = V1::Methods::ServerReflectionInfo::Request;
  const auto replies = ask<V1>(fx, {symbol<Request>("grpc.reflection.v1alpha.ServerReflection.ServerReflectionInfo"),
                                    symbol<Request>("grpc.reflection.v1.ServerReflectionResponse")});
  EXPECT_EQ(file_names(replies.at(0)), std::vector<std::string>{"grpc/reflection/v1alpha/reflection.proto"});
  EXPECT_EQ(file_names(replies.at(1)), std::vector<std::string>{"grpc/reflection/v1/reflection.proto"});
}

// With ServerOptions::health_service on, the server's own grpc.health.v1.Health
// is listed and its file served (from the services module's generated code).
TEST_P(Reflection, ListsTheServersHealthServiceWhenItServesIt) {
  Fixture fx(GetParam().wire, true);
  using Request = V1::Methods::ServerReflectionInfo::Request;
  Request list;
  list.set_list_services("");
  const auto replies = ask<V1>(fx, {list, symbol<Request>("grpc.health.v1.Health.Watch")});
  std::vector<std::string> names;
  for (const auto& s : replies.at(0).list_services_response().service()) names.push_back(s.name());
  EXPECT_EQ(names, (std::vector<std::string>{"reflecttest.Painter", "grpc.reflection.v1.ServerReflection",
                                             "grpc.reflection.v1alpha.ServerReflection", "grpc.health.v1.Health"}));
  EXPECT_EQ(file_names(replies.at(1)), std::vector<std::string>{"grpc/health/v1/health.proto"});
  EXPECT_EQ(fx.reflection->service_names(), names);
}

TEST(ServerReflectionRegistration, IsRefusedOnceTheServerListensAndTwiceOnOneServer) {
  wheelrpc::timer::HashedWheelTimer timer;
  IoThreads threads(1);
  {
    rpc::Server server(threads.io.get_executor(), timer);
    ServerReflection reflection(server);
    EXPECT_THROW(ServerReflection again(server), std::invalid_argument);
  }
  {
    rpc::Server server(threads.io.get_executor(), timer);
    ASSERT_FALSE(server.listen({asio::ip::make_address("127.0.0.1"), 0}));
    EXPECT_THROW(ServerReflection late(server), std::logic_error);
    server.stop();
  }
  threads.stop();
}
