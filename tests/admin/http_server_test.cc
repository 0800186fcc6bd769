// The admin HTTP layer: routing, keep-alive, the limits (connections, header
// and body sizes, slow requests), async and failing handlers, stop() with a
// reply still pending. Every network wait is bounded; hostile clients are raw
// sockets. (The parser on its own: http_request_parser_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "http_server.h"
#include "support/timed_client.h"
#include "support/wait.h"

namespace {
using namespace std::chrono_literals;
using namespace wheelrpc::admin::detail;
using wheelrpc::test::is_closed_error;
using wheelrpc::test::TimedClient;
using wheelrpc::test::wait_until;
namespace asio = boost::asio;

constexpr std::chrono::milliseconds kWait = 10s;  // generous bound on every wait

/// One response as received.
struct Response {
  int status = 0;
  std::string head;  ///< status line and headers
  std::string body;

  /// The value of header `name` (any case), "" if absent.
  std::string header(std::string name) const {
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return s;
    };
    name = lower(name) + ":";
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos) {
      const std::size_t start = pos + 2;
      const std::size_t end = head.find("\r\n", start);
      const std::string line = head.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (lower(line.substr(0, name.size())) == name) {
        std::string v = line.substr(name.size());
        v.erase(0, v.find_first_not_of(' '));
        return v;
      }
      pos = end;
    }
    return {};
  }
  bool has_header(const std::string& name) const { return head.find("\r\n" + name + ":") != std::string::npos; }
};

/// Reads one response (headers, then Content-Length bytes of body; none for a
/// HEAD request) from `c`; `buf` keeps bytes read beyond it. status 0 on failure.
Response read_response(TimedClient& c, std::string& buf, bool head_request = false) {
  Response r;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  auto left = [&] {
    return std::max(1ms,
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };
  std::size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (c.read_some(buf, left())) return r;
  }
  r.head = buf.substr(0, end);
  buf.erase(0, end + 4);
  const std::string cl = r.header("Content-Length");
  const std::size_t n = head_request || cl.empty() ? 0 : std::stoul(cl);
  while (buf.size() < n) {
    if (c.read_some(buf, left())) return r;
  }
  r.body = buf.substr(0, n);
  buf.erase(0, n);
  if (r.head.rfind("HTTP/1.", 0) == 0 && r.head.size() >= 12) r.status = std::stoi(r.head.substr(9, 3));
  return r;
}

/// True when the server closes the connection with nothing more to read.
bool closed_by_server(TimedClient& c, std::string& buf) {
  const auto ec = c.read_until_closed(buf, kWait);
  return is_closed_error(ec) && buf.empty();
}

std::string get(std::string_view target, std::string_view extra = {}) {
  std::string r("GET ");
  r.append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n").append(extra).append("\r\n");
  return r;
}

std::string post(std::string_view target, std::string_view body) {
  std::string r("POST ");
  r.append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: ");
  r.append(std::to_string(body.size())).append("\r\n\r\n").append(body);
  return r;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    server_.emplace(io_.get_executor(), timer_, options);
    server_->add("GET", "/hello", [](HttpRequest& req, Reply reply) {
      HttpResponse res;
      res.body = "hello " + req.query_param("name");
      res.headers.emplace_back("X-Method", req.method);
      reply(std::move(res));
    });
    server_->add("POST", "/echo", [](HttpRequest& req, Reply reply) {
      HttpResponse res;
      res.content_type = std::string(req.header("content-type"));
      res.body = req.body;
      reply(std::move(res));
    });
    server_->add("PUT", "/echo", [](HttpRequest&, Reply reply) { reply(HttpResponse::text(204, "")); });
    server_->add("GET", "/throw", [](HttpRequest&, Reply) { throw std::runtime_error("boom"); });
    server_->add("GET", "/drop", [](HttpRequest&, Reply) {});
    server_->add_prefix("GET", "/rpc/",
                        [](HttpRequest& req, Reply reply) { reply(HttpResponse::text(200, "gateway " + req.path)); });
    ASSERT_FALSE(server_->listen({asio::ip::make_address("127.0.0.1"), 0}));
    ep_ = server_->local_endpoint();
    ASSERT_NE(ep_.port(), 0);
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  void TearDown() override {
    server_.reset();  // stops: closes every connection
    work_.reset();
    for (auto& t : threads_) t.join();
  }

  void connect(TimedClient& c) { ASSERT_FALSE(c.connect(ep_, kWait)); }

  wheelrpc::timer::HashedWheelTimer timer_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::vector<std::thread> threads_;
  std::optional<HttpServer> server_;
  asio::ip::tcp::endpoint ep_;
};

TEST_F(HttpServerTest, GetServesTwoRequestsOnOneKeepAliveConnection) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/hello?name=ann&x=1")));
  Response a = read_response(c, buf);
  ASSERT_FALSE(c.write(get("/hello?x=1&name=bob")));
  Response b = read_response(c, buf);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "hello ann");
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(b.body, "hello bob");
  for (const Response* r : {&a, &b}) {
    EXPECT_EQ(r->header("Content-Length"), std::to_string(r->body.size()));
    EXPECT_EQ(r->header("Cache-Control"), "no-store");
    EXPECT_EQ(r->header("Server"), "wheelrpc-admin");
    EXPECT_EQ(r->header("Content-Type"), "text/plain; charset=utf-8");
    EXPECT_EQ(r->header("X-Method"), "GET");
    EXPECT_EQ(r->header("Connection"), "");
  }
  const auto s = server_->stats();
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.open, 1u);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/hello?name=1") + post("/echo", "two") + get("/hello?name=3", "Connection: close\r\n")));
  EXPECT_EQ(read_response(c, buf).body, "hello 1");
  EXPECT_EQ(read_response(c, buf).body, "two");
  const Response last = read_response(c, buf);
  EXPECT_EQ(last.body, "hello 3");
  EXPECT_EQ(last.header("Connection"), "close");
  EXPECT_TRUE(closed_by_server(c, buf));
}

TEST_F(HttpServerTest, PostBodyIsEchoedByTheHandler) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  const std::string body(100000, 'x');
  ASSERT_FALSE(c.write(post("/echo", body)));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, body);
  EXPECT_EQ(r.header("Content-Type"), "text/plain");
}

TEST_F(HttpServerTest, ExpectContinueGets100BeforeTheBodyIsSent) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  const Response go = read_response(c, buf);
  EXPECT_EQ(go.status, 100);
  EXPECT_EQ(go.head, "HTTP/1.1 100 Continue");
  ASSERT_FALSE(c.write("12345"));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "12345");
}

TEST_F(HttpServerTest, ChunkedBodyIsDechunked) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(
      c.write("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world");
}

TEST_F(HttpServerTest, AsyncReplyFromAnotherThreadIsWritten) {
  HttpServerOptions o;
  start(o);
  std::mutex mu;
  std::vector<std::thread> repliers;
  server_->add("GET", "/slow", [&](HttpRequest& req, Reply reply) {
    std::lock_guard l(mu);
    repliers.emplace_back([reply = std::move(reply), q = req.query] {
      std::this_thread::sleep_for(20ms);  // the reply really comes later
      reply(HttpResponse::text(200, "late " + q));
    });
  });
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/slow?1")));
  EXPECT_EQ(read_response(c, buf).body, "late 1\n");
  ASSERT_FALSE(c.write(get("/slow?2")));
  EXPECT_EQ(read_response(c, buf).body, "late 2\n");
  std::lock_guard l(mu);
  for (auto& t : repliers) t.join();
}

TEST_F(HttpServerTest, ConcurrentClientsWithSyncAndAsyncRepliesAreAllAnsweredInOrder) {
  start();
  std::mutex mu;
  std::vector<std::thread> repliers;
  server_->add("GET", "/later", [&](HttpRequest& req, Reply reply) {
    std::lock_guard l(mu);
    repliers.emplace_back([reply = std::move(reply), q = req.query] { reply(HttpResponse::text(200, q)); });
  });
  constexpr int kClients = 8, kRequests = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      TimedClient c;
      if (c.connect(ep_, kWait)) return;
      std::string buf;
      for (int k = 0; k < kRequests; ++k) {
        const std::string q = std::to_string(i) + "-" + std::to_string(k);
        const bool async = k % 2 == 1;
        if (c.write(get(async ? "/later?" + q : "/hello?name=" + q))) return;
        const Response r = read_response(c, buf);
        if (r.status == 200 && r.body == (async ? q + "\n" : "hello " + q)) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  EXPECT_EQ(server_->stats().requests, static_cast<std::uint64_t>(kClients * kRequests));
  std::lock_guard l(mu);
  for (auto& t : repliers) t.join();
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/nope")));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "not found\n");
  // The connection stays usable.
  ASSERT_FALSE(c.write(get("/hello")));
  EXPECT_EQ(read_response(c, buf).status, 200);
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/echo")));
  Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("Allow"), "POST, PUT");
  ASSERT_FALSE(c.write(post("/hello", "x")));
  r = read_response(c, buf);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("Allow"), "GET, HEAD");
}

TEST_F(HttpServerTest, HeadOnAGetRouteHasTheLengthButNoBody) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("HEAD /hello?name=zed HTTP/1.1\r\nHost: h\r\n\r\n"));
  const Response r = read_response(c, buf, true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Length"), "9");  // "hello zed"
  ASSERT_FALSE(c.write("HEAD /nope HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(read_response(c, buf, true).status, 404);
  ASSERT_FALSE(c.write(get("/hello?name=amy")));
  EXPECT_EQ(read_response(c, buf).body, "hello amy");  // no body bytes were left between them
}

TEST_F(HttpServerTest, PrefixRouteServesEveryPathBelowIt) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/rpc/echo.Echo/Say?x")));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "gateway /rpc/echo.Echo/Say\n");
  ASSERT_FALSE(c.write(post("/rpc/x", "")));
  EXPECT_EQ(read_response(c, buf).status, 405);
}

TEST_F(HttpServerTest, HttpOneZeroIsClosedAfterItsResponseUnlessKeepAlive) {
  start();
  {
    TimedClient c;
    connect(c);
    std::string buf;
    ASSERT_FALSE(c.write("GET /hello HTTP/1.0\r\n\r\n"));
    const Response r = read_response(c, buf);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.head.substr(0, 8), "HTTP/1.0");
    EXPECT_TRUE(closed_by_server(c, buf));
  }
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_EQ(read_response(c, buf).header("Connection"), "keep-alive");
  ASSERT_FALSE(c.write("GET /hello HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(read_response(c, buf).status, 200);
  EXPECT_TRUE(closed_by_server(c, buf));
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/hello", "Connection: close\r\n")));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(closed_by_server(c, buf));
  EXPECT_TRUE(wait_until([&] { return server_->stats().open == 0; }, kWait));
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413BeforeTheBodyIsSent) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000\r\n\r\n"));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(closed_by_server(c, buf));
  EXPECT_EQ(server_->stats().bad_requests, 1u);
}

TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
                       std::string(0x800, 'y') + "\r\n0\r\n\r\n"));
  EXPECT_EQ(read_response(c, buf).status, 413);
  EXPECT_TRUE(closed_by_server(c, buf));
}

TEST_F(HttpServerTest, HeaderOverTheLimitIs431AndClosed) {
  start();  // 8192 bytes
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/hello", "X-Big: " + std::string(9000, 'a') + "\r\n")));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 431);
  EXPECT_TRUE(closed_by_server(c, buf));
}

TEST_F(HttpServerTest, EndlessHeaderIs431WithoutWaitingForItsEnd) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("GET /hello HTTP/1.1\r\nX-Long: " + std::string(20000, 'b')));  // no CRLF at all
  EXPECT_EQ(read_response(c, buf).status, 431);
  EXPECT_TRUE(closed_by_server(c, buf));
}

TEST_F(HttpServerTest, GarbageBytesGet400AndClose) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15)));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(closed_by_server(c, buf));
  EXPECT_EQ(server_->stats().bad_requests, 1u);
}

TEST_F(HttpServerTest, BadChunkedEncodingGets400AndClose) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"));
  EXPECT_EQ(read_response(c, buf).status, 400);
  EXPECT_TRUE(closed_by_server(c, buf));
}

TEST_F(HttpServerTest, SlowRequestGets408AndClose) {
  HttpServerOptions o;
  o.request_timeout = 200ms;
  start(o);
  TimedClient c;
  connect(c);
  std::string buf;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_FALSE(c.write("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // half a request, then nothing
  const Response r = read_response(c, buf);
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(closed_by_server(c, buf));
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, kWait);
  EXPECT_EQ(server_->stats().timeouts, 1u);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosedWithoutAnAnswer) {
  HttpServerOptions o;
  o.idle_timeout = 200ms;
  start(o);
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/hello")));
  EXPECT_EQ(read_response(c, buf).status, 200);
  EXPECT_TRUE(closed_by_server(c, buf));
  EXPECT_EQ(server_->stats().timeouts, 0u);
}

TEST_F(HttpServerTest, ConnectionsOverTheLimitGet503AndAreClosed) {
  HttpServerOptions o;
  o.max_connections = 2;
  start(o);
  TimedClient a;
  connect(a);
  TimedClient b;
  connect(b);
  std::string abuf, bbuf;
  // Both are being served (accepted and counted) before the third arrives.
  ASSERT_FALSE(a.write(get("/hello")));
  ASSERT_FALSE(b.write(get("/hello")));
  EXPECT_EQ(read_response(a, abuf).status, 200);
  EXPECT_EQ(read_response(b, bbuf).status, 200);

  TimedClient c;
  connect(c);
  std::string cbuf;
  ASSERT_FALSE(c.write(get("/hello")));
  const Response r = read_response(c, cbuf);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "too many admin connections\n");
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(closed_by_server(c, cbuf));
  EXPECT_EQ(server_->stats().rejected_connections, 1u);

  // A freed slot serves the next connection.
  a.close();
  ASSERT_TRUE(wait_until([&] { return server_->stats().open == 1; }, kWait));
  TimedClient d;
  connect(d);
  std::string dbuf;
  ASSERT_FALSE(d.write(get("/hello")));
  EXPECT_EQ(read_response(d, dbuf).status, 200);
}

TEST_F(HttpServerTest, HandlerThatThrowsGets500AndTheServerGoesOn) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/throw")));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "internal error in the handler\n");
  ASSERT_FALSE(c.write(get("/hello")));
  EXPECT_EQ(read_response(c, buf).status, 200);
}

TEST_F(HttpServerTest, HandlerThatDropsItsReplyGets500) {
  start();
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/drop")));
  EXPECT_EQ(read_response(c, buf).status, 500);
}

TEST_F(HttpServerTest, InvalidResponseHeadersAreDropped) {
  start();
  server_->add("GET", "/inject", [](HttpRequest&, Reply reply) {
    HttpResponse res;
    res.body = "ok";
    res.headers = {{"X-Evil", "a\r\nSet-Cookie: x=1"}, {"Content-Length", "99"}, {"X-Fine", "yes"}};
    reply(std::move(res));
  });
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/inject")));
  const Response r = read_response(c, buf);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(r.header("Content-Length"), "2");
  EXPECT_EQ(r.header("X-Fine"), "yes");
  EXPECT_FALSE(r.has_header("X-Evil"));
  EXPECT_FALSE(r.has_header("Set-Cookie"));
}

TEST_F(HttpServerTest, StopWithAPendingReplyThenALateReplyIsDropped) {
  start();
  std::mutex mu;
  Reply pending;
  std::atomic<bool> called{false};
  server_->add("GET", "/pending", [&](HttpRequest&, Reply reply) {
    std::lock_guard l(mu);
    pending = std::move(reply);
    called = true;
  });
  TimedClient c;
  connect(c);
  std::string buf;
  ASSERT_FALSE(c.write(get("/pending")));
  ASSERT_TRUE(wait_until([&] { return called.load(); }, kWait));
  server_->stop();
  server_->stop();  // idempotent
  // The connection is closed without an answer.
  EXPECT_TRUE(closed_by_server(c, buf));
  std::thread late([&] {
    std::lock_guard l(mu);
    pending(HttpResponse::text(200, "too late"));
    pending(HttpResponse::text(200, "twice"));
  });
  late.join();
  server_.reset();
  std::lock_guard l(mu);
  pending(HttpResponse::text(200, "after the server is gone"));
  pending = nullptr;
}

TEST_F(HttpServerTest, ListenAfterStopAndTwiceFail) {
  start();
  EXPECT_EQ(server_->listen({asio::ip::make_address("127.0.0.1"), 0}), asio::error::already_open);
  server_->stop();
  EXPECT_EQ(server_->listen({asio::ip::make_address("127.0.0.1"), 0}), asio::error::operation_aborted);
  TimedClient c;
  std::string buf;
  if (!c.connect(ep_, kWait)) {
    EXPECT_TRUE(closed_by_server(c, buf));
  }
}

}  // namespace
