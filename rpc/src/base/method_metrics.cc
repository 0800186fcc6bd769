#include "base/method_metrics.h"

#include <wheelrpc/timer/clock.h>
#include <wheelrpc/transport/channel.h>

#include <algorithm>
#include <bit>

namespace wheelrpc::rpc::detail {
namespace {

constexpr std::uint64_t kCoarseBoundsNs[MethodCells::kCoarse - 1] = {
    500'000,     1'000'000,   2'500'000,   5'000'000,     10'000'000,    25'000'000,    50'000'000,
    100'000'000, 250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

constexpr unsigned kFirstOctave = 10;  // 1024 ns
constexpr unsigned kOctaves = 27;      // up to 2^37 ns (~137 s)

/// Upper bound (ns) of fine bucket i (i < kFine - 1).
double fine_bound_ns(std::size_t i) noexcept {
  if (i == 0) return static_cast<double>(1u << kFirstOctave);
  const std::size_t k = i - 1;
  const unsigned e = kFirstOctave + static_cast<unsigned>(k / 4);
  const unsigned s = static_cast<unsigned>(k % 4);
  return static_cast<double>(std::uint64_t{1} << e) * (1.0 + (s + 1) / 4.0);
}

struct Bounds {
  std::vector<double> coarse, fine;
  Bounds() {
    for (auto b : kCoarseBoundsNs) coarse.push_back(static_cast<double>(b) / 1e9);
    for (std::size_t i = 0; i + 1 < MethodCells::kFine; ++i) fine.push_back(fine_bound_ns(i) / 1e9);
  }
};
const Bounds& bounds() {
  static const Bounds b;
  return b;
}

std::atomic<std::uint64_t> g_next_table_id{1};

}  // namespace

std::size_t MethodCells::fine_index(std::uint64_t ns) noexcept {
  if (ns < (std::uint64_t{1} << kFirstOctave)) return 0;
  const unsigned e = static_cast<unsigned>(std::bit_width(ns)) - 1;
  if (e >= kFirstOctave + kOctaves) return kFine - 1;
  const unsigned s = static_cast<unsigned>((ns >> (e - 2)) & 3);
  return 1 + (e - kFirstOctave) * 4 + s;
}

std::size_t MethodCells::coarse_index(std::uint64_t ns) noexcept {
  std::size_t i = 0;
  while (i < kCoarse - 1 && ns > kCoarseBoundsNs[i]) ++i;  // "le": a value on a bound is in that bucket
  return i;
}

void MethodCells::completed(CallCode code, std::chrono::nanoseconds latency) noexcept {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(latency.count(), 0));
  const std::size_t slot = common::thread_slot();
  Shard& s = shards_[slot];
  common::add_in_slot(s.handled[static_cast<std::size_t>(code)], 1, slot);
  common::add_in_slot(s.sum_ns, ns, slot);
  common::add_in_slot(s.coarse[coarse_index(ns)], 1, slot);
  common::add_in_slot(s.fine[fine_index(ns)], 1, slot);
  auto max = max_ns_.load(std::memory_order_relaxed);
  while (ns > max && !max_ns_.compare_exchange_weak(max, ns, std::memory_order_relaxed)) {
  }
  // Both extremes settle after the first few calls: then each is one load.
  auto min = min_ns_.load(std::memory_order_relaxed);
  while (ns < min && !min_ns_.compare_exchange_weak(min, ns, std::memory_order_relaxed)) {
  }
}

MethodStats MethodCells::snapshot() const {
  MethodStats out;
  out.method = name_;
  out.latency.bounds = bounds().coarse;
  out.latency.counts.assign(kCoarse, 0);
  out.latency_fine.bounds = bounds().fine;
  out.latency_fine.counts.assign(kFine, 0);
  std::uint64_t started = 0, sum_ns = 0, streams_ended = 0;
  // Stream ends before starts, as calls: a stream seen ended is seen opened.
  for (std::size_t c = 0; c < kStreamEndKinds; ++c) {
    const auto cause = static_cast<StreamEnd>(c);
    const auto usual = static_cast<std::size_t>(usual_status(cause));
    std::uint64_t by_cause = 0;
    const std::size_t first = out.stream_ends.size();
    for (std::size_t v = 0; v < static_cast<std::size_t>(kStatusCodes); ++v) {
      const auto n = stream_ends_[c][v].load(std::memory_order_acquire);
      by_cause += n;
      if (v == usual) {
        out.stream_ends.insert(out.stream_ends.begin() + static_cast<std::ptrdiff_t>(first),
                               {to_label(cause), static_cast<StatusCode>(v), n});
      } else if (n != 0) {
        out.stream_ends.push_back({to_label(cause), static_cast<StatusCode>(v), n});
      }
    }
    count_of(out.streams.ends, cause) = by_cause;
    streams_ended += by_cause;
  }
  for (const Shard& s : shards_) {
    // Completions first, then starts: a call racing with the snapshot is
    // seen started if seen completed, so in flight never goes negative.
    for (std::size_t i = 0; i < kCallCodes; ++i) out.handled[i] += s.handled[i].load(std::memory_order_acquire);
    for (std::size_t i = 0; i < kCoarse; ++i) out.latency.counts[i] += s.coarse[i].load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < kFine; ++i) out.latency_fine.counts[i] += s.fine[i].load(std::memory_order_relaxed);
    sum_ns += s.sum_ns.load(std::memory_order_relaxed);
    out.deadline_exceeded += s.deadline_exceeded.load(std::memory_order_relaxed);
    out.shed += s.shed.load(std::memory_order_relaxed);
    for (int d = 0; d < 2; ++d) {
      PayloadTraffic& t = d == 0 ? out.sent : out.received;
      t.messages += s.traffic[d][0].load(std::memory_order_relaxed);
      t.compressed += s.traffic[d][1].load(std::memory_order_relaxed);
      t.bytes += s.traffic[d][2].load(std::memory_order_relaxed);
      t.wire_bytes += s.traffic[d][3].load(std::memory_order_relaxed);
    }
    out.streams.messages_out += s.stream_messages[static_cast<int>(Direction::sent)].load(std::memory_order_relaxed);
    out.streams.messages_in += s.stream_messages[static_cast<int>(Direction::received)].load(std::memory_order_relaxed);
  }
  for (const Shard& s : shards_) {
    started += s.started.load(std::memory_order_acquire);
    out.streams.opened += s.stream_opened.load(std::memory_order_acquire);
  }
  out.streams.open = out.streams.opened - std::min(out.streams.opened, streams_ended);
  for (auto c : out.latency.counts) out.latency.count += c;
  for (auto c : out.latency_fine.counts) out.latency_fine.count += c;
  out.latency.sum = out.latency_fine.sum = static_cast<double>(sum_ns) / 1e9;
  out.in_flight = std::max<std::int64_t>(0, static_cast<std::int64_t>(started - std::min(started, out.calls())));
  out.max_s = static_cast<double>(max_ns_.load(std::memory_order_relaxed)) / 1e9;
  const auto min_ns = min_ns_.load(std::memory_order_relaxed);
  out.min_s = min_ns == ~std::uint64_t{0} ? 0 : static_cast<double>(min_ns) / 1e9;
  return out;
}

MethodTable::MethodTable() : id_(g_next_table_id.fetch_add(1, std::memory_order_relaxed)) {}

MethodCells& MethodTable::get(std::string_view method) {
  // Most threads call one or two methods of one table: remember the last few.
  struct Entry {
    std::uint64_t table = 0;
    std::string name;
    MethodCells* cells = nullptr;
  };
  thread_local Entry cache[4];
  thread_local unsigned victim = 0;
  for (auto& e : cache) {
    if (e.table == id_ && e.name == method) return *e.cells;
  }
  MethodCells* found = nullptr;
  {
    common::LockGuard lock(mu_);
    auto it = by_name_.find(method);
    if (it != by_name_.end()) {
      found = it->second;
    } else {
      cells_.push_back(std::make_unique<MethodCells>(std::string(method)));
      found = cells_.back().get();
      by_name_.emplace(found->name(), found);
    }
  }
  Entry& e = cache[victim++ % 4];
  e.table = id_;
  e.name.assign(method);
  e.cells = found;
  return *found;
}

std::vector<MethodStats> MethodTable::snapshot() const {
  std::vector<const MethodCells*> cells;
  {
    common::LockGuard lock(mu_);
    for (const auto& c : cells_) cells.push_back(c.get());
  }
  std::vector<MethodStats> out;
  out.reserve(cells.size());
  for (const auto* c : cells) out.push_back(c->snapshot());
  return out;
}

void TimeoutLog::add(TimeoutRecord record) {
  common::LockGuard lock(mu_);
  if (ring_.size() < kKept) {
    ring_.push_back(std::move(record));
  } else {
    ring_[next_] = std::move(record);
    next_ = (next_ + 1) % kKept;
  }
}

std::vector<TimeoutRecord> TimeoutLog::snapshot() const {
  common::LockGuard lock(mu_);
  std::vector<TimeoutRecord> out;
  out.reserve(ring_.size());
  // Oldest is at next_ once the ring is full; newest just before it.
  for (std::size_t i = 0; i < ring_.size(); ++i) {
    const std::size_t idx = (next_ + ring_.size() - 1 - i) % ring_.size();
    out.push_back(ring_[idx]);
  }
  return out;
}

namespace {
std::chrono::milliseconds age_ms(std::chrono::steady_clock::time_point then,
                                 std::chrono::steady_clock::time_point now) {
  return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(now - then));
}
}  // namespace

void fill_channel_info(ConnectionInfo& info, const transport::Channel& ch) {
  const auto steady = std::chrono::steady_clock::now();
  info.local = ch.local();
  info.remote = ch.remote();
  info.age = age_ms(ch.created(), steady);
  const auto traffic = ch.traffic();
  info.bytes_in = traffic.bytes_in;
  info.bytes_out = traffic.bytes_out;
  info.frames_in = traffic.frames_in;
  info.frames_out = traffic.frames_out;
  info.heartbeats_sent = traffic.heartbeats_sent;
  info.protocol = ch.is_raw() ? "grpc" : "native";  // a byte channel in rpc/ is HTTP/2 carrying gRPC
  // The channel stamps reads and writes with the timer's fast clock, a
  // steady clock with the same epoch.
  const auto fast = timer::fast_steady_now();
  info.last_read_age = age_ms(ch.last_read(), fast);
  info.last_write_age = age_ms(ch.last_write(), fast);
}

}  // namespace wheelrpc::rpc::detail
