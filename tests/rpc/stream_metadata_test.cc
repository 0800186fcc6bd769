// A stream's initial metadata, trailers and per-message compression, as
// gRPC's interop cases use them: ServerStream::add_initial_metadata reaches
// ClientStream::initial_metadata() with the first message, or with the end
// when the handler writes none (apart from the trailers); WriteOptions::
// no_compression and set_compression choose per message, both ways; and
// last_read_compressed() tells each reader what came compressed.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/transport/compression.h>

#include "support/rpc_fixture.h"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::ClientStream;
using wheelrpc::rpc::ServerStream;
using wheelrpc::rpc::WriteOptions;
using wheelrpc::test::RpcFixture;
using wheelrpc::transport::Attachments;
using wheelrpc::transport::Compression;

namespace {

const std::string kBig(32 * 1024, '\0');  // compresses well, over the threshold

/// "talk": initial metadata, then three messages: gzip, uncompressed
/// (no_compression), gzip; then a trailer. The client asked for none.
awaitable<void> talk(ServerStream stream) {
  stream.add_initial_metadata("x-initial", "hello");
  stream.set_compression(Compression::gzip);
  co_await stream.async_write(kBig, use_awaitable);
  stream.add_initial_metadata("x-late", "not sent");  // after the first message: not sent
  co_await stream.async_write(kBig, WriteOptions{.no_compression = true}, use_awaitable);
  co_await stream.async_write(kBig, use_awaitable);
  stream.add_trailer("x-trailer", "bye");
  stream.finish();
}

/// "silent": initial metadata and a trailer, no message, then an error.
awaitable<void> silent(ServerStream stream) {
  stream.add_initial_metadata("x-initial", "hello");
  stream.add_trailer("x-trailer", "bye");
  stream.finish(wheelrpc::rpc::StatusCode::unknown, "nothing to say");
  co_return;
}

/// "inspect": answers each message with "1" if it came compressed, else "0".
awaitable<void> inspect(ServerStream stream) {
  while (auto m = co_await stream.async_read(use_awaitable)) {
    co_await stream.async_write(stream.last_read_compressed() ? "1" : "0", use_awaitable);
  }
  stream.finish();
}

template <class Handler>
wheelrpc::rpc::StreamHandler spawned(Handler handler) {
  return [handler](ServerStream stream) { asio::co_spawn(stream.get_executor(), handler(stream), asio::detached); };
}

void register_streams(wheelrpc::rpc::Server& server) {
  server.handle_stream("talk", spawned(talk));
  server.handle_stream("silent", spawned(silent));
  server.handle_stream("inspect", spawned(inspect));
}

template <class T>
T wait(std::future<T> f) {
  EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
  return f.get();
}

TEST(StreamMetadata, InitialMetadataComesWithTheFirstMessageAndTrailersWithTheEnd) {
  RpcFixture f({}, {}, 2, register_streams);
  auto run = [&]() -> awaitable<void> {
    auto stream = co_await f.client->async_open_stream("talk", {}, use_awaitable);
    EXPECT_TRUE(stream.initial_metadata().empty()) << "nothing before the first message";
    std::vector<bool> compressed;
    while (auto m = co_await stream.async_read(use_awaitable)) {
      EXPECT_EQ(m->size(), kBig.size());
      compressed.push_back(stream.last_read_compressed());
      EXPECT_EQ(stream.initial_metadata(), (Attachments{{"x-initial", "hello"}}));
    }
    co_await stream.async_finish(use_awaitable);
    EXPECT_EQ(compressed, (std::vector<bool>{true, false, true}));
    EXPECT_EQ(stream.initial_metadata(), (Attachments{{"x-initial", "hello"}}));
    EXPECT_EQ(stream.trailers(), (Attachments{{"x-trailer", "bye"}}));
  };
  wait(asio::co_spawn(f.threads.io, run(), asio::use_future));
}

TEST(StreamMetadata, WithoutAMessageTheEndCarriesBothApart) {
  RpcFixture f({}, {}, 2, register_streams);
  auto run = [&]() -> awaitable<void> {
    auto stream = co_await f.client->async_open_stream("silent", {}, use_awaitable);
    auto [ec] = co_await stream.async_finish(asio::as_tuple(use_awaitable));
    EXPECT_EQ(wheelrpc::rpc::status_code_of(ec), wheelrpc::rpc::StatusCode::unknown);
    EXPECT_NE(stream.error_message().find("nothing to say"), std::string::npos) << stream.error_message();
    EXPECT_EQ(stream.initial_metadata(), (Attachments{{"x-initial", "hello"}}));
    EXPECT_EQ(stream.trailers(), (Attachments{{"x-trailer", "bye"}}));
  };
  wait(asio::co_spawn(f.threads.io, run(), asio::use_future));
}

TEST(StreamCompression, TheClientChoosesPerMessageAndTheServerSeesWhichCameCompressed) {
  RpcFixture f({}, {}, 2, register_streams);
  auto run = [&]() -> awaitable<void> {
    CallOptions o;
    o.compression = Compression::gzip;
    auto stream = co_await f.client->async_open_stream("inspect", o, use_awaitable);
    std::string seen;
    auto round = [&](WriteOptions w) -> awaitable<void> {
      co_await stream.async_write(kBig, w, use_awaitable);
      auto answer = co_await stream.async_read(use_awaitable);
      seen += answer.value_or("?");
    };
    co_await round({});                        // gzip (CallOptions)
    co_await round({.no_compression = true});  // this one uncompressed
    stream.set_compression(Compression::identity);
    co_await round({});  // none from now on
    stream.set_compression(Compression::zstd);
    co_await round({});  // zstd
    co_await stream.async_writes_done(use_awaitable);
    EXPECT_FALSE(co_await stream.async_read(use_awaitable));
    co_await stream.async_finish(use_awaitable);
    EXPECT_EQ(seen, "1001");
  };
  wait(asio::co_spawn(f.threads.io, run(), asio::use_future));
}

}  // namespace
