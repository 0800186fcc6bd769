// Typed streams end to end (stream_probe.proto): the three kinds in the
// coroutine and callback forms, the tokens, the IDL's stream timers and the
// call overriding them, a handler's StatusError reaching the client, an
// unimplemented method, and messages that do not parse, both ways.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/rpc/trace.h>

#include "stream_probe.wheelrpc.h"
#include "support/rpc_fixture.h"
#include "support/wait.h"

using boost::system::error_code;
using wheelrpc::rpc::CallError;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::Client;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::MethodKind;
using wheelrpc::rpc::Server;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::StatusCode;
using wheelrpc::rpc::StatusError;
using wheelrpc::rpc::StreamTimer;
using wheelrpc::rpc::TypedClientStream;
using wheelrpc::rpc::TypedServerStream;
using wheelrpc::test::IoThreads;
namespace asio = boost::asio;
namespace timer = wheelrpc::timer;
using typedstream::CountRequest;
using typedstream::Note;
using typedstream::StreamProbe;
using typedstream::Total;

namespace {

constexpr auto kLimit = std::chrono::seconds(20);

// Compile-time: the traits and what each token makes a stub and a stream return.
static_assert(StreamProbe::Methods::Chat::kind == MethodKind::bidi_streaming);
static_assert(StreamProbe::Methods::Count::kind == MethodKind::server_streaming);
static_assert(StreamProbe::Methods::Sum::kind == MethodKind::client_streaming);
static_assert(StreamProbe::Methods::Silent::policy.message_timeout == std::chrono::milliseconds(300));
static_assert(StreamProbe::Methods::Budgeted::policy.stream_timeout == std::chrono::seconds(30));
static_assert(!StreamProbe::Methods::Chat::policy.message_timeout.has_value());
using ChatStream = TypedClientStream<Note, Note>;
using CountStream = TypedClientStream<CountRequest, Note>;
using SumStream = TypedClientStream<Note, Total>;
using Stub = StreamProbe::Stub;
static_assert(
    std::is_same_v<decltype(std::declval<Stub&>().async_Chat(asio::use_awaitable)), asio::awaitable<ChatStream>>);
static_assert(
    std::is_same_v<decltype(std::declval<Stub&>().async_Sum(CallOptions{}, asio::use_future)), std::future<SumStream>>);
static_assert(
    std::is_same_v<decltype(std::declval<Stub&>().async_Count(CountRequest{}, asio::as_tuple(asio::use_awaitable))),
                   asio::awaitable<std::tuple<error_code, CountStream>>>);
static_assert(std::is_same_v<decltype(std::declval<ChatStream&>().async_read(asio::use_awaitable)),
                             asio::awaitable<std::optional<Note>>>);
static_assert(std::is_same_v<decltype(std::declval<ChatStream&>().async_read(asio::as_tuple(asio::use_awaitable))),
                             asio::awaitable<std::tuple<error_code, std::optional<Note>>>>);
static_assert(std::is_same_v<decltype(std::declval<ChatStream&>().async_finish(asio::use_future)), std::future<void>>);

Note note(std::string text, long n = 0) {
  Note m;
  m.set_text(std::move(text));
  m.set_n(n);
  return m;
}

Total total_of(const TypedServerStream<Note, Total>& stream, const char* form) {
  Total t;
  t.set_form(form);
  t.set_peer(stream.peer());
  for (const auto& [k, v] : stream.metadata()) t.add_metadata(k + "=" + v);
  const auto deadline = stream.deadline();
  t.set_deadline_ms(
      deadline
          ? std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now()).count()
          : -1);
  return t;
}

// The coroutine form.
class CoroutineProbe : public StreamProbe::Service {
 public:
  asio::awaitable<void> Chat(TypedServerStream<Note, Note>& stream) override {
    while (std::optional<Note> n = co_await stream.async_read(asio::use_awaitable)) {
      n->set_text("coroutine: " + n->text());
      co_await stream.async_write(*n, asio::use_awaitable);
    }
  }
  asio::awaitable<void> Count(const CountRequest& request, TypedServerStream<CountRequest, Note>& stream) override {
    for (int i = 0; i < request.n(); ++i) co_await stream.async_write(note(std::to_string(i), i), asio::use_awaitable);
    if (!request.fail_code().empty()) {
      StatusCode code{};
      if (!wheelrpc::rpc::parse_status_code(request.fail_code(), code)) throw std::runtime_error("bad fail_code");
      throw StatusError(code, "failed as asked: " + request.fail_code());
    }
  }
  asio::awaitable<Total> Sum(TypedServerStream<Note, Total>& stream) override {
    Total t = total_of(stream, "coroutine");
    while (std::optional<Note> n = co_await stream.async_read(asio::use_awaitable)) {
      t.set_sum(t.sum() + n->n());
      t.set_count(t.count() + 1);
    }
    // After co_awaits: what a call made here would inherit.
    const auto deadline = wheelrpc::rpc::current_deadline();
    t.set_scope_deadline_ms(
        deadline ? std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now())
                       .count()
                 : -1);
    const auto trace = wheelrpc::rpc::current_trace();
    t.set_scope_trace_id(trace ? trace->trace_id_hex() : "");
    t.set_trace_id(stream.trace() ? stream.trace()->trace_id_hex() : "");
    co_return t;
  }
  asio::awaitable<void> Silent(const CountRequest& request, TypedServerStream<CountRequest, Note>& stream) override {
    return quiet(request, stream);
  }
  asio::awaitable<void> Patient(const CountRequest& request, TypedServerStream<CountRequest, Note>& stream) override {
    return quiet(request, stream);
  }
  asio::awaitable<Total> Budgeted(TypedServerStream<Note, Total>& stream) override { return Sum(stream); }

  std::atomic<int> quiet_cancelled{0};

 private:
  // Writes nothing for delay_ms (0: until the stream ends), then one note.
  asio::awaitable<void> quiet(CountRequest request, TypedServerStream<CountRequest, Note>& stream) {
    const auto start = std::chrono::steady_clock::now();
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (!stream.cancelled()) {
      if (request.delay_ms() > 0 &&
          std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(request.delay_ms())) {
        co_await stream.async_write(note("at last"), asio::use_awaitable);
        co_return;
      }
      t.expires_after(std::chrono::milliseconds(10));
      co_await t.async_wait(asio::use_awaitable);
    }
    ++quiet_cancelled;
  }
};

// The callback form: the handler owns the stream and finishes it.
class CallbackProbe : public StreamProbe::CallbackService {
 public:
  void Chat(TypedServerStream<Note, Note> stream) override {
    // Read, write back, repeat, with completion callbacks.
    struct Echo : std::enable_shared_from_this<Echo> {
      TypedServerStream<Note, Note> stream;
      void read() {
        stream.async_read([self = shared_from_this()](error_code ec, std::optional<Note> n) {
          if (ec) return;  // it ended: dropping it is fine
          if (!n) return self->stream.finish();
          n->set_text("callback: " + n->text());
          self->stream.async_write(*n, [self](error_code write_ec) {
            if (!write_ec) self->read();
          });
        });
      }
    };
    auto echo = std::make_shared<Echo>();
    echo->stream = std::move(stream);
    echo->read();
  }
  void Count(TypedServerStream<CountRequest, Note> stream) override {
    // A server streaming handler reads its request itself.
    struct Counter : std::enable_shared_from_this<Counter> {
      TypedServerStream<CountRequest, Note> stream;
      CountRequest request;
      void start() {
        stream.async_read([self = shared_from_this()](error_code ec, std::optional<CountRequest> r) {
          if (ec) return;
          if (!r) return self->stream.finish(StatusCode::invalid_argument, "no request");
          self->request = std::move(*r);
          self->write(0);
        });
      }
      void write(int i) {
        if (i < request.n()) {
          stream.async_write(note(std::to_string(i), i), [self = shared_from_this(), i](error_code ec) {
            if (!ec) self->write(i + 1);
          });
        } else if (request.fail_code().empty()) {
          stream.finish();
        } else {
          StatusCode code = StatusCode::unknown;
          wheelrpc::rpc::parse_status_code(request.fail_code(), code);
          stream.finish(code, "failed as asked: " + request.fail_code());
        }
      }
    };
    auto counter = std::make_shared<Counter>();
    counter->stream = std::move(stream);
    counter->start();
  }
  void Sum(TypedServerStream<Note, Total> stream) override {
    // Or go on in a coroutine of its own.
    asio::co_spawn(
        stream.get_executor(),
        [stream]() mutable -> asio::awaitable<void> {
          Total t = total_of(stream, "callback");
          while (std::optional<Note> n = co_await stream.async_read(asio::use_awaitable)) {
            t.set_sum(t.sum() + n->n());
            t.set_count(t.count() + 1);
          }
          co_await stream.async_write(t, asio::use_awaitable);
          stream.finish();
        },
        asio::detached);
  }
};

enum class Form { coroutine, callback };

struct StreamFixture {
  timer::HashedWheelTimer timer;  // outlives the io_context: handlers it destroys may touch it
  IoThreads threads;
  CoroutineProbe coroutine_impl;
  CallbackProbe callback_impl;
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> client;

  /// A server with the typed service in `form`, and a client.
  explicit StreamFixture(Form form = Form::coroutine) {
    server = std::make_unique<Server>(threads.io.get_executor(), timer);
    if (form == Form::callback) {
      server->add_service(callback_impl);
    } else {
      server->add_service(coroutine_impl);
    }
    EXPECT_FALSE(server->listen({asio::ip::make_address("127.0.0.1"), 0}));
    client = std::make_unique<Client>(threads.io.get_executor(), timer,
                                      std::vector<asio::ip::tcp::endpoint>{server->local_endpoint()});
  }
  ~StreamFixture() {
    client->close();
    server->stop();
    threads.stop();
  }

  /// Runs `f` (a coroutine) on the io threads and waits for its result (bounded).
  template <class F>
  auto run(F f) {
    auto future = asio::co_spawn(threads.io, std::move(f), asio::use_future);
    if (future.wait_for(kLimit) != std::future_status::ready) throw std::runtime_error("no completion in 20 s");
    return future.get();
  }
};

const char* name_of(Form form) { return form == Form::coroutine ? "coroutine" : "callback"; }
void PrintTo(Form form, std::ostream* os) { *os << name_of(form); }

class TypedStreamForms : public ::testing::TestWithParam<Form> {};
INSTANTIATE_TEST_SUITE_P(BothForms, TypedStreamForms, ::testing::Values(Form::coroutine, Form::callback),
                         [](const ::testing::TestParamInfo<Form>& p) { return std::string(name_of(p.param)); });

TEST_P(TypedStreamForms, BidiEchoesEveryMessageThenEndsWithSuccess) {
  StreamFixture fx(GetParam());
  Stub stub(*fx.client);
  auto got = fx.run([&]() -> asio::awaitable<std::vector<std::string>> {
    ChatStream chat = co_await stub.async_Chat(asio::use_awaitable);
    std::vector<std::string> texts;
    for (int i = 0; i < 50; ++i) {
      co_await chat.async_write(note("m" + std::to_string(i), i), asio::use_awaitable);
      std::optional<Note> reply = co_await chat.async_read(asio::use_awaitable);
      texts.push_back(reply ? reply->text() : "<end>");
    }
    co_await chat.async_writes_done(asio::use_awaitable);
    EXPECT_FALSE((co_await chat.async_read(asio::use_awaitable)).has_value());
    co_await chat.async_finish(asio::use_awaitable);
    EXPECT_EQ(chat.info().messages_sent, 50u);
    EXPECT_EQ(chat.info().messages_received, 50u);
    EXPECT_EQ(chat.error_message(), "");
    co_return texts;
  });
  ASSERT_EQ(got.size(), 50u);
  EXPECT_EQ(got.front(), std::string(name_of(GetParam())) + ": m0");
  EXPECT_EQ(got.back(), std::string(name_of(GetParam())) + ": m49");
}

TEST_P(TypedStreamForms, ServerStreamingSendsEveryMessageThenEnds) {
  StreamFixture fx(GetParam());
  Stub stub(*fx.client);
  CountRequest request;
  request.set_n(200);
  const int n = fx.run([&]() -> asio::awaitable<int> {
    CountStream count = co_await stub.async_Count(request, asio::use_awaitable);
    int i = 0;
    while (std::optional<Note> m = co_await count.async_read(asio::use_awaitable)) {
      EXPECT_EQ(m->n(), i);
      EXPECT_EQ(m->text(), std::to_string(i));
      ++i;
    }
    co_await count.async_finish(asio::use_awaitable);
    co_return i;
  });
  EXPECT_EQ(n, 200);
}

TEST_P(TypedStreamForms, ClientStreamingAnswersOnceWithWhatTheHandlerSaw) {
  StreamFixture fx(GetParam());
  Stub stub(*fx.client);
  CallOptions o;
  o.attachments.emplace_back("tenant", "blue");
  // use_future from this thread: every completion runs on the client's threads.
  SumStream sum = [&] {
    auto f = stub.async_Sum(o, asio::use_future);
    EXPECT_EQ(f.wait_for(kLimit), std::future_status::ready);
    return f.get();
  }();
  for (int i = 1; i <= 100; ++i) {
    auto f = sum.async_write(note("n", i), asio::use_future);
    ASSERT_EQ(f.wait_for(kLimit), std::future_status::ready);
    f.get();
  }
  auto closed = sum.async_writes_done(asio::use_future);
  ASSERT_EQ(closed.wait_for(kLimit), std::future_status::ready);
  auto reply = sum.async_read(asio::use_future);
  ASSERT_EQ(reply.wait_for(kLimit), std::future_status::ready);
  const std::optional<Total> total = reply.get();
  ASSERT_TRUE(total.has_value());
  EXPECT_EQ(total->sum(), 5050);
  EXPECT_EQ(total->count(), 100);
  EXPECT_EQ(total->form(), name_of(GetParam()));
  EXPECT_EQ(total->deadline_ms(), -1);  // no stream_timeout anywhere
  EXPECT_EQ(total->peer().rfind("127.0.0.1:", 0), 0u) << total->peer();
  bool tenant = false;
  for (const auto& m : total->metadata()) tenant = tenant || m == "tenant=blue";
  EXPECT_TRUE(tenant);
  auto end = sum.async_read(asio::use_future);
  ASSERT_EQ(end.wait_for(kLimit), std::future_status::ready);
  EXPECT_FALSE(end.get().has_value());
  auto finished = sum.async_finish(asio::use_future);
  ASSERT_EQ(finished.wait_for(kLimit), std::future_status::ready);
  EXPECT_NO_THROW(finished.get());
}

TEST_P(TypedStreamForms, AHandlersStatusReachesTheReadsAndFinishWithCodeAndMessage) {
  StreamFixture fx(GetParam());
  Stub stub(*fx.client);
  CountRequest request;
  request.set_n(2);
  request.set_fail_code("PERMISSION_DENIED");
  auto [got_reads, got_read_ec, finish_ec, message, got_thrown] =
      fx.run([&]() -> asio::awaitable<std::tuple<int, error_code, error_code, std::string, std::string>> {
        auto [ec, count] = co_await stub.async_Count(request, asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec) << ec.message();
        int reads = 0;
        error_code read_ec;
        for (;;) {
          auto [rec, m] = co_await count.async_read(asio::as_tuple(asio::use_awaitable));
          if (rec || !m) {
            read_ec = rec;
            break;
          }
          ++reads;
        }
        auto [fec] = co_await count.async_finish(asio::as_tuple(asio::use_awaitable));
        std::string thrown;
        try {
          co_await count.async_read(asio::use_awaitable);
        } catch (const CallError& e) {
          thrown = e.what();
          EXPECT_EQ(e.code(), make_error_code(StatusCode::permission_denied));
        }
        co_return std::make_tuple(reads, read_ec, fec, count.error_message(), thrown);
      });
  EXPECT_EQ(got_reads, 2);  // the messages before the end stay readable
  EXPECT_EQ(got_read_ec, make_error_code(StatusCode::permission_denied));
  EXPECT_EQ(finish_ec, make_error_code(StatusCode::permission_denied));
  EXPECT_NE(message.find("failed as asked: PERMISSION_DENIED"), std::string::npos) << message;
  EXPECT_NE(got_thrown.find("failed as asked: PERMISSION_DENIED"), std::string::npos) << got_thrown;
}

TEST_P(TypedStreamForms, AMethodNotOverriddenIsUnimplemented) {
  StreamFixture fx(GetParam());
  Stub stub(*fx.client);
  auto [ec, message] = fx.run([&]() -> asio::awaitable<std::pair<error_code, std::string>> {
    ChatStream missing = co_await stub.async_Missing(asio::use_awaitable);
    auto [end] = co_await missing.async_finish(asio::as_tuple(asio::use_awaitable));
    co_return std::make_pair(end, missing.error_message());
  });
  EXPECT_EQ(ec, make_error_code(StatusCode::unimplemented));
  EXPECT_NE(message.find("'/typedstream.StreamProbe/Missing' is not implemented"), std::string::npos) << message;
}

TEST_P(TypedStreamForms, AMessageThatDoesNotParseAtTheServerIsInvalidArgument) {
  StreamFixture fx(GetParam());
  auto [ec, message] = fx.run([&]() -> asio::awaitable<std::pair<error_code, std::string>> {
    // An untyped client speaks to the typed method.
    ClientStream raw = co_await fx.client->async_open_stream("/typedstream.StreamProbe/Chat", {}, asio::use_awaitable);
    co_await raw.async_write(std::string("\xff\xff\xff", 3), asio::use_awaitable);
    auto [end] = co_await raw.async_finish(asio::as_tuple(asio::use_awaitable));
    co_return std::make_pair(end, raw.error_message());
  });
  EXPECT_EQ(ec, make_error_code(StatusCode::invalid_argument));
  EXPECT_NE(message.find("a message of '/typedstream.StreamProbe/Chat' from 127.0.0.1:"), std::string::npos) << message;
  EXPECT_NE(message.find("is not a valid typedstream.Note message"), std::string::npos) << message;
}

TEST(TypedStream, AServerStreamWithoutItsRequestIsInvalidArgument) {
  StreamFixture fx;
  auto [ec, message] = fx.run([&]() -> asio::awaitable<std::pair<error_code, std::string>> {
    ClientStream raw = co_await fx.client->async_open_stream("/typedstream.StreamProbe/Count", {}, asio::use_awaitable);
    co_await raw.async_writes_done(asio::use_awaitable);
    auto [end] = co_await raw.async_finish(asio::as_tuple(asio::use_awaitable));
    co_return std::make_pair(end, raw.error_message());
  });
  EXPECT_EQ(ec, make_error_code(StatusCode::invalid_argument));
  EXPECT_NE(message.find("without sending its request"), std::string::npos) << message;
}

TEST(TypedStream, ADefaultTypedStreamFailsEveryOperationWithStreamClosed) {
  ChatStream none;
  EXPECT_FALSE(none.valid());
  auto read = none.async_read(asio::use_future);
  ASSERT_EQ(read.wait_for(kLimit), std::future_status::ready);
  try {
    read.get();
    FAIL() << "expected CallError";
  } catch (const CallError& e) {
    EXPECT_EQ(e.code(), errc::stream_closed);
  }
  std::promise<error_code> finished;
  none.async_finish([&](error_code ec) { finished.set_value(ec); });
  auto f = finished.get_future();
  ASSERT_EQ(f.wait_for(kLimit), std::future_status::ready);
  EXPECT_EQ(f.get(), errc::stream_closed);
  none.cancel();
  EXPECT_EQ(none.error_message(), "");
  TypedServerStream<Note, Note> server_none;
  EXPECT_FALSE(server_none.valid());
  server_none.finish();
  EXPECT_EQ(server_none.method(), "");
  EXPECT_FALSE(server_none.cancelled());
}

TEST(TypedStream, StreamMethodsTakeMethodOptions) {
  CoroutineProbe probe;
  EXPECT_EQ(probe.stream_methods().size(), 7u);
  EXPECT_TRUE(probe.methods().empty());
  EXPECT_EQ(probe.stream_methods()[0].path, "/typedstream.StreamProbe/Chat");
  EXPECT_EQ(probe.stream_methods()[1].kind, MethodKind::server_streaming);
  EXPECT_EQ(probe.stream_methods()[2].reply_type, "typedstream.Total");
  wheelrpc::rpc::MethodOptions mo;
  mo.max_concurrency = 4;
  probe.set_method_options("Chat", mo);
  EXPECT_EQ(probe.stream_methods()[0].options.max_concurrency, 4u);
  try {
    probe.set_method_options("Nope", {});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has no method 'Nope'"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- the IDL's stream timers

TEST(TypedStreamPolicy, TheIdlMessageTimeoutEndsASilentStream) {
  StreamFixture fx;
  Stub stub(*fx.client);
  CountRequest forever;  // delay 0: the handler never writes
  auto [ec, fired, elapsed, message] =
      fx.run([&]() -> asio::awaitable<
                       std::tuple<error_code, std::optional<StreamTimer>, std::chrono::milliseconds, std::string>> {
        CountStream silent = co_await stub.async_Silent(forever, asio::use_awaitable);
        auto [read_ec, m] = co_await silent.async_read(asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(m.has_value());
        co_return std::make_tuple(read_ec, silent.info().timer, silent.info().timer_elapsed, silent.error_message());
      });
  EXPECT_EQ(ec, errc::message_timeout) << message;
  EXPECT_EQ(fired, StreamTimer::message_idle);
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));  // the IDL's 300 ms, not a tick before
  // The server sees the stream end.
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return fx.coroutine_impl.quiet_cancelled.load() == 1; }, kLimit));
}

TEST(TypedStreamPolicy, TheCallsMessageTimeoutBeatsTheIdls) {
  StreamFixture fx;
  Stub stub(*fx.client);
  // Silent's IDL says 300 ms; this call waits 60 s, and the server's first
  // message comes after 1.5 s: the stream succeeds.
  CountRequest late;
  late.set_delay_ms(1500);
  CallOptions patient;
  patient.message_timeout = std::chrono::seconds(60);
  auto text = fx.run([&]() -> asio::awaitable<std::string> {
    CountStream silent = co_await stub.async_Silent(late, patient, asio::use_awaitable);
    std::optional<Note> m = co_await silent.async_read(asio::use_awaitable);
    EXPECT_FALSE((co_await silent.async_read(asio::use_awaitable)).has_value());
    co_await silent.async_finish(asio::use_awaitable);
    co_return m ? m->text() : "<none>";
  });
  EXPECT_EQ(text, "at last");
  // Patient's IDL says 600 s; this call says 200 ms: the stream ends long before the test's bound.
  CountRequest forever;
  CallOptions impatient;
  impatient.message_timeout = std::chrono::milliseconds(200);
  auto [ec, elapsed] = fx.run([&]() -> asio::awaitable<std::pair<error_code, std::chrono::milliseconds>> {
    CountStream s = co_await stub.async_Patient(forever, impatient, asio::use_awaitable);
    auto [end] = co_await s.async_finish(asio::as_tuple(asio::use_awaitable));
    co_return std::make_pair(end, s.info().timer_elapsed);
  });
  EXPECT_EQ(ec, errc::message_timeout);
  EXPECT_GE(elapsed, std::chrono::milliseconds(200));
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

TEST(TypedStreamPolicy, TheIdlStreamTimeoutBoundsTheHandlersDeadlineWhateverTheCallSets) {
  StreamFixture fx;
  Stub stub(*fx.client);
  auto total_with = [&](CallOptions o) {
    return fx.run([&]() -> asio::awaitable<Total> {
      SumStream s = co_await stub.async_Budgeted(o, asio::use_awaitable);
      co_await s.async_write(note("one", 1), asio::use_awaitable);
      co_await s.async_writes_done(asio::use_awaitable);
      std::optional<Total> t = co_await s.async_read(asio::use_awaitable);
      co_await s.async_finish(asio::use_awaitable);
      co_return t.value_or(Total{});
    });
  };
  const Total idl = total_with({});
  EXPECT_EQ(idl.count(), 1);
  EXPECT_GT(idl.deadline_ms(), 0);
  EXPECT_LE(idl.deadline_ms(), 30'000);
  // The coroutine runs with the stream's deadline and trace in force after
  // each co_await: calls it makes inherit them.
  EXPECT_GT(idl.scope_deadline_ms(), 0);
  EXPECT_LE(idl.scope_deadline_ms(), 30'000);
  EXPECT_EQ(idl.trace_id().size(), 32u);
  EXPECT_EQ(idl.scope_trace_id(), idl.trace_id());
  // A longer one set at the call: the server still holds the stream to the
  // IDL's (docs/timeouts.md, "The server's side"); a shorter one is the call's.
  CallOptions longer;
  longer.stream_timeout = std::chrono::seconds(120);
  EXPECT_LE(total_with(longer).deadline_ms(), 30'000);
  CallOptions shorter;
  shorter.stream_timeout = std::chrono::seconds(10);
  EXPECT_LE(total_with(shorter).deadline_ms(), 10'000);
}

// ---------------------------------------------------------------- a reply that does not parse

/// Untyped handlers under the typed paths: Chat writes bytes that are no
/// Note; Missing writes nothing. Both read until the stream ends and count
/// the streams they saw cancelled.
struct RawServer {
  std::atomic<int> cancelled{0};
  void register_on(Server& server) {
    auto serve = [this](bool garbage) {
      return [this, garbage](ServerStream s) {
        asio::co_spawn(
            s.get_executor(),
            [this, s, garbage]() mutable -> asio::awaitable<void> {
              if (garbage) co_await s.async_write(std::string("\xff\xff\xff", 3), asio::use_awaitable);
              for (;;) {
                auto [ec, m] = co_await s.async_read(asio::as_tuple(asio::use_awaitable));
                if (ec || !m) break;
              }
              if (s.cancelled()) ++cancelled;
              s.finish();
            },
            asio::detached);
      };
    };
    server.handle_stream("/typedstream.StreamProbe/Chat", serve(true));
    server.handle_stream("/typedstream.StreamProbe/Missing", serve(false));
  }
};

TEST(TypedStream, AReplyThatDoesNotParseFailsTheReadWithInternalAndCancelsTheStream) {
  timer::HashedWheelTimer timer;
  IoThreads threads;
  RawServer raw;
  Server server(threads.io.get_executor(), timer);
  raw.register_on(server);
  ASSERT_FALSE(server.listen({asio::ip::make_address("127.0.0.1"), 0}));
  Client client(threads.io.get_executor(), timer, {server.local_endpoint()});
  Stub stub(client);
  auto f = asio::co_spawn(
      threads.io,
      [&]() -> asio::awaitable<std::tuple<error_code, error_code, error_code, std::string, std::string>> {
        ChatStream chat = co_await stub.async_Chat(asio::use_awaitable);
        auto [ec, m] = co_await chat.async_read(asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(m.has_value());
        auto [again, m2] = co_await chat.async_read(asio::as_tuple(asio::use_awaitable));
        auto [fec] = co_await chat.async_finish(asio::as_tuple(asio::use_awaitable));
        std::string thrown;
        try {
          co_await chat.async_read(asio::use_awaitable);
        } catch (const CallError& e) {
          thrown = e.what();
        }
        co_return std::make_tuple(ec, again, fec, chat.error_message(), thrown);
      },
      asio::use_future);
  ASSERT_EQ(f.wait_for(kLimit), std::future_status::ready);
  auto [ec, again, finish_ec, message, thrown] = f.get();
  const auto internal = make_error_code(StatusCode::internal);
  EXPECT_EQ(ec, internal);
  EXPECT_EQ(again, internal);
  EXPECT_EQ(finish_ec, internal);
  EXPECT_NE(message.find("a message of '/typedstream.StreamProbe/Chat' from 127.0.0.1:"), std::string::npos) << message;
  EXPECT_NE(message.find("is not a valid typedstream.Note message; the stream is cancelled"), std::string::npos)
      << message;
  EXPECT_EQ(thrown, message);
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return raw.cancelled.load() == 1; }, kLimit));
  client.close();
  server.stop();
}

TEST(TypedStream, DroppingEveryHandleWithAReadOutstandingCancelsTheStream) {
  timer::HashedWheelTimer timer;
  IoThreads threads;
  RawServer raw;
  Server server(threads.io.get_executor(), timer);
  raw.register_on(server);
  ASSERT_FALSE(server.listen({asio::ip::make_address("127.0.0.1"), 0}));
  Client client(threads.io.get_executor(), timer, {server.local_endpoint()});
  Stub stub(client);
  std::promise<error_code> read_done;
  {
    auto open = stub.async_Missing(asio::use_future);
    ASSERT_EQ(open.wait_for(kLimit), std::future_status::ready);
    ChatStream stream = open.get();
    stream.async_read([&](error_code ec, std::optional<Note>) { read_done.set_value(ec); });
  }  // the only handle goes; the outstanding read must not keep the stream open
  auto f = read_done.get_future();
  ASSERT_EQ(f.wait_for(kLimit), std::future_status::ready);
  EXPECT_TRUE(f.get());
  EXPECT_TRUE(wheelrpc::test::wait_until([&] { return raw.cancelled.load() == 1; }, kLimit));
  client.close();
  server.stop();
}

}  // namespace
