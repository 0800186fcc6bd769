// Client and Server on loopback: round trips, payload limits, errors from the
// server, many threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/use_future.hpp>

#include "support/rpc_fixture.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using boost::system::error_code;
using wheelrpc::rpc::CallOptions;
using wheelrpc::rpc::errc;
using wheelrpc::rpc::Response;
using wheelrpc::test::RpcFixture;

namespace {

struct Outcome {
  error_code ec;
  Response response;
};

Outcome call(wheelrpc::rpc::Client& client, std::string method, std::string payload, CallOptions o = {}) {
  std::promise<Outcome> p;
  auto f = p.get_future();
  client.async_call(std::move(method), std::move(payload), std::move(o), [&p](error_code ec, Response r) {
    p.set_value({ec, std::move(r)});
  });
  if (f.wait_for(20s) != std::future_status::ready)
    return {make_error_code(errc::server_error), {{}, {}, "test: no completion within 20 s"}};
  return f.get();
}

TEST(Call, EchoRoundTrip) {
  RpcFixture fx;
  auto out = call(*fx.client, "echo", "hello");
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "hello");
  EXPECT_TRUE(out.response.error_message.empty());
  const auto st = fx.client->stats();
  EXPECT_EQ(st.ok, 1u);
  EXPECT_EQ(st.connects, 1u);
  EXPECT_EQ(st.pending, 0u);
}

TEST(Call, BlockingCall) {
  RpcFixture fx;
  EXPECT_EQ(fx.client->call("echo", "blocking").payload, "blocking");
  try {
    fx.client->call("nope", "");
    FAIL() << "expected CallError";
  } catch (const wheelrpc::rpc::CallError& e) {
    EXPECT_EQ(e.code(), errc::method_not_found);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
}

TEST(Call, AttachmentsTravelToTheHandler) {
  RpcFixture fx({}, {}, 2, [](wheelrpc::rpc::Server& server) {
    server.handle("attach", [](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      // The caller's attachments in order, then the traceparent every call carries.
      std::string all;
      for (auto& [k, v] : req.attachments) {
        all += k;
        all += '=';
        if (k == "traceparent") {  // its length: the value is random
          all += '<';
          all += std::to_string(v.size());
          all += '>';
        } else {
          all += v;
        }
        all += ';';
      }
      r.reply(all, {{"reply-key", "reply-value"}});
    });
  });
  CallOptions o;
  o.attachments = {{"trace", "abc"}, {"user", "u1"}};
  auto out = call(*fx.client, "attach", "", o);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "trace=abc;user=u1;traceparent=<55>;");
  ASSERT_EQ(out.response.attachments.size(), 1u);
  EXPECT_EQ(out.response.attachments[0].second, "reply-value");
}

TEST(Call, UnknownMethodIsAPreciseError) {
  RpcFixture fx;
  auto out = call(*fx.client, "no_such_method", "x");
  EXPECT_EQ(out.ec, errc::method_not_found);
  EXPECT_NE(out.response.error_message.find("no_such_method"), std::string::npos) << out.response.error_message;
  EXPECT_EQ(fx.server.stats().method_not_found, 1u);
  // The connection stays usable.
  EXPECT_FALSE(call(*fx.client, "echo", "still fine").ec);
}

TEST(Call, LargePayloadUpToTheLimit) {
  wheelrpc::rpc::ServerOptions so;
  wheelrpc::rpc::ClientOptions co;
  so.channel.max_body = co.channel.max_body = 1u << 20;
  RpcFixture fx(so, co);
  // The body holds the method ("echo": 1 + 4 bytes) and the attachment count (2).
  const std::size_t max_payload = (1u << 20) - 1 - 4 - 2;
  std::string big(max_payload, 'x');
  for (std::size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>(i);
  auto out = call(*fx.client, "echo", big);
  ASSERT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, big);
}

TEST(Call, PayloadOverTheLimitIsRejectedWithoutSending) {
  wheelrpc::rpc::ServerOptions so;
  wheelrpc::rpc::ClientOptions co;
  so.channel.max_body = co.channel.max_body = 1u << 20;
  RpcFixture fx(so, co);
  const std::size_t max_payload = (1u << 20) - 1 - 4 - 2;
  auto out = call(*fx.client, "echo", std::string(max_payload + 1, 'x'));
  EXPECT_EQ(out.ec, errc::bad_request);
  EXPECT_NE(out.response.error_message.find("limit"), std::string::npos) << out.response.error_message;
  EXPECT_FALSE(call(*fx.client, "echo", "after").ec) << "the connection is unharmed";
}

TEST(Call, AClientLearnsTheServersBodyLimitInHelloAndSendsNothingOverIt) {
  // A client allowed to send more than the server accepts: the server's
  // HELLO told it the server's limit, so the call fails at once, unsent, and
  // the connection (which the server would close on such a frame) lives on.
  wheelrpc::rpc::ServerOptions so;
  so.channel.max_body = 1u << 16;
  RpcFixture fx(so);
  ASSERT_FALSE(call(*fx.client, "echo", "hello first").ec);
  auto out = call(*fx.client, "echo", std::string(1u << 17, 'x'));
  EXPECT_EQ(out.ec, errc::bad_request) << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("exceeds the server's limit (max_body from its HELLO) of 65536 bytes"),
            std::string::npos)
      << out.response.error_message;
  auto again = call(*fx.client, "echo", "small");
  EXPECT_FALSE(again.ec) << again.response.error_message;
  EXPECT_EQ(fx.server.stats().accepted, 1u) << "the same connection";
  EXPECT_EQ(fx.server.stats().protocol_errors, 0u);
  EXPECT_EQ(fx.client->stats().connects, 1u);
}

TEST(Call, AReplyOverTheClientsBodyLimitFailsThatCallAloneWithServerError) {
  wheelrpc::rpc::ClientOptions co;
  co.channel.max_body = 1u << 16;
  RpcFixture fx({}, co, 2, [](wheelrpc::rpc::Server& s) {
    s.handle("big", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) { r.reply(std::string(1u << 17, 'y')); });
  });
  auto out = call(*fx.client, "big", "");
  EXPECT_EQ(out.ec, errc::server_error) << out.response.error_message;
  EXPECT_NE(out.response.error_message.find("reply of 131075 bytes to 'big' exceeds the client's limit of 65536 bytes"),
            std::string::npos)
      << out.response.error_message;
  EXPECT_EQ(fx.server.stats().oversize_replies, 1u);
  auto again = call(*fx.client, "echo", "small");
  EXPECT_FALSE(again.ec) << again.response.error_message;
  EXPECT_EQ(fx.client->stats().connects, 1u) << "the connection was not closed";
}

TEST(Call, ConcurrentCallsFromManyThreads) {
  RpcFixture fx;
  constexpr int kThreads = 8, kCalls = 300;
  std::atomic<int> ok{0}, wrong{0}, completions{0};
  // 2,400 calls at once, the first connect among them: under a sanitizer on
  // a loaded machine the default 1 s deadline could pass for some.
  CallOptions o;
  o.timeout = std::chrono::seconds(30);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        std::string payload = std::to_string(t) + ":" + std::to_string(i);
        fx.client->async_call("echo", payload, o, [&, payload](error_code ec, Response r) {
          if (!ec && r.payload == payload)
            ++ok;
          else
            ++wrong;
          ++completions;
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return completions.load() == kThreads * kCalls; }, 30s));
  EXPECT_EQ(ok.load(), kThreads * kCalls);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(fx.client->stats().pending, 0u);
}

TEST(Call, HandlerThatDropsItsResponderAnswersServerError) {
  RpcFixture fx({}, {}, 2, [](wheelrpc::rpc::Server& server) {
    server.handle("drop", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder) {});
    server.handle("throw", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder) {
      throw std::runtime_error("handler exploded");
    });
  });
  auto dropped = call(*fx.client, "drop", "");
  EXPECT_EQ(dropped.ec, errc::server_error);
  EXPECT_NE(dropped.response.error_message.find("dropped"), std::string::npos);
  auto threw = call(*fx.client, "throw", "");
  EXPECT_EQ(threw.ec, errc::server_error);
  EXPECT_NE(threw.response.error_message.find("threw"), std::string::npos);
  EXPECT_FALSE(call(*fx.client, "echo", "ok").ec);
}

TEST(Call, HandlerMayReplyLaterFromAnotherThread) {
  std::vector<std::thread> repliers;
  std::mutex mu;
  RpcFixture fx({}, {}, 2, [&](wheelrpc::rpc::Server& server) {
    server.handle("later", [&](wheelrpc::rpc::Request req, wheelrpc::rpc::Responder r) {
      std::lock_guard lock(mu);
      repliers.emplace_back([req = std::move(req), r = std::move(r)]() mutable {
        EXPECT_TRUE(r.pending());
        EXPECT_TRUE(r.deadline().has_value());
        r.reply("later:" + req.payload);
      });
    });
  });
  auto out = call(*fx.client, "later", "x");
  EXPECT_FALSE(out.ec) << out.response.error_message;
  EXPECT_EQ(out.response.payload, "later:x");
  std::lock_guard lock(mu);
  for (auto& t : repliers) t.join();
}

}  // namespace
