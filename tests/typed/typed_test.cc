// Typed services end to end: the stubs with every completion token, the
// coroutine and callback service bases, status codes, metadata, the server
// context, IDL policy precedence, bad bodies, and the admin gateway's JSON.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <mutex>
#include <thread>
#include <vector>
#include <tuple>
#include <type_traits>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/deadline.h>

#include "probe.wheelrpc.h"
#include "support/rpc_fixture.h"

using boost::system::error_code;
using wheelrpc::rpc::CallError;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientOptions;
using wheelrpc::rpc::ReplyInfo;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerContext;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::StatusError;
using wheelrpc::rpc::status_code_of;
using wheelrpc::test::IoThreads;
namespace asio = boost::asio;
namespace timer = wheelrpc::timer;
using typedtest::EchoReply;
using typedtest::EchoRequest;
using typedtest::Probe;

namespace {

constexpr auto kLimit = std::chrono::seconds(20);

// Compile-time: what each token makes a stub method return.
using Stub = Probe::Stub;
static_assert(std::is_same_v<decltype(std::declval<Stub&>().async_Echo(EchoRequest{}, asio::use_future)),
                             std::future<EchoReply>>);
static_assert(
    std::is_same_v<decltype(std::declval<Stub&>().async_Echo(EchoRequest{}, CallOptions{}, asio::use_awaitable)),
                   asio::awaitable<EchoReply>>);
static_assert(
    std::is_same_v<decltype(std::declval<Stub&>().async_Echo(EchoRequest{}, asio::as_tuple(asio::use_awaitable))),
                   asio::awaitable<std::tuple<error_code, EchoReply>>>);
static_assert(std::is_void_v<decltype(std::declval<Stub&>().async_Echo(EchoRequest{}, [](error_code, EchoReply) {}))>);

std::string hex_trace(const ServerContext& ctx) {
  auto t = ctx.trace();
  return t ? t->trace_id_hex() : "";
}

// The coroutine form.
class ProbeImpl : public Probe::Service {
 public:
  Client* self = nullptr;  // for nested calls
  std::atomic<int> calls{0};

  asio::awaitable<EchoReply> Echo(ServerContext& ctx, const EchoRequest& req) override {
    ++calls;
    EchoReply reply;
    reply.set_remaining_ms(ctx.remaining().count());
    reply.set_peer(ctx.peer());
    reply.set_trace_id(hex_trace(ctx));
    for (const auto& [k, v] : ctx.metadata()) reply.add_metadata(k + "=" + v);
    if (req.sleep_ms() > 0) {
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(req.sleep_ms()));
      co_await t.async_wait(asio::use_awaitable);
    }
    if (!req.fail_code().empty()) {
      StatusCode code{};
      if (!wheelrpc::rpc::parse_status_code(req.fail_code(), code)) throw std::runtime_error("bad fail_code");
      throw StatusError(code, "failed as asked: " + req.fail_code());
    }
    if (req.nested() && self) {
      // After a co_await: the nested call still inherits the deadline and trace.
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
      co_await t.async_wait(asio::use_awaitable);
      Probe::Stub stub(*self);
      EchoRequest inner;
      inner.set_text("inner");
      CallOptions o;
      o.timeout = std::chrono::seconds(60);  // longer than the caller's: the inherited deadline wins
      EchoReply r = co_await stub.async_Echo(inner, o, asio::use_awaitable);
      reply.set_nested_remaining_ms(r.remaining_ms());
      reply.set_nested_trace_id(r.trace_id());
    }
    ctx.add_reply_metadata("served-by", "coroutine");
    reply.set_text(req.text());
    reply.set_blob(req.blob());
    co_return reply;
  }
  asio::awaitable<EchoReply> Budgeted(ServerContext& ctx, const EchoRequest& req) override { return Echo(ctx, req); }
};

// The callback form: replies later, from another thread. The threads are
// joined before the fixture's io_context goes: the last reference to a
// connection may go with a responder on one of them.
class CallbackProbeImpl : public Probe::CallbackService {
 public:
  ~CallbackProbeImpl() override {
    std::lock_guard lock(mu_);
    for (auto& t : threads_) t.join();
  }
  void Echo(ServerContext& ctx, const EchoRequest& req, wheelrpc::rpc::TypedResponder<EchoReply> responder) override {
    ctx.add_reply_metadata("served-by", "callback");
    std::lock_guard lock(mu_);
    threads_.emplace_back([req, responder = std::move(responder)]() mutable {
      EchoReply reply;
      reply.set_text("later: " + req.text());
      responder.reply(reply);
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

struct TypedFixture {
  timer::HashedWheelTimer timer;  // outlives the io_context: handlers it destroys may touch it
  IoThreads threads;
  ProbeImpl impl;
  CallbackProbeImpl callback_impl;
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> client;

  explicit TypedFixture(bool callback_form = false, ClientOptions copts = {}) {
    server = std::make_unique<Server>(threads.io.get_executor(), timer);
    if (callback_form) {
      server->add_service(callback_impl);
    } else {
      server->add_service(impl);
    }
    EXPECT_FALSE(server->listen({asio::ip::make_address("127.0.0.1"), 0}));
    client = std::make_unique<Client>(threads.io.get_executor(), timer,
                                      std::vector<asio::ip::tcp::endpoint>{server->local_endpoint()}, copts);
    impl.self = client.get();
  }
  ~TypedFixture() {
    client->close();
    server->stop();
    threads.stop();
  }
};

template <class F>
auto wait(F&& f) {
  EXPECT_EQ(f.wait_for(kLimit), std::future_status::ready);
  return f.get();
}

EchoRequest text(std::string t) {
  EchoRequest r;
  r.set_text(std::move(t));
  return r;
}

TEST(TypedTokens, Callback) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  std::promise<std::tuple<error_code, std::string>> p;
  stub.async_Echo(text("cb"), [&](error_code ec, EchoReply r) { p.set_value({ec, r.text()}); });
  auto [ec, t] = wait(p.get_future());
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(t, "cb");
}

TEST(TypedTokens, UseFutureThrowsCallErrorWithTheFullMessage) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  EXPECT_EQ(wait(stub.async_Echo(text("f"), asio::use_future)).text(), "f");
  EchoRequest bad = text("x");
  bad.set_fail_code("NOT_FOUND");
  auto f = stub.async_Echo(bad, asio::use_future);
  ASSERT_EQ(f.wait_for(kLimit), std::future_status::ready);
  try {
    f.get();
    FAIL() << "expected CallError";
  } catch (const CallError& e) {
    EXPECT_EQ(e.code(), make_error_code(StatusCode::not_found));
    EXPECT_EQ(status_code_of(e.code()), StatusCode::not_found);
    const std::string what = e.what();
    EXPECT_NE(what.find("/typedtest.Probe/Echo"), std::string::npos) << what;
    EXPECT_NE(what.find("failed as asked: NOT_FOUND"), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1:"), std::string::npos) << what;
  }
}

TEST(TypedTokens, UseAwaitableAndAsTupleAndDeferred) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  auto f = asio::co_spawn(
      fx.threads.io,
      [&]() -> asio::awaitable<std::string> {
        EchoReply a = co_await stub.async_Echo(text("a"), asio::use_awaitable);
        EchoRequest bad = text("b");
        bad.set_fail_code("PERMISSION_DENIED");
        auto [ec, b] = co_await stub.async_Echo(bad, asio::as_tuple(asio::use_awaitable));
        std::string thrown;
        try {
          co_await stub.async_Echo(bad, asio::use_awaitable);
        } catch (const CallError& e) {
          thrown = std::string(wheelrpc::rpc::to_string(status_code_of(e.code())));
        }
        auto op = stub.async_Echo(text("d"), asio::deferred);  // nothing sent until awaited
        EchoReply d = co_await std::move(op)(asio::use_awaitable);
        co_return a.text() + "|" + std::string(wheelrpc::rpc::to_string(status_code_of(ec))) + "|" + thrown + "|" +
            d.text();
      },
      asio::use_future);
  EXPECT_EQ(wait(f), "a|PERMISSION_DENIED|PERMISSION_DENIED|d");
}

TEST(TypedTokens, CancellationThroughTheTokensSlotFreesTheCallAtOnce) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  asio::cancellation_signal cancel;
  std::promise<error_code> p;
  EchoRequest slow = text("slow");
  slow.set_sleep_ms(60'000);
  CallOptions o;
  o.timeout = std::chrono::seconds(120);
  stub.async_Echo(slow, o,
                  asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, EchoReply) { p.set_value(ec); }));
  // Cancel from the executor once the call is in flight on the server.
  for (auto until = std::chrono::steady_clock::now() + kLimit;
       fx.impl.calls.load() == 0 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::yield();
  }
  asio::post(fx.threads.io, [&] { cancel.emit(asio::cancellation_type::terminal); });
  EXPECT_EQ(wait(p.get_future()), asio::error::operation_aborted);
}

TEST(TypedService, MetadataBothWaysPeerAndTrace) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  CallOptions o;
  o.attachments.emplace_back("tenant", "blue");
  o.reply_info = std::make_shared<ReplyInfo>();
  EchoReply r = wait(stub.async_Echo(text("m"), o, asio::use_future));
  bool tenant = false;
  for (const auto& m : r.metadata()) tenant = tenant || m == "tenant=blue";
  EXPECT_TRUE(tenant);
  EXPECT_EQ(r.peer().rfind("127.0.0.1:", 0), 0u) << r.peer();
  EXPECT_EQ(r.trace_id().size(), 32u);
  ASSERT_EQ(o.reply_info->metadata.size(), 1u);
  EXPECT_EQ(o.reply_info->metadata[0].first, "served-by");
  EXPECT_EQ(o.reply_info->metadata[0].second, "coroutine");
}

TEST(TypedService, NestedCallsAfterACoAwaitInheritTheDeadlineAndTrace) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  EchoRequest req = text("outer");
  req.set_nested(true);
  CallOptions o;
  o.timeout = std::chrono::seconds(10);
  EchoReply r = wait(stub.async_Echo(req, o, asio::use_future));
  EXPECT_GT(r.nested_remaining_ms(), 0);
  EXPECT_LE(r.nested_remaining_ms(), 10'000);  // not the inner call's own 60 s
  EXPECT_EQ(r.nested_trace_id(), r.trace_id());
}

TEST(TypedService, CallbackFormRepliesLaterFromAnotherThread) {
  TypedFixture fx(/*callback_form=*/true);
  Probe::Stub stub(*fx.client);
  CallOptions o;
  o.reply_info = std::make_shared<ReplyInfo>();
  EXPECT_EQ(wait(stub.async_Echo(text("x"), o, asio::use_future)).text(), "later: x");
  ASSERT_EQ(o.reply_info->metadata.size(), 1u);
  EXPECT_EQ(o.reply_info->metadata[0].second, "callback");
  // The callback base's methods not overridden answer unimplemented.
  std::promise<error_code> p;
  stub.async_Budgeted(text("y"), [&](error_code ec, EchoReply) { p.set_value(ec); });
  EXPECT_EQ(status_code_of(wait(p.get_future())), StatusCode::unimplemented);
}

TEST(TypedService, AMethodNotOverriddenAndAnUnknownMethodAreUnimplemented) {
  TypedFixture fx;
  Probe::Stub stub(*fx.client);
  std::promise<std::tuple<error_code, std::string>> p;
  auto info = std::make_shared<ReplyInfo>();
  CallOptions o;
  o.reply_info = info;
  stub.async_Missing(text("m"), o, [&](error_code ec, EchoReply) { p.set_value({ec, info->error_message}); });
  auto [ec, message] = wait(p.get_future());
  EXPECT_EQ(ec, make_error_code(StatusCode::unimplemented));
  EXPECT_NE(message.find("'/typedtest.Probe/Missing' is not implemented"), std::string::npos) << message;
  auto unknown = wheelrpc::test::call_and_wait(*fx.client, "/typedtest.Probe/Nothing", "");
  EXPECT_EQ(status_code_of(unknown.ec), StatusCode::unimplemented);
}

TEST(TypedService, AnInvalidBodyIsInvalidArgumentNamingTheMethodAndTheConnectionStaysUsable) {
  TypedFixture fx;
  auto bad = wheelrpc::test::call_and_wait(*fx.client, "/typedtest.Probe/Echo", std::string("\xff\xff\xff\xff", 4));
  EXPECT_EQ(bad.ec, make_error_code(StatusCode::invalid_argument));
  EXPECT_NE(bad.response.error_message.find("'/typedtest.Probe/Echo' is not a valid typedtest.EchoRequest"),
            std::string::npos)
      << bad.response.error_message;
  Probe::Stub stub(*fx.client);
  EXPECT_EQ(wait(stub.async_Echo(text("after"), asio::use_future)).text(), "after");
  EXPECT_EQ(fx.client->stats().connects, 1u);
  EXPECT_EQ(fx.impl.calls.load(), 1);
}

TEST(TypedService, AReplyThatDoesNotParseIsInternal) {
  timer::HashedWheelTimer timer;  // outlives the io_context: handlers it destroys may touch it
  IoThreads threads;
  Server server(threads.io.get_executor(), timer);
  server.handle("/typedtest.Probe/Echo",
                [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) { r.reply(std::string("\xff\xff\xff", 3)); });
  ASSERT_FALSE(server.listen({asio::ip::make_address("127.0.0.1"), 0}));
  Client client(threads.io.get_executor(), timer, {server.local_endpoint()});
  Probe::Stub stub(client);
  std::promise<error_code> p;
  stub.async_Echo(text("x"), [&](error_code ec, EchoReply) { p.set_value(ec); });
  EXPECT_EQ(wait(p.get_future()), make_error_code(StatusCode::internal));
  client.close();
  server.stop();
}

// call > IDL > ClientOptions::call_defaults > built-in default, observed as
// the budget the server sees.
TEST(TypedPolicy, CallBeatsIdlBeatsClientDefault) {
  ClientOptions copts;
  copts.call_defaults.timeout = std::chrono::seconds(40);
  TypedFixture fx(false, copts);
  Probe::Stub stub(*fx.client);
  // Echo has no IDL option: the client default (40 s) applies.
  EXPECT_GT(wait(stub.async_Echo(text("a"), asio::use_future)).remaining_ms(), 30'000);
  // Budgeted's IDL says 3000 ms: it beats the client default.
  const auto idl = wait(stub.async_Budgeted(text("b"), asio::use_future)).remaining_ms();
  EXPECT_GT(idl, 0);
  EXPECT_LE(idl, 3000);
  // A timeout given at the call beats the IDL on the client, but the
  // server holds the method to its IDL timeout: the earlier one wins there.
  CallOptions o;
  o.timeout = std::chrono::seconds(20);
  EXPECT_LE(wait(stub.async_Budgeted(text("c"), o, asio::use_future)).remaining_ms(), 3000);
  o.timeout = std::chrono::milliseconds(1000);
  const auto shorter = wait(stub.async_Budgeted(text("d"), o, asio::use_future)).remaining_ms();
  EXPECT_GT(shorter, 0);
  EXPECT_LE(shorter, 1000);
}

TEST(TypedPolicy, FillPolicyTakesOnlyWhatTheCallLeftAlone) {
  wheelrpc::rpc::MethodPolicy policy{.timeout = std::chrono::milliseconds(200), .idempotent = true, .retries = 0};
  CallOptions o;
  o.retries = 2;  // given, even though it is the default value
  wheelrpc::rpc::fill_policy(o, policy);
  EXPECT_EQ(*o.timeout, std::chrono::milliseconds(200));
  EXPECT_TRUE(o.idempotent);
  EXPECT_EQ(o.retries, 2);
  EXPECT_TRUE(o.timeout.given());
  CallOptions defaults;
  defaults.timeout = std::chrono::seconds(9);
  defaults.wait_for_ready = true;
  wheelrpc::rpc::fill_defaults(o, defaults);
  EXPECT_EQ(*o.timeout, std::chrono::milliseconds(200));  // the IDL's stays
  EXPECT_TRUE(o.wait_for_ready);                          // the client default fills the rest
  EXPECT_FALSE(o.hedge_delay.given());
}

TEST(TypedPolicy, CompressionCallBeatsIdlBeatsClientDefault) {
  using wheelrpc::transport::Compression;
  constexpr auto idl = Probe::Methods::Compressed::policy;
  static_assert(idl.compression == Compression::zstd);
  static_assert(idl.compression_level == 5);
  static_assert(!Probe::Methods::Echo::policy.compression.has_value());
  ClientOptions copts;
  copts.call_defaults.compression = Compression::gzip;
  copts.call_defaults.compression_level = 9;
  // What a typed call does with its CallOptions: the method's IDL policy,
  // then the client's call_defaults.
  const auto resolve = [&](CallOptions o, const wheelrpc::rpc::MethodPolicy& policy) {
    wheelrpc::rpc::fill_policy(o, policy);
    wheelrpc::rpc::fill_defaults(o, copts.call_defaults);
    return o;
  };

  // Nothing at the call: the IDL's zstd at 5 beats the client's gzip at 9.
  const CallOptions from_idl = resolve(CallOptions{}, idl);
  EXPECT_EQ(*from_idl.compression, Compression::zstd);
  EXPECT_EQ(*from_idl.compression_level, 5);
  EXPECT_TRUE(from_idl.compression.given());

  // The call's own beat the IDL, each field on its own: identity (off) at
  // the call, the level still the IDL's.
  CallOptions off;
  off.compression = Compression::identity;
  const CallOptions call_off = resolve(off, idl);
  EXPECT_EQ(*call_off.compression, Compression::identity);
  EXPECT_EQ(*call_off.compression_level, 5);
  CallOptions both;
  both.compression = Compression::lz4;
  both.compression_level = 0;  // given, even though it is the default value
  const CallOptions from_call = resolve(both, idl);
  EXPECT_EQ(*from_call.compression, Compression::lz4);
  EXPECT_EQ(*from_call.compression_level, 0);

  // No IDL option (Echo): the client default.
  const CallOptions from_client = resolve(CallOptions{}, Probe::Methods::Echo::policy);
  EXPECT_EQ(*from_client.compression, Compression::gzip);
  EXPECT_EQ(*from_client.compression_level, 9);

  // None of the three: the built-in identity at level 0, not given.
  CallOptions builtin;
  wheelrpc::rpc::fill_policy(builtin, Probe::Methods::Echo::policy);
  wheelrpc::rpc::fill_defaults(builtin, CallOptions{});
  EXPECT_EQ(*builtin.compression, Compression::identity);
  EXPECT_EQ(*builtin.compression_level, 0);
  EXPECT_FALSE(builtin.compression.given());
}

TEST(TypedPolicy, TheGeneratedTraitsCarryTheIdlOption) {
  constexpr auto p = Probe::Methods::Budgeted::policy;
  static_assert(p.timeout == std::chrono::milliseconds(3000));
  static_assert(p.retries == 0);
  static_assert(!p.idempotent.has_value());
  static_assert(!Probe::Methods::Echo::policy.timeout.has_value());
  EXPECT_EQ(Probe::Methods::Echo::path, "/typedtest.Probe/Echo");
}

}  // namespace

// The IDL's timeout binds the server too (docs/timeouts.md, "The server's
// side"): a caller with no deadline, or a later one, gets the method's.
TEST(TypedPolicy, TheIdlTimeoutIsTheServersDeadlineForACallerWithoutOneOrWithALaterOne) {
  for (auto wire : {wheelrpc::rpc::WireProtocol::native, wheelrpc::rpc::WireProtocol::grpc}) {
    SCOPED_TRACE(wire == wheelrpc::rpc::WireProtocol::grpc ? "grpc" : "native");
    ClientOptions copts;
    copts.protocol = wire;  // on gRPC a call without a deadline sends no grpc-timeout, as a foreign client's
    TypedFixture fx(false, copts);
    EchoRequest req = text("bounded");
    std::string body;
    req.SerializeToString(&body);
    for (auto budget : {CallOptions::kNoDeadline, std::chrono::milliseconds(60000)}) {
      CallOptions o;
      o.timeout = budget;  // an untyped call: the stub's IDL policy is not applied on the client
      auto out = wheelrpc::test::call_and_wait(*fx.client, "/typedtest.Probe/Budgeted", body, o);
      ASSERT_FALSE(out.ec) << out.response.error_message;
      EchoReply reply;
      ASSERT_TRUE(reply.ParseFromString(out.response.payload));
      EXPECT_GT(reply.remaining_ms(), 0);
      EXPECT_LE(reply.remaining_ms(), 3000) << "the handler's deadline is the IDL's 3000 ms";
    }
    // A caller's earlier deadline stays its own.
    CallOptions early;
    early.timeout = std::chrono::milliseconds(1500);
    auto out = wheelrpc::test::call_and_wait(*fx.client, "/typedtest.Probe/Budgeted", body, early);
    ASSERT_FALSE(out.ec) << out.response.error_message;
    EchoReply reply;
    ASSERT_TRUE(reply.ParseFromString(out.response.payload));
    EXPECT_LE(reply.remaining_ms(), 1500);
  }
}

TEST(TypedService, AServiceRegisteredTwiceIsRefusedNamingWhatIsTaken) {
  timer::HashedWheelTimer timer;
  IoThreads threads;
  ProbeImpl impl;
  CallbackProbeImpl other;
  Server server(threads.io.get_executor(), timer);
  server.add_service(impl);
  try {
    server.add_service(other);  // the same paths
    ADD_FAILURE() << "a second service with the same methods was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'/typedtest.Probe/Echo'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("registered already"), std::string::npos) << e.what();
  }
  EXPECT_THROW(server.add_service(impl), std::invalid_argument);
  ASSERT_FALSE(server.listen({asio::ip::make_address("127.0.0.1"), 0}));
  try {
    server.add_service(impl);
    ADD_FAILURE() << "add_service after listen was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("after listen()"), std::string::npos) << e.what();
  }
  server.stop();
  threads.stop();
}
