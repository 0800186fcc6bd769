// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// Guide, "Payloads": a payload is bytes (a std::string); carry structured data
// in it (here JSON, with Boost.JSON and Boost.Describe) and metadata in
// attachments.
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <exception>
#include <string>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe/class.hpp>
#include <boost/json.hpp>

#include "check.h"

namespace asio = boost::asio;
namespace json = boost::json;
namespace rpc = wheelrpc::rpc;
using namespace std::chrono_literals;
using guide::check;

struct Visit {
  std::string name;
  int visits = 0;
};
BOOST_DESCRIBE_STRUCT(Visit, (), (name, visits))  // lets json::value_from / value_to convert it

struct Greeting {
  std::string text;
  int next_visit = 0;
};
BOOST_DESCRIBE_STRUCT(Greeting, (), (text, next_visit))

void greet(rpc::Request req, rpc::Responder r) {
  try {
    const auto in = json::value_to<Visit>(json::parse(req.payload));
    const Greeting out{"hello, " + in.name, in.visits + 1};
    r.reply(json::serialize(json::value_from(out)), std::move(req.attachments));  // echo the trace id
  } catch (const std::exception& e) {  // not JSON, or not a Visit
    r.fail(rpc::errc::bad_request, std::string("greet: ") + e.what());
  }
}

asio::awaitable<void> talk(rpc::Client& client) {
  rpc::CallOptions opts;
  opts.timeout = 5s;
  opts.attachments = {{"trace-id", "7f3a9c"}};  // key/value metadata, next to the payload
  const std::string request = json::serialize(json::value_from(Visit{"Ada", 2}));
  rpc::Response r = co_await client.async_call("greet", request, opts, asio::use_awaitable);
  const auto greeting = json::value_to<Greeting>(json::parse(r.payload));
  check(greeting.text == "hello, Ada" && greeting.next_visit == 3, "the reply is the JSON Greeting");
  // The handler echoed what it got: ours, then the traceparent every call carries.
  check(r.attachments.size() == 2 && r.attachments[0] == opts.attachments[0] && r.attachments[1].first == "traceparent",
        "the handler's reply attachments arrive");
  std::printf("%s -> %s\n", request.c_str(), r.payload.c_str());

  auto [ec, bad] = co_await client.async_call("greet", "{\"name\": 42}", opts, asio::as_tuple(asio::use_awaitable));
  check(ec == rpc::errc::bad_request, "a payload that is not a Visit is refused");
  std::printf("bad -> %s\n", bad.error_message.c_str());

  const std::string bytes("\0\x01\xff binary", 10);  // any bytes, NULs included
  rpc::Response echoed = co_await client.async_call("echo", bytes, opts, asio::use_awaitable);
  check(echoed.payload == bytes, "payloads are bytes, not C strings");
}

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  rpc::Server server(io.get_executor(), timer);
  server.handle("greet", greet);
  server.handle("echo", [](rpc::Request req, rpc::Responder r) { r.reply(std::move(req.payload)); });
  if (server.listen({asio::ip::make_address("127.0.0.1"), 0})) return 1;

  rpc::Client client(io.get_executor(), timer, {server.local_endpoint()});
  asio::co_spawn(io, talk(client), [&](std::exception_ptr e) {
    guide::check_no_exception(e);
    client.close();
    server.stop();
  });
  io.run();
  return guide::status();
}
// clang-format on
