#include "stage.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <type_traits>
#include <variant>

#include "pipe.h"

namespace wheelrpc::fault::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

Stage::Stage(Pipe& pipe, const ToxicEntry& entry) : pipe_(pipe), name_(entry.toxic.name), applied_(entry.applied) {}

std::deque<Segment> Stage::detach() {
  detached_ = true;
  return {};
}

void Stage::emit(Segment seg) { pipe_.forward(*this, std::move(seg)); }

void Stage::count_applied() {
  bump(*applied_);
  bump(pipe_.counters().applied);
}

std::minstd_rand make_rng() {
  static std::atomic<std::uint32_t> sequence{0};
  std::random_device rd;
  std::seed_seq seq{rd(), sequence.fetch_add(1, std::memory_order_relaxed)};
  return std::minstd_rand(seq);
}

TimedStage::TimedStage(Pipe& pipe, const ToxicEntry& entry) : Stage(pipe, entry), timer_(pipe.executor()) {}

Clock::time_point TimedStage::enqueue(Clock::time_point due, Segment seg) {
  due = std::max(due, last_due_);
  last_due_ = due;
  queue_.emplace_back(due, std::move(seg));
  if (!armed_) arm();
  return due;
}

void TimedStage::arm() {
  armed_ = true;
  timer_.expires_at(queue_.front().first);
  // The stage and the pair stay alive until the wait ends: a stage removed (or
  // a pair closed) meanwhile sees `detached()` and does nothing.
  timer_.async_wait([self = std::static_pointer_cast<TimedStage>(shared_from_this()),
                     keep = pipe_.keep_alive()](const error_code& ec) {
    if (ec || self->detached()) return;
    self->on_timer();
  });
}

void TimedStage::on_timer() {
  armed_ = false;
  const auto now = Clock::now();
  while (!queue_.empty() && queue_.front().first <= now) {
    Segment seg = std::move(queue_.front().second);
    queue_.pop_front();
    emit(std::move(seg));
    // Emitting may have closed the connection (limit_data further down).
    if (detached() || pipe_.closed()) return;
  }
  if (!queue_.empty()) arm();
}

std::deque<Segment> TimedStage::detach() {
  Stage::detach();
  timer_.cancel();
  armed_ = false;
  std::deque<Segment> held;
  for (auto& [due, seg] : queue_) held.push_back(std::move(seg));
  queue_.clear();
  return held;
}

namespace {

class LatencyStage final : public TimedStage {
 public:
  LatencyStage(Pipe& pipe, const ToxicEntry& entry, const Latency& t)
      : TimedStage(pipe, entry), latency_(t.latency), jitter_(t.jitter), rng_(make_rng()) {}

  // Markers travel the same delayed link as data: a FIN is late too.
  void push(Segment seg) override {
    if (seg.kind == Segment::Kind::data) count_applied();
    auto delay = std::chrono::duration_cast<Clock::duration>(latency_);
    if (jitter_.count() > 0) {
      std::uniform_int_distribution<long long> dist(-jitter_.count(), jitter_.count());
      delay += std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(dist(rng_)));
      delay = std::max(delay, Clock::duration::zero());
    }
    enqueue(Clock::now() + delay, std::move(seg));
  }

 private:
  std::chrono::milliseconds latency_, jitter_;
  std::minstd_rand rng_;
};

class BandwidthStage final : public TimedStage {
 public:
  BandwidthStage(Pipe& pipe, const ToxicEntry& entry, const Bandwidth& t)
      : TimedStage(pipe, entry), bytes_per_s_(t.rate_kb_per_s * 1000) {}

  // A piece of n bytes leaves n / rate after the previous one left (or after it
  // arrived, when the link was idle): pieces of at most 50 ms worth of bytes,
  // so a slow rate trickles instead of bursting.
  void push(Segment seg) override {
    const auto now = Clock::now();
    if (seg.kind != Segment::Kind::data) {
      free_at_ = enqueue(std::max(free_at_, now), std::move(seg));
      return;
    }
    count_applied();
    const std::size_t piece_max = std::max<std::uint64_t>(1, bytes_per_s_ / 20);
    for (std::size_t offset = 0; offset < seg.data.size();) {
      const std::size_t n = std::min(piece_max, seg.data.size() - offset);
      const auto cost = std::chrono::nanoseconds(n * std::uint64_t{1'000'000'000} / bytes_per_s_);
      free_at_ = std::max(free_at_, now) + std::chrono::duration_cast<Clock::duration>(cost);
      Segment piece;
      piece.data = seg.data.substr(offset, n);
      free_at_ = enqueue(free_at_, std::move(piece));
      offset += n;
    }
  }

 private:
  std::uint64_t bytes_per_s_;
  Clock::time_point free_at_{};
};

class SlicerStage final : public TimedStage {
 public:
  SlicerStage(Pipe& pipe, const ToxicEntry& entry, const Slicer& t)
      : TimedStage(pipe, entry),
        average_(t.average_size),
        variation_(t.size_variation),
        delay_(t.delay),
        rng_(make_rng()) {}

  // Slices leave `delay` apart, the first at once (or `delay` after the
  // previous chunk's last slice).
  void push(Segment seg) override {
    const auto now = Clock::now();
    if (seg.kind != Segment::Kind::data) {
      enqueue(std::max(next_at_, now), std::move(seg));
      return;
    }
    count_applied();
    std::uniform_int_distribution<std::size_t> size(average_ - variation_, average_ + variation_);
    for (std::size_t offset = 0; offset < seg.data.size();) {
      const std::size_t n = std::min(std::max<std::size_t>(1, size(rng_)), seg.data.size() - offset);
      Segment slice;
      slice.data = seg.data.substr(offset, n);
      const auto at = enqueue(std::max(next_at_, now), std::move(slice));
      next_at_ = at + std::chrono::duration_cast<Clock::duration>(delay_);
      offset += n;
    }
  }

 private:
  std::size_t average_, variation_;
  std::chrono::microseconds delay_;
  std::minstd_rand rng_;
  Clock::time_point next_at_{};
};

class BlackholeStage final : public Stage {
 public:
  BlackholeStage(Pipe& pipe, const ToxicEntry& entry) : Stage(pipe, entry) {}

  // Data is gone; an end of stream waits for the toxic's removal, so that the
  // connection does not outlive the blackhole half-closed for ever.
  void push(Segment seg) override {
    if (seg.kind == Segment::Kind::data) {
      count_applied();
      pipe_.discard(seg.data.size());
      return;
    }
    held_.push_back(std::move(seg));
  }

  std::deque<Segment> detach() override {
    Stage::detach();
    return std::move(held_);
  }

 private:
  std::deque<Segment> held_;
};

class LimitDataStage final : public Stage {
 public:
  LimitDataStage(Pipe& pipe, const ToxicEntry& entry, const LimitData& t) : Stage(pipe, entry), remaining_(t.bytes) {}

  void push(Segment seg) override {
    if (seg.kind != Segment::Kind::data) {
      if (!done_) emit(std::move(seg));
      return;
    }
    if (done_) {
      pipe_.discard(seg.data.size());
      return;
    }
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, seg.data.size()));
    if (take < seg.data.size()) {
      pipe_.discard(seg.data.size() - take);
      seg.data.resize(take);
    }
    remaining_ -= take;
    if (remaining_ > 0) {
      emit(std::move(seg));
      return;
    }
    count_applied();
    done_ = true;
    if (!seg.data.empty()) emit(std::move(seg));
    if (!detached() && !pipe_.closed()) emit(Segment{Segment::Kind::close, {}});
  }

 private:
  std::uint64_t remaining_;
  bool done_ = false;
};

}  // namespace

std::shared_ptr<Stage> make_stage(Pipe& pipe, const ToxicEntry& entry) {
  return std::visit(
      [&](const auto& t) -> std::shared_ptr<Stage> {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, Latency>)
          return std::make_shared<LatencyStage>(pipe, entry, t);
        else if constexpr (std::is_same_v<T, Bandwidth>)
          return std::make_shared<BandwidthStage>(pipe, entry, t);
        else if constexpr (std::is_same_v<T, Slicer>)
          return std::make_shared<SlicerStage>(pipe, entry, t);
        else if constexpr (std::is_same_v<T, Blackhole>)
          return std::make_shared<BlackholeStage>(pipe, entry);
        else if constexpr (std::is_same_v<T, LimitData>)
          return std::make_shared<LimitDataStage>(pipe, entry, t);
        else
          return nullptr;
      },
      entry.toxic.attributes);
}

}  // namespace wheelrpc::fault::detail
