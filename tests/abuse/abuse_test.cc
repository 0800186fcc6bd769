// Hostile and greedy clients against a real server (the echo_server example,
// run as a child process with a 1 s hello timeout and 4 MiB of queued replies
// per connection at most). In every case the abuser is cut off within its
// limit, a well-behaved client calling all along completes every call, and
// once the abusers are gone the server's resident memory comes back to within
// 10 % of what it was before and it holds no more open files than before.
//
// Each abuse runs twice: the first round sizes what the process keeps for
// reuse once it has seen that many connections (Asio keeps each socket's
// reactor state in a pool, the allocator's arenas grow, code pages load),
// and the memory is measured from there. The second round, the same abuse
// again, must leave nothing behind: no growth per abuse.
#include <gtest/gtest.h>

#include "abuse/abuse_support.h"

namespace {

using namespace wheelrpc::test::abuse;

class Abuse : public ::testing::Test {
 protected:
  void SetUp() override {
    raise_open_files();
    server_.emplace(WHEELRPC_ECHO_SERVER, server_args());
    ASSERT_TRUE(server_->ok()) << server_->log_tail();
    good_.emplace(server_->port());
    ASSERT_TRUE(good_->start()) << good_->first_error();
  }

  /// Runs `abuse` once to size the process, waits until the server holds no
  /// more files than before it, and takes the memory then as the baseline.
  template <class F>
  void warm_up(F abuse) {
    const long files = server_->open_files();
    abuse();
    ASSERT_TRUE(eventually([&] { return server_->open_files() <= files; }, 60s));
    std::this_thread::sleep_for(1500ms);  // the trim that follows the closes (ServerOptions::return_memory)
    rss_before_ = server_->rss_kib();
    files_before_ = server_->open_files();
    ASSERT_GT(rss_before_, 0);
    ASSERT_GT(files_before_, 0);
  }

  /// After the abusers left: the good client failed no call, and the server's
  /// memory and open files come back (each within 30 s).
  void expect_recovered() {
    good_->stop();
    EXPECT_EQ(good_->failed(), 0u) << good_->first_error();
    EXPECT_GT(good_->ok(), 200u);
    long rss = 0;
    if (kMemoryChecked) {
      EXPECT_TRUE(eventually(
        [&] {
          rss = server_->rss_kib();
          return rss <= rss_before_ + rss_before_ / 10;
        },
        30s))
          << "RSS " << rss << " KiB, before the abuse " << rss_before_ << " KiB";
      std::printf("server RSS: %ld KiB before the second round, %ld KiB after\n", rss_before_, rss);
    }
    long files = 0;
    EXPECT_TRUE(eventually(
        [&] {
          files = server_->open_files();
          return files <= files_before_;
        },
        30s))
        << files << " open files, before the abuse " << files_before_;
    EXPECT_EQ(server_->stop(), 0) << "a graceful shutdown after the abuse\n" << server_->log_tail();
  }

  std::optional<wheelrpc::test::ServerProcess> server_;
  std::optional<GoodClient> good_;
  long rss_before_ = 0, files_before_ = 0;
};

// How long past its limit an abuser may be seen cut off: the timer's tick,
// a loaded machine, a sanitizer.
constexpr auto kSlack = 10s;

TEST_F(Abuse, AThousandSilentConnectionsAreCutOffAtTheHelloTimeout) {
  warm_up([&] { silent_connections(server_->port(), 1000); });
  const auto v = verdict(silent_connections(server_->port(), 1000));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kHelloTimeout + kSlack);
  expect_recovered();
}

TEST_F(Abuse, AHelloSentOneBytePer100msIsCutOffAtTheHelloTimeout) {
  warm_up([&] { slow_hellos(server_->port(), 20); });
  const auto times = slow_hellos(server_->port(), 20);
  const auto v = verdict(times);
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  // The whole HELLO would take about 6 s: cut off long before, at 1 s.
  EXPECT_LE(v.longest, kHelloTimeout + kSlack);
  for (auto t : times) EXPECT_GE(t, kHelloTimeout - 100ms) << "not before its limit";
  expect_recovered();
}

TEST_F(Abuse, GarbageBytesAreCutOffAtOnce) {
  warm_up([&] { garbage(server_->port(), 50, 1); });
  const auto v = verdict(garbage(server_->port(), 50, 20261123));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kSlack);
  expect_recovered();
}

TEST_F(Abuse, AFrameHeaderAnnouncing4GiBIsCutOffBeforeAnythingIsAllocated) {
  warm_up([&] { huge_headers(server_->port(), 50); });
  const auto v = verdict(huge_headers(server_->port(), 50));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, kSlack);
  expect_recovered();
}

TEST_F(Abuse, ClientsThatFloodRequestsAndReadNoRepliesAreCutOffAtTheQueueBound) {
  warm_up([&] { floods(server_->port(), 8); });
  const auto v = verdict(floods(server_->port(), 8));
  EXPECT_TRUE(v.all_cut) << server_->log_tail();
  EXPECT_LE(v.longest, 60s);
  expect_recovered();
}

}  // namespace
