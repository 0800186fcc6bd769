// Every header protoc-gen-wheelrpc wrote for the golden inputs, compiled
// against the runtime: the stubs and both service bases instantiate, a
// method's kind and policy are constants, the three kinds of streaming
// methods override and open, and keyword and clashing names are usable
// under their trailing-`_` C++ names.
#include <optional>

#include <boost/asio/use_awaitable.hpp>

#include "app/route.wheelrpc.h"
#include "chat.wheelrpc.h"
#include "echo.wheelrpc.h"
#include "helloworld.wheelrpc.h"
#include "keywords.wheelrpc.h"
#include "policies.wheelrpc.h"
#include "presence.wheelrpc.h"
#include "store.wheelrpc.h"
#include "ticker.wheelrpc.h"
#include "two.wheelrpc.h"
#include "upload.wheelrpc.h"

namespace {

static_assert(policies::Tuned::Methods::All::policy.retries == 16);
static_assert(policies::Tuned::Methods::Some::policy.wait_for_ready == true);
static_assert(helloworld::Greeter::Methods::SayHello::path == "/helloworld.Greeter/SayHello");
static_assert(kw::Keywords::Methods::delete_::path == "/kw.Keywords/delete");
static_assert(kw::union_::Methods::new_::path == "/kw.union/new");
static_assert(::Echo::Methods::Say::path == "/Echo/Say");
static_assert(a::b::c::Store::Methods::Get::path == "/a.b.c.Store/Get");
using wheelrpc::rpc::MethodKind;
static_assert(helloworld::Greeter::Methods::SayHello::kind == MethodKind::unary);
static_assert(chat::Room::Methods::Chat::kind == MethodKind::bidi_streaming);
static_assert(upload::Uploader::Methods::Upload::kind == MethodKind::client_streaming);
static_assert(ticker::Ticker::Methods::Watch::kind == MethodKind::server_streaming);
static_assert(ticker::Ticker::Methods::Watch::policy.message_timeout == std::chrono::milliseconds(5000));
static_assert(policies::Tuned::Methods::Stream::policy.stream_timeout == std::chrono::minutes(10));
static_assert(policies::Tuned::Methods::Stream::policy.stall_timeout == std::chrono::seconds(10));
static_assert(policies::Tuned::Methods::Stream::policy.first_message_timeout == std::chrono::seconds(5));
static_assert(policies::Tuned::Methods::StreamTimersOff::policy.message_timeout == std::chrono::milliseconds(0));
static_assert(policies::Tuned::Methods::HedgeOff::policy.hedge_delay == std::chrono::milliseconds(0));
static_assert(!policies::Tuned::Methods::StreamTimersOff::policy.stream_timeout.has_value());
static_assert(policies::Tuned::Methods::Compressed::policy.compression == wheelrpc::transport::Compression::zstd);
static_assert(policies::Tuned::Methods::Compressed::policy.compression_level == 3);
static_assert(policies::Tuned::Methods::CompressedUpload::policy.compression == wheelrpc::transport::Compression::lz4);
static_assert(!policies::Tuned::Methods::CompressedUpload::policy.compression_level.has_value());
static_assert(!policies::Tuned::Methods::All::policy.compression.has_value());
static_assert(kw::Keywords::Methods::stream_::kind == MethodKind::bidi_streaming);
static_assert(kw::Keywords::Methods::kind_::path == "/kw.Keywords/kind");

// A coroutine service overriding one method, a callback service another.
class Greeter final : public helloworld::Greeter::Service {
 public:
  boost::asio::awaitable<helloworld::HelloReply> SayHello(wheelrpc::rpc::ServerContext&,
                                                          const helloworld::HelloRequest& request) override {
    helloworld::HelloReply reply;
    reply.set_message("hello " + request.name());
    co_return reply;
  }
};

class Keywords final : public kw::Keywords::CallbackService {
 public:
  void delete_(wheelrpc::rpc::ServerContext&, const kw::Item&,
               wheelrpc::rpc::TypedResponder<kw::Done> responder) override {
    kw::Done done;
    done.set_ok(true);
    responder.reply(std::move(done));
  }
};

// The three kinds of streams in the coroutine form...
class Room final : public chat::Room::Service {
 public:
  boost::asio::awaitable<void> Chat(wheelrpc::rpc::TypedServerStream<chat::Line, chat::Line>& stream) override {
    while (std::optional<chat::Line> line = co_await stream.async_read(boost::asio::use_awaitable)) {
      co_await stream.async_write(*line, boost::asio::use_awaitable);
    }
  }
};

class Uploader final : public upload::Uploader::Service {
 public:
  boost::asio::awaitable<upload::Summary> Upload(
      wheelrpc::rpc::TypedServerStream<upload::Chunk, upload::Summary>& stream) override {
    upload::Summary summary;
    while (std::optional<upload::Chunk> chunk = co_await stream.async_read(boost::asio::use_awaitable)) {
      summary.set_bytes(summary.bytes() + chunk->data().size());
    }
    co_return summary;
  }
};

class Ticker final : public ticker::Ticker::Service {
 public:
  boost::asio::awaitable<void> Watch(
      const ticker::Subscribe& request,
      wheelrpc::rpc::TypedServerStream<ticker::Subscribe, ticker::Tick>& stream) override {
    ticker::Tick tick;
    tick.set_symbol(request.symbol());
    co_await stream.async_write(tick, boost::asio::use_awaitable);
  }
};

// ...and the callback form, which finishes the stream itself.
class CallbackRoom final : public chat::Room::CallbackService {
 public:
  void Chat(wheelrpc::rpc::TypedServerStream<chat::Line, chat::Line> stream) override { stream.finish(); }
};

/// A client of the three kinds: opens, writes, reads, finishes.
boost::asio::awaitable<void> stream_client(wheelrpc::rpc::Client& client) {
  chat::Room::Stub room(client);
  wheelrpc::rpc::TypedClientStream<chat::Line, chat::Line> chat = co_await room.async_Chat(boost::asio::use_awaitable);
  co_await chat.async_write(chat::Line{}, boost::asio::use_awaitable);
  co_await chat.async_writes_done(boost::asio::use_awaitable);
  std::optional<chat::Line> line = co_await chat.async_read(boost::asio::use_awaitable);
  co_await chat.async_finish(boost::asio::use_awaitable);
  upload::Uploader::Stub uploader(client);
  auto up = co_await uploader.async_Upload(wheelrpc::rpc::CallOptions{}, boost::asio::use_awaitable);
  std::optional<upload::Summary> summary = co_await up.async_read(boost::asio::use_awaitable);
  ticker::Ticker::Stub ticker(client);
  auto watch = co_await ticker.async_Watch(ticker::Subscribe{}, boost::asio::use_awaitable);
  std::optional<ticker::Tick> tick = co_await watch.async_read(boost::asio::use_awaitable);
  (void)line, (void)summary, (void)tick;
}

}  // namespace

/// Instantiates the service bases of every generated service and a stub call
/// with each completion form the stubs take; never called.
void wheelrpc_generated_compile(wheelrpc::rpc::Client& client) {
  Greeter greeter;
  Keywords keywords;
  kw::union_::Service keyword_service;
  app::Router::Service router;
  ::Echo::CallbackService echo;
  two::First::Service first;
  two::Second::CallbackService second;
  presence::Profiles::Service profiles;
  a::b::c::Store::CallbackService store;
  policies::Tuned::Service tuned;
  policies::Tuned::CallbackService tuned_callbacks;
  Room room;
  Uploader uploader;
  Ticker ticker;
  CallbackRoom callback_room;
  upload::Uploader::CallbackService callback_uploader;
  ticker::Ticker::CallbackService callback_ticker;
  kw::Keywords::Service keyword_streams;
  (void)greeter, (void)keywords, (void)keyword_service, (void)router, (void)echo, (void)first, (void)second;
  (void)profiles, (void)store, (void)tuned, (void)tuned_callbacks, (void)room, (void)uploader, (void)ticker;
  (void)callback_room, (void)callback_uploader, (void)callback_ticker, (void)keyword_streams;
  (void)stream_client(client);

  helloworld::Greeter::Stub stub(client);
  stub.async_SayHello(helloworld::HelloRequest{}, [](boost::system::error_code, helloworld::HelloReply) {});
  kw::Keywords::Stub(client).async_delete(kw::Item{}, wheelrpc::rpc::CallOptions{},
                                          [](boost::system::error_code, kw::Done) {});
  ticker::Ticker::Stub(client).async_Watch(
      ticker::Subscribe{}, wheelrpc::rpc::CallOptions{},
      [](boost::system::error_code, wheelrpc::rpc::TypedClientStreamFor<ticker::Ticker::Methods::Watch>) {});
  chat::Room::Stub(client).async_Chat(
      [](boost::system::error_code, wheelrpc::rpc::TypedClientStream<chat::Line, chat::Line> s) {
        s.async_write(chat::Line{}, [](boost::system::error_code) {});
        s.async_read([](boost::system::error_code, std::optional<chat::Line>) {});
      });
}
