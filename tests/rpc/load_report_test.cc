// ORCA load reports (ServerOptions::load_reports; gRFC A51/A58): the
// OrcaLoadReport codec against the bytes libprotobuf writes and against
// hostile input; the sampler (LoadReporter) with its sources faked; and a
// server on both wires whose replies carry `endpoint-load-metrics-bin` at
// most once per connection and interval, read by our client and by Debian's
// grpcio (tests/rpc/load_report/load_report_grpcio.py).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <wheelrpc/rpc/server.h>

#include "base/metadata_split.h"
#include "base/orca_load_report.h"
#include "server/load_reporter.h"
#include "wire/grpc/grpc_wire.h"
#include "support/h2_client.h"
#include "support/held_responders.h"
#include "support/rpc_fixture.h"
#include "support/run_process.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using wheelrpc::rpc::detail::decode;
using wheelrpc::rpc::detail::encode;
using wheelrpc::rpc::detail::kLoadReportKey;
using wheelrpc::rpc::detail::LoadReport;
using wheelrpc::rpc::detail::LoadReporter;
using wheelrpc::transport::Attachments;

namespace {

/// Calls that outlast a loaded machine (and the held calls of a test).
wheelrpc::rpc::CallOptions orca_patient() {
  wheelrpc::rpc::CallOptions o;
  o.timeout = 60s;
  return o;
}

std::string orca_from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

/// A report with every field set: what the known bytes below encode.
LoadReport orca_full_report() {
  LoadReport r;
  r.cpu_utilization = 0.25;
  r.mem_utilization = 0.125;
  r.rps = 300;
  r.request_cost = {{"db", 3.0}};
  r.utilization = {{"mem", 0.5}};
  r.rps_fractional = 100.0;
  r.eps = 2.5;
  r.named_metrics = {{"inflight", 3.0}, {"queue_wait_ms", 0.0}};
  r.application_utilization = 0.75;
  return r;
}

// orca_full_report() as Python's protobuf (4.21, upb) serializes an
// xds.data.orca.v3.OrcaLoadReport with the same values.
constexpr std::string_view kOrcaFullHex =
    "09000000000000d03f"                // 1 cpu_utilization 0.25
    "11000000000000c03f"                // 2 mem_utilization 0.125
    "18ac02"                            // 3 rps 300
    "220d0a026462110000000000000840"    // 4 request_cost {"db": 3}
    "2a0e0a036d656d11000000000000e03f"  // 5 utilization {"mem": 0.5}
    "310000000000005940"                // 6 rps_fractional 100
    "390000000000000440"                // 7 eps 2.5
    "42130a08696e666c6967687411000000000000084042180a0d71756575655f776169745f6d73110000000000000000"  // 8
    "49000000000000e83f";  // 9 application_utilization 0.75

// ---------------------------------------------------------------- the codec

TEST(OrcaCodec, EncodesAsLibprotobufDoes) {
  EXPECT_EQ(encode(orca_full_report()), orca_from_hex(kOrcaFullHex));
  EXPECT_EQ(encode(LoadReport{}), "") << "every field at its default: no bytes";
  LoadReport cpu;
  cpu.cpu_utilization = 0.5;
  EXPECT_EQ(encode(cpu), orca_from_hex("09000000000000e03f"));
  LoadReport named;
  named.named_metrics = {{"a", 1.0}};
  EXPECT_EQ(encode(named), orca_from_hex("420c0a016111000000000000f03f"));
}

TEST(OrcaCodec, DecodesLibprotobufsBytesAndRoundTrips) {
  const auto d = decode(orca_from_hex(kOrcaFullHex));
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, orca_full_report());
  EXPECT_EQ(d->named_metric("inflight"), 3.0);
  EXPECT_EQ(d->named_metric("nope"), std::nullopt);
  const auto empty = decode("");
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, LoadReport{});
}

TEST(OrcaCodec, SkipsUnknownFieldsOfEveryWireType) {
  // Field 15 as a varint, field 16 fixed64, field 17 length-delimited, field
  // 18 fixed32, then cpu_utilization 0.5; an unknown field inside a map entry too.
  const std::string bytes = orca_from_hex(
      "7896018101"
      "0102030405060708"
      "8a0103616263"
      "950101020304"
      "09000000000000e03f"
      "42101801"
      "0a016111000000000000f03f"
      "2000");
  const auto d = decode(bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cpu_utilization, 0.5);
  ASSERT_EQ(d->named_metrics.size(), 1u);
  EXPECT_EQ(d->named_metrics[0], (std::pair<std::string, double>{"a", 1.0}));
}

TEST(OrcaCodec, TheLastOfARepeatedScalarOrMapKeyWinsAsInProtobuf) {
  // cpu 0.25 then 0.5; named_metrics a=1, b=2, a=3; an entry without value (c=0) and one without key (""=1).
  const std::string bytes = orca_from_hex(
      "09000000000000d03f"
      "09000000000000e03f"
      "420c0a016111000000000000f03f"
      "420c0a0162110000000000000040"
      "420c0a016111000000000000"
      "0840"
      "42030a0163"
      "420911000000000000f03f");
  const auto d = decode(bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cpu_utilization, 0.5);
  const std::vector<std::pair<std::string, double>> want{{"b", 2.0}, {"a", 3.0}, {"c", 0.0}, {"", 1.0}};
  EXPECT_EQ(d->named_metrics, want);
}

TEST(OrcaCodec, RefusesMalformedAndHostileInput) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"a truncated double", "09000000"},
      {"a tag alone", "09"},
      {"a length past the end",
       "4205"
       "0a01"},
      {"a huge length",
       "42ffffffff0f"
       "0a"},
      {"a 2^64 length", "42ffffffffffffffffff01"},
      {"an overlong varint", "18ffffffffffffffffffff01"},
      {"a varint overflowing 64 bits", "18ffffffffffffffffff02"},
      {"field number 0", "0100000000000000f03f"},
      {"a start group", "7b"},
      {"an end group", "7c"},
      {"wire type 6", "7e"},
      {"cpu_utilization as a varint", "0801"},
      {"application_utilization as fixed32", "4d00000000"},
      {"rps as fixed64", "190000000000000000"},
      {"named_metrics as a double", "41000000000000f03f"},
      {"a map key as a varint",
       "4202"
       "0801"},
      {"a map value as a varint",
       "4202"
       "1001"},
      {"a truncated map entry",
       "4203"
       "0a0561"},
  };
  for (const auto& [what, hex] : bad) {
    EXPECT_FALSE(decode(orca_from_hex(hex))) << what;
  }
  // Unknown varint fields (field 15 = 0), valid but for their size.
  std::string big;
  while (big.size() < wheelrpc::rpc::detail::kMaxLoadReportBytes) big += orca_from_hex("7800");
  EXPECT_TRUE(decode(big)) << "at the size limit";
  EXPECT_FALSE(decode(big + orca_from_hex("7800"))) << "over the size limit";
}

TEST(OrcaCodec, EveryTruncationIsRefusedOrAWholeFieldPrefix) {
  const std::string full = orca_from_hex(kOrcaFullHex);
  int accepted = 0;
  for (std::size_t n = 0; n < full.size(); ++n) {
    const std::string prefix = full.substr(0, n);
    const auto d = decode(prefix);
    if (!d) continue;
    ++accepted;
    // Cut between two fields: the fields before the cut, which encode back to the prefix.
    EXPECT_EQ(encode(*d), prefix) << "cut at " << n;
  }
  EXPECT_EQ(accepted, 10) << "the empty prefix, and a cut after each whole field but the last (two named metrics)";
}

TEST(OrcaCodec, RandomAndMutatedBytesNeverCrashAndWhatDecodesIsStable) {
  std::mt19937_64 rng(20261130);
  const std::string full = orca_from_hex(kOrcaFullHex);
  auto check = [](const std::string& bytes) {
    const auto d = decode(bytes);
    if (!d) return;
    // What decoded encodes to bytes that decode to the same encoding again.
    const std::string again = encode(*d);
    const auto d2 = decode(again);
    ASSERT_TRUE(d2);
    EXPECT_EQ(encode(*d2), again);
  };
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 80, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    check(bytes);
  }
  for (std::size_t pos = 0; pos < full.size(); ++pos) {
    for (int v : {0x00, 0x01, 0x02, 0x05, 0x07, 0x7f, 0x80, 0xff}) {
      std::string m = full;
      m[pos] = static_cast<char>(v);
      check(m);
    }
  }
}

TEST(OrcaCodec, ManyEntriesUnderTheLimitDecodeInBoundedTime) {
  // 64 KiB of the same named metric: one entry (the last), quickly.
  const std::string entry = orca_from_hex("420c0a016111000000000000f03f");
  std::string bytes;
  while (bytes.size() + entry.size() <= wheelrpc::rpc::detail::kMaxLoadReportBytes) bytes += entry;
  const auto t0 = std::chrono::steady_clock::now();
  const auto d = decode(bytes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->named_metrics.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// ---------------------------------------------------------------- the sampler

TEST(LoadReporterSample, ReportsItsSourcesAndAttachesOncePerConnectionAndSample) {
  std::atomic<std::uint64_t> in_flight{4}, answered{0}, failed{0};
  LoadReporter::Sources sources{[&] { return in_flight.load(); }, [&] { return answered.load(); },
                                [&] { return failed.load(); }, [] { return std::chrono::nanoseconds(2500000); }};
  LoadReporter reporter(10ms, sources);
  std::atomic<std::uint64_t> conn_a{0}, conn_b{0};
  Attachments a;
  reporter.attach_if_due(conn_a, a);
  EXPECT_TRUE(a.empty()) << "no sample yet: nothing to carry";

  reporter.sample();
  answered = 1000;
  failed = 10;
  std::this_thread::sleep_for(20ms);  // some wall time between the two samples (any amount will do)
  reporter.set_application_utilization(0.375);
  reporter.sample();
  const LoadReport r = reporter.last();
  EXPECT_EQ(r.named_metric("inflight"), 4.0);
  EXPECT_EQ(r.named_metric("queue_wait_ms"), 2.5);
  EXPECT_EQ(r.application_utilization, 0.375);
  EXPECT_GT(r.rps_fractional, 0.0);
  EXPECT_NEAR(r.eps * 100, r.rps_fractional, r.rps_fractional * 1e-9) << "10 of 1000 failed";
  EXPECT_GE(r.cpu_utilization, 0.0);
  EXPECT_LE(r.cpu_utilization, 1.0);
  EXPECT_EQ(decode(*reporter.current()), r);

  Attachments md{{"who", "me"}, {std::string(wheelrpc::rpc::detail::kTrailersMarker), ""}, {"done", "yes"}};
  reporter.attach_if_due(conn_a, md);
  ASSERT_EQ(md.size(), 4u) << "after the trailing metadata already there, no second marker";
  EXPECT_EQ(md[3].first, kLoadReportKey);
  EXPECT_EQ(md[3].second, *reporter.current());
  Attachments again;
  reporter.attach_if_due(conn_a, again);
  EXPECT_TRUE(again.empty()) << "one reply per connection and sample";
  Attachments other;
  reporter.attach_if_due(conn_b, other);
  ASSERT_EQ(other.size(), 2u) << "another connection carries it too";
  EXPECT_EQ(other[0].first, wheelrpc::rpc::detail::kTrailersMarker);
  EXPECT_EQ(other[1].first, kLoadReportKey);

  reporter.set_application_utilization(-1);
  reporter.sample();
  EXPECT_EQ(reporter.last().application_utilization, 0.0) << "negative clears it";
  reporter.attach_if_due(conn_a, again);
  EXPECT_EQ(again.size(), 2u) << "a new sample: carried again";
}

// ---------------------------------------------------------------- a server, both wires

/// The report a reply carries (in its trailing metadata, or its initial
/// metadata), decoded; nullopt if none. Fails the test if one does not decode.
std::optional<LoadReport> orca_report_of(const wheelrpc::rpc::Response& r) {
  for (const auto* md : {&r.trailers, &r.attachments}) {
    for (const auto& [k, v] : *md) {
      if (k != kLoadReportKey) continue;
      auto d = decode(v);
      EXPECT_TRUE(d) << "an undecodable report of " << v.size() << " bytes";
      return d;
    }
  }
  return std::nullopt;
}

class LoadReports : public ::testing::TestWithParam<wheelrpc::rpc::WireProtocol> {
 protected:
  wheelrpc::rpc::ClientOptions client_options() const {
    wheelrpc::rpc::ClientOptions co;
    co.protocol = GetParam();
    return co;
  }
  static wheelrpc::rpc::ServerOptions reporting(std::chrono::milliseconds interval) {
    wheelrpc::rpc::ServerOptions so;
    so.load_reports.enabled = true;
    so.load_reports.interval = interval;
    return so;
  }
};

TEST_P(LoadReports, RepliesCarryTheServersLoadWithCallsInFlightAndTheApplicationsUtilization) {
  wheelrpc::test::HeldResponders held;
  wheelrpc::test::RpcFixture f(reporting(20ms), client_options(), 2, [&](wheelrpc::rpc::Server& s) {
    s.handle("hold", [&](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) { held.add(std::move(r)); });
  });
  f.server.set_application_utilization(0.375);
  std::vector<std::future<wheelrpc::test::Outcome>> holding;
  for (int i = 0; i < 2; ++i) holding.push_back(wheelrpc::test::start(*f.client, "hold", "", orca_patient()));
  ASSERT_TRUE(wheelrpc::test::wait_until([&] { return held.size() == 2; }, 30s));

  std::optional<LoadReport> seen;
  int calls = 0;
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        auto out = wheelrpc::test::call_and_wait(*f.client, "echo", "x", orca_patient());
        ++calls;
        if (out.ec) return false;
        auto r = orca_report_of(out.response);
        if (!r || r->application_utilization != 0.375 || r->named_metric("inflight").value_or(0) < 2) return false;
        seen = std::move(r);
        return true;
      },
      30s))
      << "no report with both held calls in flight after " << calls << " calls";
  EXPECT_GE(seen->cpu_utilization, 0.0);
  EXPECT_LE(seen->cpu_utilization, 1.0);
  EXPECT_TRUE(seen->named_metric("queue_wait_ms")) << "named even without a handler executor";
  EXPECT_GE(seen->rps_fractional, 0.0);
  held.release_all();
  for (auto& h : holding) {
    ASSERT_EQ(h.wait_for(30s), std::future_status::ready);
    EXPECT_FALSE(h.get().ec);
  }

  // Cleared: the next samples carry none.
  f.server.set_application_utilization(-1);
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        auto out = wheelrpc::test::call_and_wait(*f.client, "echo", "x", orca_patient());
        auto r = orca_report_of(out.response);
        return r && r->application_utilization == 0.0;
      },
      30s));
}

TEST_P(LoadReports, WithReportsOffNoReplyCarriesOne) {
  wheelrpc::test::RpcFixture f({}, client_options());
  f.server.set_application_utilization(0.5);  // kept, reported by nobody
  for (int i = 0; i < 200; ++i) {
    auto out = wheelrpc::test::call_and_wait(*f.client, "echo", "x", orca_patient());
    ASSERT_FALSE(out.ec) << out.response.error_message;
    ASSERT_FALSE(orca_report_of(out.response)) << "call " << i;
    ASSERT_TRUE(out.response.trailers.empty()) << "call " << i;
  }
}

TEST_P(LoadReports, AConnectionCarriesAtMostOneReportPerInterval) {
  constexpr auto kInterval = 50ms;
  wheelrpc::test::RpcFixture f(reporting(kInterval), client_options());
  // Warm up: the connection is up and a first report came.
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        return orca_report_of(wheelrpc::test::call_and_wait(*f.client, "echo", "x", orca_patient()).response)
            .has_value();
      },
      30s));
  int reports = 0, calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  // Calls 8 at a time for about 6 intervals.
  while (std::chrono::steady_clock::now() - t0 < 6 * kInterval) {
    std::vector<std::future<wheelrpc::test::Outcome>> batch;
    for (int i = 0; i < 8; ++i) batch.push_back(wheelrpc::test::start(*f.client, "echo", "x", orca_patient()));
    for (auto& b : batch) {
      ASSERT_EQ(b.wait_for(30s), std::future_status::ready);
      auto out = b.get();
      ASSERT_FALSE(out.ec) << out.response.error_message;
      ++calls;
      if (orca_report_of(out.response)) ++reports;
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  const auto connections = f.server.connections().size();
  ASSERT_GE(connections, 1u);
  // Samples are at least an interval apart; a connection carries each once.
  const auto most = static_cast<int>(connections) * static_cast<int>(elapsed / kInterval + 2);
  EXPECT_LE(reports, most) << calls << " calls in "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms over "
                           << connections << " connection(s)";
  EXPECT_GT(calls, reports) << "not every reply carries one";
}

TEST_P(LoadReports, QueueWaitIsTheHandlerExecutorsQueue) {
  wheelrpc::test::IoThreads handlers(1);  // one handler thread: calls queue behind a slow one
  wheelrpc::rpc::ServerOptions so = reporting(10ms);
  so.handler_executor = handlers.io.get_executor();
  so.overload.queue_target = 0ms;  // nothing shed for its wait
  wheelrpc::test::RpcFixture f(so, client_options(), 2, [](wheelrpc::rpc::Server& s) {
    s.handle("busy", [](wheelrpc::rpc::Request, wheelrpc::rpc::Responder r) {
      std::this_thread::sleep_for(20ms);  // the handler's own work, holding the one handler thread
      r.reply("done");
    });
  });
  // Four calls behind one another on the one thread: the later ones wait
  // 20 ms and more; a report of the samples meanwhile says so.
  double most = -1;
  ASSERT_TRUE(wheelrpc::test::wait_until(
      [&] {
        std::vector<std::future<wheelrpc::test::Outcome>> busy;
        for (int i = 0; i < 4; ++i) busy.push_back(wheelrpc::test::start(*f.client, "busy", "", orca_patient()));
        for (auto& b : busy) {
          if (b.wait_for(60s) != std::future_status::ready) return false;
          const auto r = orca_report_of(b.get().response);
          if (r) most = std::max(most, r->named_metric("queue_wait_ms").value_or(-1));
        }
        return most >= 5.0;
      },
      60s))
      << "queue_wait_ms at most " << most;
  // The handler thread is done (a reply it sent may hold its connection a
  // moment longer) before the fixture's io_context goes.
  handlers.stop();
}

INSTANTIATE_TEST_SUITE_P(BothWires, LoadReports,
                         ::testing::Values(wheelrpc::rpc::WireProtocol::native, wheelrpc::rpc::WireProtocol::grpc),
                         [](const ::testing::TestParamInfo<wheelrpc::rpc::WireProtocol>& p) {
                           return p.param == wheelrpc::rpc::WireProtocol::native ? "native" : "grpc";
                         });

// ---------------------------------------------------------------- grpcio

/// The first report a reply of `f`'s client carries with
/// application_utilization `app`, decoded, and its bytes.
std::optional<std::pair<LoadReport, std::string>> orca_first_report(wheelrpc::test::RpcFixture& f, double app) {
  std::optional<std::pair<LoadReport, std::string>> got;
  wheelrpc::test::wait_until(
      [&] {
        const auto out = wheelrpc::test::call_and_wait(*f.client, "echo", "x", orca_patient());
        for (const auto& [k, v] : out.response.trailers) {
          if (k != kLoadReportKey) continue;
          auto r = decode(v);
          if (r && r->application_utilization == app) got.emplace(*r, v);
        }
        return got.has_value();
      },
      30s);
  return got;
}

// On the gRPC wire the report is the trailer `endpoint-load-metrics-bin`,
// base64 in the HTTP/2 trailers (as every gRPC client reads a -bin key).
TEST(LoadReportsOnTheWire, TheGrpcTrailerIsTheReportInBase64) {
  wheelrpc::rpc::ServerOptions so;
  so.load_reports.enabled = true;
  so.load_reports.interval = 10ms;
  wheelrpc::test::RpcFixture f(so);
  wheelrpc::test::H2Client c(f.server.local_endpoint().port());
  std::optional<std::string> text;
  for (int i = 0; i < 2000 && !text; ++i) {
    const auto id = c.grpc_call("/echo", "x");
    ASSERT_TRUE(c.wait_closed(id, 30s));
    ASSERT_EQ(c.stream(id).grpc_status(), 0);
    for (const auto& [k, v] : c.stream(id).headers) EXPECT_NE(k, kLoadReportKey) << "a trailer, not a header";
    text = c.stream(id).trailer(kLoadReportKey);
    if (!text) std::this_thread::sleep_for(1ms);  // the next sample, within an interval
  }
  ASSERT_TRUE(text) << "no trailer " << kLoadReportKey;
  std::string bytes;
  ASSERT_TRUE(wheelrpc::rpc::detail::base64_decode(*text, bytes)) << *text;
  EXPECT_EQ(wheelrpc::rpc::detail::base64_encode(bytes), *text) << "padded base64, as gRPC writes it";
  const auto r = decode(bytes);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->named_metric("inflight"));
}

// grpcio calls a server with reports on (gRPC's core keeps the trailer for
// its own balancers: the script says whether it showed it), and protobuf's
// runtime, with stubs from xds's OrcaLoadReport, decodes a report our client
// got to what our codec decoded.
TEST(LoadReportsGrpcio, GrpcioCallsTheServerAndProtobufDecodesTheReportAsWeDo) {
  if (std::system("/usr/bin/python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no grpcio or grpc_tools for /usr/bin/python3";
  }
  wheelrpc::rpc::ServerOptions so;
  so.load_reports.enabled = true;
  so.load_reports.interval = 20ms;
  wheelrpc::rpc::ClientOptions co;
  co.protocol = wheelrpc::rpc::WireProtocol::grpc;
  wheelrpc::test::RpcFixture f(so, co);
  f.server.set_application_utilization(0.625);
  const auto got = orca_first_report(f, 0.625);
  ASSERT_TRUE(got) << "no report with the application's utilization";
  const auto& [ours, bytes] = *got;
  std::string hex;
  for (const unsigned char ch : bytes) {
    hex += "0123456789abcdef"[ch >> 4];
    hex += "0123456789abcdef"[ch & 15];
  }

  std::string dir = (std::filesystem::temp_directory_path() / "wheelrpc-orca-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string out_path = dir + "/grpcio.out";
  const int rc = wheelrpc::test::run_process(
      {"/usr/bin/python3", WHEELRPC_ORCA_SCRIPT, std::to_string(f.server.local_endpoint().port()), hex}, out_path, 90s);
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove_all(dir);
  if (rc == 77) GTEST_SKIP() << text.str();
  ASSERT_EQ(rc, 0) << text.str();
  std::map<std::string, double> fields;
  std::string line;
  std::istringstream lines(text.str());
  while (std::getline(lines, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = std::stod(line.substr(eq + 1));
  }
  EXPECT_EQ(fields["calls"], 50) << text.str();
  EXPECT_EQ(fields["report-bytes"], static_cast<double>(bytes.size())) << text.str();
  EXPECT_EQ(fields["application_utilization"], 0.625) << text.str();
  EXPECT_EQ(fields["cpu_utilization"], ours.cpu_utilization) << text.str();
  EXPECT_EQ(fields["rps_fractional"], ours.rps_fractional) << text.str();
  EXPECT_EQ(fields["eps"], ours.eps) << text.str();
  EXPECT_EQ(fields["named_metrics.inflight"], ours.named_metric("inflight").value_or(-1)) << text.str();
  EXPECT_EQ(fields["named_metrics.queue_wait_ms"], ours.named_metric("queue_wait_ms").value_or(-1)) << text.str();
  std::cout << text.str();  // the decoded report, for the record
}

}  // namespace
