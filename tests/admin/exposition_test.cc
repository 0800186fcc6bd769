// The Prometheus text exposition writer and the metric cells: escaping,
// ordering, names, histogram buckets (+Inf equals _count), sharded sums, and
// promtool's verdict on a full exposition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <wheelrpc/admin/exposition.h>
#include <wheelrpc/admin/metrics.h>

namespace {
using namespace wheelrpc::admin;

TEST(Exposition, CounterAndGaugeFamiliesHaveHelpTypeAndSamplesInOrder) {
  TextExposition out;
  out.begin("wheelrpc_client_retries_total", MetricType::counter, "Retries started after a failed attempt.");
  out.sample({}, 3);
  out.begin("wheelrpc_server_connections", MetricType::gauge, "Connections open now.");
  out.sample({{"side", "server"}}, 2);
  EXPECT_EQ(out.text(),
            "# HELP wheelrpc_client_retries_total Retries started after a failed attempt.\n"
            "# TYPE wheelrpc_client_retries_total counter\n"
            "wheelrpc_client_retries_total 3\n"
            "# HELP wheelrpc_server_connections Connections open now.\n"
            "# TYPE wheelrpc_server_connections gauge\n"
            "wheelrpc_server_connections{side=\"server\"} 2\n");
}

TEST(Exposition, LabelValuesAndHelpAreEscaped) {
  TextExposition out;
  out.begin("m_total", MetricType::counter, "a \\ backslash\nand a newline");
  out.sample({{"method", "we\"ird\\na\nme"}}, 1);
  EXPECT_EQ(out.text(),
            "# HELP m_total a \\\\ backslash\\nand a newline\n"
            "# TYPE m_total counter\n"
            "m_total{method=\"we\\\"ird\\\\na\\nme\"} 1\n");
}

TEST(Exposition, NamesAndTypesAreChecked) {
  TextExposition out;
  EXPECT_THROW(out.begin("9lives", MetricType::gauge, "x"), std::invalid_argument);
  EXPECT_THROW(out.begin("bad-name", MetricType::gauge, "x"), std::invalid_argument);
  EXPECT_THROW(out.begin("calls", MetricType::counter, "x"), std::invalid_argument) << "a counter ends in _total";
  EXPECT_THROW(out.begin("calls_total", MetricType::gauge, "x"), std::invalid_argument);
  EXPECT_THROW(out.sample({}, 1), std::invalid_argument) << "no family yet";
  out.begin("calls_total", MetricType::counter, "x");
  EXPECT_THROW(out.begin("calls_total", MetricType::counter, "x"), std::invalid_argument) << "once per family";
  EXPECT_THROW(out.sample({{"__reserved", "v"}}, 1), std::invalid_argument);
  EXPECT_THROW(out.sample({{"le", "1"}}, 1), std::invalid_argument);
  EXPECT_THROW(out.sample({{"bad-label", "v"}}, 1), std::invalid_argument);
}

TEST(Exposition, ValuesAreFormattedForPrometheus) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(12345678901234), "12345678901234");
  EXPECT_EQ(format_value(0.0005), "0.0005");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_EQ(std::stod(format_value(1e-300)), 1e-300) << "too long in fixed notation: the shortest form";
  EXPECT_EQ(std::stod(format_value(0.1)), 0.1) << "round-trips";
  EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
}

TEST(Exposition, HistogramBucketsAreCumulativeAndInfEqualsCount) {
  Histogram h({0.001, 0.01, 0.1});
  for (double v : {0.0005, 0.001, 0.002, 0.05, 0.5, 7.0}) h.observe(v);
  const auto snap = h.snapshot();
  EXPECT_EQ(snap.count, 6u);
  EXPECT_EQ(snap.counts, (std::vector<std::uint64_t>{2, 1, 1, 2}));
  EXPECT_NEAR(snap.sum, 7.5535, 1e-9);
  TextExposition out;
  out.begin("lat_seconds", MetricType::histogram, "Latency.");
  out.histogram({{"method", "echo"}}, snap);
  EXPECT_EQ(out.text(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{method=\"echo\",le=\"0.001\"} 2\n"
            "lat_seconds_bucket{method=\"echo\",le=\"0.01\"} 3\n"
            "lat_seconds_bucket{method=\"echo\",le=\"0.1\"} 4\n"
            "lat_seconds_bucket{method=\"echo\",le=\"+Inf\"} 6\n"
            "lat_seconds_sum{method=\"echo\"} 7.5535\n"
            "lat_seconds_count{method=\"echo\"} 6\n");
  EXPECT_THROW(out.sample({}, 1), std::invalid_argument) << "a histogram family takes histogram()";
  EXPECT_THROW(Histogram({0.1, 0.1}), std::invalid_argument);
  EXPECT_THROW(Histogram({1.0 / 0.0}), std::invalid_argument);
}

TEST(Metrics, ShardedCountersSumEveryThreadsAdds) {
  Counter c;
  Histogram h(Histogram::latency_bounds());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(0.003);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 80000u);
  const auto snap = h.snapshot();
  EXPECT_EQ(snap.count, 80000u);
  EXPECT_EQ(snap.counts[3], 80000u) << "0.003 falls in le=0.005";
  EXPECT_NEAR(snap.sum, 240.0, 1e-6);
  Gauge g;
  g.add(5);
  g.add(-2);
  EXPECT_EQ(g.value(), 3);
}

// promtool (Debian's prometheus package, scripts/install_deps.sh) on an
// exposition with every kind of family: no error, no lint warning.
TEST(Exposition, PromtoolFindsNothingToSay) {
  const char* promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) GTEST_SKIP() << "no /usr/bin/promtool (scripts/install_deps.sh installs it)";
  TextExposition out;
  out.begin("wheelrpc_client_handled_total", MetricType::counter, "Calls completed, by method and code.");
  out.sample({{"method", "echo"}, {"code", "ok"}}, 10);
  out.sample({{"method", "echo"}, {"code", "timeout"}}, 0);
  out.begin("wheelrpc_server_in_flight", MetricType::gauge, "Requests being handled now.");
  out.sample({{"method", "echo"}}, 1);
  Histogram h(Histogram::latency_bounds());
  h.observe(0.002);
  out.begin("wheelrpc_client_handling_seconds", MetricType::histogram, "Call latency, from start to completion.");
  out.histogram({{"method", "echo"}}, h.snapshot());
  const auto dir = std::filesystem::temp_directory_path() /
                   ("wheelrpc-promtool-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                    std::to_string(reinterpret_cast<std::uintptr_t>(&out)));
  std::filesystem::create_directories(dir);
  const auto file = dir / "metrics.txt";
  const auto result = dir / "result.txt";
  std::ofstream(file) << out.text();
  const std::string cmd =
      std::string(promtool) + " check metrics < " + file.string() + " > " + result.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(result);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0) << said;
  EXPECT_EQ(said, "") << "promtool's lint";
}

}  // namespace
