// EtcdClient against a fake etcd that answers badly: invalid JSON, HTTP
// errors, truncated bodies and streams, silence. Each gives a clear error,
// exactly once, and no crash.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <wheelrpc/registry/errc.h>

#include "etcd_client.h"
#include "registry/etcd_test_util.h"
#include "support/log_capture.h"
#include "support/timed_listener.h"
#include "support/wait.h"

namespace {
using namespace wheelrpc::registry::detail;
using wheelrpc::registry::errc;
using wheelrpc::test::await;
using wheelrpc::test::IoThread;
using boost::system::error_code;
using namespace std::chrono_literals;

// Accepts one connection, reads one request (headers + Content-Length body),
// writes `answer`, then closes (or, with `stay_silent`, says nothing and
// waits for the client to hang up).
class FakeEtcd {
 public:
  explicit FakeEtcd(std::string answer, bool stay_silent = false)
      : answer_(std::move(answer)), silent_(stay_silent), thread_([this] { serve(); }) {}
  ~FakeEtcd() { thread_.join(); }

  std::vector<EtcdEndpoint> endpoints() const { return {{"127.0.0.1", listener_.endpoint().port()}}; }
  bool got_request() const { return got_.load(); }

 private:
  void serve() {
    wheelrpc::test::TimedClient conn;
    if (listener_.accept(conn, 20s)) return;
    std::string in;
    while (true) {
      const auto end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        const auto cl = in.find("Content-Length: ");
        const std::size_t len = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
        if (in.size() >= end + 4 + len) break;
      }
      if (conn.read_some(in, 20s)) return;
    }
    got_ = true;
    std::string rest;
    if (silent_) {
      conn.read_until_closed(rest, 20s);
      return;
    }
    conn.write(answer_, 20s);
    conn.close();
  }

  std::string answer_;
  bool silent_;
  std::atomic<bool> got_{false};
  wheelrpc::test::TimedListener listener_;
  std::thread thread_;
};

std::string http_answer(std::string_view status, std::string_view body) {
  return "HTTP/1.1 " + std::string(status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + std::string(body);
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + std::string(data) + "\r\n";
}

std::pair<error_code, RangeResult> range_from(FakeEtcd& fake, IoThread& io, EtcdClientOptions opts = {}) {
  auto client = EtcdClient::create(io.io.get_executor(), io.timer, fake.endpoints(), opts);
  return await<RangeResult>([&](auto h) { client->range_prefix("/p/", h); });
}

TEST(EtcdBadAnswer, InvalidJsonIsBadResponse) {
  IoThread io;
  FakeEtcd fake(http_answer("200 OK", "{\"header\":{\"revision\":"));
  EXPECT_EQ(range_from(fake, io).first, errc::bad_response);
}

TEST(EtcdBadAnswer, ARejectedAnswerIsLoggedOnTheRegistryLoggerWithItsReason) {
  wheelrpc::test::LogCapture log("wheelrpc.registry");
  IoThread io;
  FakeEtcd fake(http_answer("200 OK", R"({"header":{"revision":"not-a-number"}})"));
  EXPECT_EQ(range_from(fake, io).first, errc::bad_response);
  EXPECT_EQ(log.count("etcd answer rejected: field 'revision' is not an int64"), 1u);
}

TEST(EtcdBadAnswer, Http500WithoutAnEtcdBodyIsHttpError) {
  IoThread io;
  FakeEtcd fake(http_answer("500 Internal Server Error", "boom"));
  EXPECT_EQ(range_from(fake, io).first, errc::http_error);
}

TEST(EtcdBadAnswer, AnEtcdErrorBodyIsEtcdError) {
  IoThread io;
  FakeEtcd fake(http_answer("503 Service Unavailable",
                            R"({"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14})"));
  EXPECT_EQ(range_from(fake, io).first, errc::etcd_error);
}

TEST(EtcdBadAnswer, ATruncatedBodyIsTruncated) {
  IoThread io;
  std::string answer = http_answer("200 OK", R"({"header":{"revision":"2"},"kvs":[]})");
  answer.resize(answer.size() - 10);  // Content-Length promises more than comes
  FakeEtcd fake(answer);
  EXPECT_EQ(range_from(fake, io).first, errc::truncated);
}

TEST(EtcdBadAnswer, ASilentServerTimesOutByTheDeadline) {
  IoThread io;
  FakeEtcd fake("", /*stay_silent=*/true);
  EtcdClientOptions opts;
  opts.request_timeout = 300ms;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(range_from(fake, io, opts).first, errc::timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 280ms);
  EXPECT_TRUE(fake.got_request());
}

struct WatchResult {
  std::mutex mu;
  int messages = 0;
  int finals = 0;
  error_code final_ec;
};

void run_watch(FakeEtcd& fake, IoThread& io, WatchResult& out) {
  auto client = EtcdClient::create(io.io.get_executor(), io.timer, fake.endpoints());
  auto w = client->watch("/p/", 0, [&out](error_code ec, const WatchResponse&) {
    std::lock_guard l(out.mu);
    if (ec) {
      ++out.finals;
      out.final_ec = ec;
    } else {
      ++out.messages;
    }
  });
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        std::lock_guard l(out.mu);
        return out.finals > 0;
      },
      20s));
}

const std::string kChunkedHeader =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
const std::string kCreated = R"({"result":{"header":{"revision":"3"},"created":true}})"
                             "\n";

TEST(EtcdBadAnswer, AWatchStreamCutMidChunkIsTruncated) {
  IoThread io;
  // The created message split over two chunks, then half of the next chunk.
  const std::string event = R"({"result":{"header":{"revision":"4"},"events":[{"kv":{"key":"L3AvMQ=="}}]}})"
                            "\n";
  std::string partial = chunk(event);
  partial.resize(partial.size() / 2);
  FakeEtcd fake(kChunkedHeader + chunk(kCreated.substr(0, 10)) + chunk(kCreated.substr(10)) + partial);
  WatchResult r;
  run_watch(fake, io, r);
  std::lock_guard l(r.mu);
  EXPECT_EQ(r.messages, 1);  // created
  EXPECT_EQ(r.finals, 1);
  EXPECT_EQ(r.final_ec, errc::truncated) << r.final_ec.message();
}

TEST(EtcdBadAnswer, AWatchStreamWithInvalidJsonIsBadResponse) {
  IoThread io;
  FakeEtcd fake(kChunkedHeader + chunk(kCreated + "{oops\n") + "0\r\n\r\n");
  WatchResult r;
  run_watch(fake, io, r);
  std::lock_guard l(r.mu);
  EXPECT_EQ(r.messages, 1);
  EXPECT_EQ(r.finals, 1);
  EXPECT_EQ(r.final_ec, errc::bad_response) << r.final_ec.message();
}

TEST(EtcdBadAnswer, AWatchStreamThatEndsCleanlyIsWatchClosed) {
  IoThread io;
  FakeEtcd fake(kChunkedHeader + chunk(kCreated) + "0\r\n\r\n");
  WatchResult r;
  run_watch(fake, io, r);
  std::lock_guard l(r.mu);
  EXPECT_EQ(r.messages, 1);
  EXPECT_EQ(r.final_ec, errc::watch_closed) << r.final_ec.message();
}

TEST(EtcdBadAnswer, AWatchAnsweredWithHttp500IsHttpError) {
  IoThread io;
  FakeEtcd fake(http_answer("500 Internal Server Error", "boom"));
  WatchResult r;
  run_watch(fake, io, r);
  std::lock_guard l(r.mu);
  EXPECT_EQ(r.messages, 0);
  EXPECT_EQ(r.final_ec, errc::http_error) << r.final_ec.message();
}

}  // namespace

namespace {

TEST(EtcdBadAnswer, AWatchNeverConfirmedTimesOutByTheDeadline) {
  IoThread io;
  FakeEtcd fake("", /*stay_silent=*/true);
  EtcdClientOptions opts;
  opts.request_timeout = 300ms;
  auto client = EtcdClient::create(io.io.get_executor(), io.timer, fake.endpoints(), opts);
  WatchResult r;
  const auto t0 = std::chrono::steady_clock::now();
  auto w = client->watch("/p/", 0, [&r](error_code ec, const WatchResponse&) {
    std::lock_guard l(r.mu);
    if (ec) {
      ++r.finals;
      r.final_ec = ec;
    } else {
      ++r.messages;
    }
  });
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        std::lock_guard l(r.mu);
        return r.finals > 0;
      },
      20s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 280ms);
  std::lock_guard l(r.mu);
  EXPECT_EQ(r.final_ec, errc::timeout) << r.final_ec.message();
  EXPECT_EQ(r.messages, 0);
}

}  // namespace
