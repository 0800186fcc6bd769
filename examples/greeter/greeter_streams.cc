// Docs quote this file's lines verbatim: not reformatted.
// clang-format off
// greeter_streams: the three kinds of typed streaming methods of
// greeter_streams.proto, served in the coroutine form (and Chat in the
// callback form too) and called through the generated stub, in one process.
//
//   greeter_streams     (prints what the streams carried; exits 0, or 1 naming what went wrong)
//   greeter_streams --help                  (the usage, kUsage below; no other flags)
#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "greeter_streams.wheelrpc.h"  // generated from greeter_streams.proto by wheelrpc_protobuf_generate
#include "support/flags.h"

namespace asio = boost::asio;
namespace rpc = wheelrpc::rpc;
using greetings::Greeting;
using greetings::GreetRequest;

// [guide:streams-service]
class GreetingsImpl : public greetings::Greetings::Service {
  // Server streaming: the request, then as many messages as the handler writes.
  asio::awaitable<void> GreetMany(const GreetRequest& req,
                                  rpc::TypedServerStream<GreetRequest, Greeting>& stream) override {
    if (req.times() > 100) throw rpc::StatusError(rpc::StatusCode::invalid_argument, "at most 100 greetings");
    for (int i = 1; i <= req.times(); ++i) {
      Greeting greeting;
      greeting.set_message("Hello #" + std::to_string(i) + ", " + req.name());
      co_await stream.async_write(greeting, asio::use_awaitable);  // waits while the client has no room
    }
  }  // returning ends the stream with success; throwing, with the exception's status

  // Client streaming: read until the client half-closes, return the one reply.
  asio::awaitable<Greeting> GreetAll(rpc::TypedServerStream<GreetRequest, Greeting>& stream) override {
    std::string names;
    while (std::optional<GreetRequest> req = co_await stream.async_read(asio::use_awaitable)) {
      names += (names.empty() ? "" : ", ") + req->name();
    }
    Greeting greeting;
    greeting.set_message("Hello, " + names);
    co_return greeting;
  }

  // Bidi streaming: both ways at once; here, an answer to each message.
  asio::awaitable<void> Chat(rpc::TypedServerStream<GreetRequest, Greeting>& stream) override {
    while (std::optional<GreetRequest> req = co_await stream.async_read(asio::use_awaitable)) {
      Greeting greeting;
      greeting.set_message("Hello, " + req->name() + " (from " + stream.peer() + ")");
      co_await stream.async_write(greeting, asio::use_awaitable);
    }
  }
};
// [guide:streams-service-end]

// [guide:streams-callback]
class CallbackChat : public greetings::Greetings::CallbackService {
  // The handler owns the stream and ends it: read, answer, repeat.
  void Chat(rpc::TypedServerStream<GreetRequest, Greeting> stream) override {
    stream.async_read([this, stream](boost::system::error_code ec, std::optional<GreetRequest> req) mutable {
      if (ec) return;                    // it ended: cancelled, timed out, connection lost
      if (!req) return stream.finish();  // the client half-closed: end with success
      Greeting greeting;
      greeting.set_message("Hello, " + req->name() + " (callback form)");
      stream.async_write(greeting, [this, stream](boost::system::error_code write_ec) mutable {
        if (!write_ec) Chat(std::move(stream));  // the next message
      });
    });
  }
};
// [guide:streams-callback-end]

void expect(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

// [guide:streams-client]
asio::awaitable<void> talk(rpc::Client& client) {
  greetings::Greetings::Stub stub(client);

  // Server streaming: the request goes with the open; read until std::nullopt.
  GreetRequest req;
  req.set_name("world");
  req.set_times(3);
  auto many = co_await stub.async_GreetMany(req, asio::use_awaitable);
  while (std::optional<Greeting> greeting = co_await many.async_read(asio::use_awaitable)) {
    std::printf("%s\n", greeting->message().c_str());
  }
  co_await many.async_finish(asio::use_awaitable);  // throws rpc::CallError if the stream failed

  // Client streaming: write, half-close, read the one reply.
  auto all = co_await stub.async_GreetAll(asio::use_awaitable);
  for (const char* name : {"Ada", "Grace", "Barbara"}) {
    GreetRequest one;
    one.set_name(name);
    co_await all.async_write(one, asio::use_awaitable);
  }
  co_await all.async_writes_done(asio::use_awaitable);
  std::optional<Greeting> reply = co_await all.async_read(asio::use_awaitable);
  co_await all.async_finish(asio::use_awaitable);
  expect(reply.has_value(), "GreetAll answers once");
  std::printf("%s\n", reply->message().c_str());

  // A handler's StatusError ends the stream; reads and async_finish report it.
  req.set_times(1000);
  auto refused = co_await stub.async_GreetMany(req, asio::use_awaitable);
  try {
    co_await refused.async_read(asio::use_awaitable);
    expect(false, "1000 greetings are refused");
  } catch (const rpc::CallError& e) {  // INVALID_ARGUMENT, "... at most 100 greetings"
    std::printf("%s: %s\n", std::string(rpc::to_string(rpc::status_code_of(e.code()))).c_str(), e.what());
  }
}
// [guide:streams-client-end]

// Bidi: write and read as the protocol of the method says; here, in turns.
asio::awaitable<void> chat(rpc::Client& client) {
  greetings::Greetings::Stub stub(client);
  rpc::CallOptions opts;
  opts.message_timeout = std::chrono::seconds(10);  // CallOptions beat the IDL's policy
  auto chat = co_await stub.async_Chat(opts, asio::use_awaitable);
  for (const char* name : {"Alan", "Edsger"}) {
    GreetRequest req;
    req.set_name(name);
    co_await chat.async_write(req, asio::use_awaitable);
    std::optional<Greeting> greeting = co_await chat.async_read(asio::use_awaitable);
    expect(greeting.has_value(), "a greeting for each name");
    std::printf("%s\n", greeting->message().c_str());
  }
  co_await chat.async_writes_done(asio::use_awaitable);
  expect(!(co_await chat.async_read(asio::use_awaitable)), "the end after the half-close");
  co_await chat.async_finish(asio::use_awaitable);
}

constexpr const char* kUsage =
    "usage: greeter_streams\n"
    "  -h, --help        print this text and exit 0\n"
    "  --version         print the version (\"greeter_streams (wheelrpc) X.Y.Z\") and exit 0\n"
    "Serves greetings.Greetings (greeter_streams.proto) on two ports of 127.0.0.1, one\n"
    "per service form, and calls its three kinds of streams through the generated stub,\n"
    "printing what they carried.\n"
    "Exit status: 0 when every stream did what it should, 1 otherwise (naming what went\n"
    "wrong), 2 usage error (it takes no other flags).\n";

int main(int argc, char** argv) {
  if (const auto status = wheelrpc::examples::FlagParser("greeter_streams", kUsage).parse(argc, argv)) return *status;
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread thread([&] { io.run(); });
  GreetingsImpl coroutine_form;
  CallbackChat callback_form;
  rpc::Server server(io.get_executor(), timer), callback_server(io.get_executor(), timer);
  server.add_service(coroutine_form);
  callback_server.add_service(callback_form);
  int status = 0;
  if (server.listen({asio::ip::make_address("127.0.0.1"), 0}) ||
      callback_server.listen({asio::ip::make_address("127.0.0.1"), 0})) {
    std::fprintf(stderr, "cannot listen\n");
    status = 1;
  } else {
    rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
    rpc::Client callback_client(io.get_executor(), timer, {callback_server.local_endpoint()});
    auto done = asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      co_await talk(client);
      co_await chat(client);
      co_await chat(callback_client);
    }, asio::use_future);
    try {
      if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) throw std::runtime_error("no end in 30 s");
      done.get();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "greeter_streams failed: %s\n", e.what());
      status = 1;
    }
    client.close();
    callback_client.close();
  }
  server.stop();
  callback_server.stop();
  work.reset();
  io.stop();
  thread.join();
  return status;
}
// clang-format on
