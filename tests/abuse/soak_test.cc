// The abuse mix for a minute (`ctest -L soak`; not part of the default runs):
// rounds of silent connections, slow HELLOs, garbage, 4 GiB headers and
// flooders against one echo_server while a well-behaved client calls it all
// along. Every round is cut off, the client fails no call, and after the last
// round the server's memory is within 10 % of what it was after the first
// (no growth per round) and it holds no more open files than before.
// WHEELRPC_SOAK_S sets the duration in seconds (default 60).
#include <gtest/gtest.h>

#include <cstdlib>

#include "abuse/abuse_support.h"

namespace {

using namespace wheelrpc::test::abuse;

std::chrono::seconds soak_duration() {
  const char* s = std::getenv("WHEELRPC_SOAK_S");
  const long v = s ? std::strtol(s, nullptr, 10) : 60;
  return std::chrono::seconds(v > 0 ? v : 60);
}

TEST(AbuseSoak, TheWholeMixForAMinute) {
  raise_open_file_limit();
  wheelrpc::test::ServerProcess server(WHEELRPC_ECHO_SERVER, server_args());
  ASSERT_TRUE(server.ok()) << server.log_tail();
  GoodClient good(server.port());
  ASSERT_TRUE(good.start()) << good.first_error();
  const long files_before = server.open_files();
  auto round = [&](std::uint64_t seed) {
    std::vector<std::thread> abusers;
    std::vector<Verdict> verdicts(5);
    abusers.emplace_back([&] { verdicts[0] = verdict(silent_connections(server.port(), 300)); });
    abusers.emplace_back([&] { verdicts[1] = verdict(slow_hellos(server.port(), 10)); });
    abusers.emplace_back([&] { verdicts[2] = verdict(garbage(server.port(), 20, seed)); });
    abusers.emplace_back([&] { verdicts[3] = verdict(huge_headers(server.port(), 20)); });
    abusers.emplace_back([&] { verdicts[4] = verdict(floods(server.port(), 4)); });
    for (auto& t : abusers) t.join();
    for (std::size_t i = 0; i < verdicts.size(); ++i)
      EXPECT_TRUE(verdicts[i].all_cut) << "abuser " << i << " (seed " << seed << ")";
  };
  round(1);
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return server.open_files() <= files_before; }, 60s));
  std::this_thread::sleep_for(1500ms);  // the trim after the closes
  const long rss_first = server.rss_kib();
  const auto until = Clock::now() + soak_duration();
  int rounds = 1;
  for (std::uint64_t seed = 2; Clock::now() < until; ++seed, ++rounds) round(seed);
  good.stop();
  EXPECT_EQ(good.failed(), 0u) << good.first_error();
  long rss = 0, files = 0;
  if (kMemoryChecked) {
    EXPECT_TRUE(wheelrpc::test::wait_until(
        [&] {
          rss = server.rss_kib();
          return rss <= rss_first + rss_first / 10;
        },
        30s))
        << "RSS " << rss << " KiB after " << rounds << " rounds, " << rss_first << " KiB after the first";
  }
  EXPECT_TRUE(wheelrpc::test::wait_until(
      [&] {
        files = server.open_files();
        return files <= files_before;
      },
      30s))
      << files << " open files, " << files_before << " before";
  EXPECT_EQ(server.stop(), 0) << server.log_tail();
  std::printf("soak: %d rounds, %llu good calls, RSS %ld KiB after the first round, %ld KiB at the end\n", rounds,
              static_cast<unsigned long long>(good.ok()), rss_first, rss);
}

}  // namespace
