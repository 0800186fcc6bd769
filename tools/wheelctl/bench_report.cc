#include "bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace wheelrpc::wheelctl {
namespace {

constexpr std::size_t kBarRows = 12;
constexpr std::size_t kBarWidth = 40;

double us(std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

const char* protocol_name(rpc::WireProtocol protocol) noexcept {
  return protocol == rpc::WireProtocol::grpc ? "grpc" : "native";
}

void print_bench_text(const BenchResult& r, std::ostream& out) {
  out << "Summary:\n";
  out << "  protocol:     " << protocol_name(r.protocol) << "\n";
  if (r.rate > 0) {
    out << "  mode:         open loop, " << fixed(r.rate, r.rate < 10 ? 2 : 0) << " calls/s scheduled, at most "
        << r.max_in_flight << " in flight, " << r.threads << " thread" << (r.threads == 1 ? "" : "s") << "\n";
  } else {
    out << "  mode:         closed loop, concurrency " << r.concurrency << ", " << r.threads << " thread"
        << (r.threads == 1 ? "" : "s") << "\n";
  }
  out << "  duration:     " << fixed(r.duration_s, 2) << " s" << (r.interrupted ? " (interrupted)" : "") << "\n";
  out << "  calls:        " << r.calls << " (" << r.ok << " ok, " << r.errors << " failed)\n";
  out << "  calls/s:      " << fixed(r.calls_per_s(), 1) << "\n";
  if (r.rate > 0) {
    out << "  cap hits:     " << r.cap_hits << " (calls that waited for the in-flight cap)\n";
    out << "  unsent:       " << r.unsent << " (calls due but not started when the run ended)\n";
  }

  out << "\nLatency of successful calls (us" << (r.rate > 0 ? ", from each call's intended start" : "") << "):\n";
  const Histogram& h = r.latency;
  out << "  p50    " << fixed(us(h.percentile(50)), 1) << "\n";
  out << "  p90    " << fixed(us(h.percentile(90)), 1) << "\n";
  out << "  p99    " << fixed(us(h.percentile(99)), 1) << "\n";
  out << "  p99.9  " << fixed(us(h.percentile(99.9)), 1) << "\n";
  out << "  max    " << fixed(us(h.max()), 1) << "\n";

  const auto bars = h.bars(kBarRows);
  if (!bars.empty()) {
    std::uint64_t top = 0;
    for (const auto& b : bars) top = std::max(top, b.count);
    out << "\nHistogram (us):\n";
    for (const auto& b : bars) {
      char range[64];
      std::snprintf(range, sizeof range, "  [%10.1f, %10.1f) %10llu |", us(b.lower), us(b.upper),
                    static_cast<unsigned long long>(b.count));
      const std::size_t width = top ? static_cast<std::size_t>((b.count * kBarWidth + top - 1) / top) : 0;
      out << range << std::string(width, '#') << "\n";
    }
  }

  if (r.errors > 0) {
    out << "\nErrors by status:\n";
    for (int c = 0; c < rpc::kStatusCodes; ++c) {
      if (r.errors_by_status[static_cast<std::size_t>(c)] == 0) continue;
      char line[96];
      std::snprintf(line, sizeof line, "  %-20s %llu\n",
                    std::string(rpc::to_string(static_cast<rpc::StatusCode>(c))).c_str(),
                    static_cast<unsigned long long>(r.errors_by_status[static_cast<std::size_t>(c)]));
      out << line;
    }
    if (!r.first_error.empty()) out << "  first error: " << r.first_error << "\n";
  }
  out.flush();
}

std::string bench_json_line(const BenchResult& r) {
  boost::json::object by_status;
  for (int c = 0; c < rpc::kStatusCodes; ++c) {
    const auto n = r.errors_by_status[static_cast<std::size_t>(c)];
    if (n) by_status[rpc::to_string(static_cast<rpc::StatusCode>(c))] = n;
  }
  const Histogram& h = r.latency;
  // Members in a fixed order; doubles with fixed decimals ("12.5", where
  // Boost.JSON would write 1.25E1).
  std::string line = "{";
  const auto key = [&line](const char* k) {
    if (line.size() > 1) line += ',';
    line += '"';
    line += k;
    line += "\":";
  };
  const auto num = [&](const char* k, std::uint64_t v) {
    key(k);
    line += std::to_string(v);
  };
  const auto real = [&](const char* k, double v, int decimals) {
    key(k);
    line += std::isfinite(v) ? fixed(v, decimals) : "null";
  };
  num("calls", r.calls);
  num("ok", r.ok);
  real("calls_per_s", r.calls_per_s(), 1);
  num("errors", r.errors);
  key("errors_by_status");
  line += boost::json::serialize(by_status);
  real("p50_us", us(h.percentile(50)), 1);
  real("p90_us", us(h.percentile(90)), 1);
  real("p99_us", us(h.percentile(99)), 1);
  real("p999_us", us(h.percentile(99.9)), 1);
  real("max_us", us(h.max()), 1);
  num("concurrency", r.concurrency);
  real("duration_s", r.duration_s, 3);
  real("rate", r.rate, 3);
  key("protocol");
  line += '"';
  line += protocol_name(r.protocol);
  line += '"';
  num("threads", r.threads);
  num("max_in_flight", r.max_in_flight);
  num("cap_hits", r.cap_hits);
  num("unsent", r.unsent);
  key("interrupted");
  line += r.interrupted ? "true" : "false";
  line += '}';
  return line;
}

}  // namespace wheelrpc::wheelctl
