// A short tour of the HashedWheelTimer: schedules a few timeouts, cancels one,
// lets the others fire, and prints what happened and the timer's counters.
//
//   timer_demo
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>

using namespace std::chrono_literals;
using wheelrpc::timer::HashedWheelTimer;
using wheelrpc::timer::Timeout;
using wheelrpc::timer::TimerTask;

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point g_start = Clock::now();

double ms_since_start() { return std::chrono::duration<double, std::milli>(Clock::now() - g_start).count(); }

// Counts down to zero; main waits on it (bounded) for the timeouts to fire.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void count_down() {
    std::lock_guard l(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  bool wait_for(std::chrono::milliseconds d) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, d, [&] { return n_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

// A TimerTask with state that reschedules itself, as a heartbeat would.
class Ticker : public TimerTask, public std::enable_shared_from_this<Ticker> {
 public:
  Ticker(int runs, Latch& done) : left_(runs), done_(done) {}
  void run(Timeout& t) override {
    std::printf("%8.1f ms  ticker run %d (timeout %u is_expired=%d)\n", ms_since_start(), 4 - left_, t.id(),
                t.is_expired());
    if (--left_ > 0) {
      t.timer()->new_timeout(shared_from_this(), 20ms);
    } else {
      done_.count_down();
    }
  }

 private:
  int left_;
  Latch& done_;
};

}  // namespace

int main() {
  HashedWheelTimer timer;  // 1 ms tick, 512 slots per level; started lazily
  Latch done(3);

  std::printf(
      "%8.1f ms  scheduling: A in 30 ms, B in 10 ms, C in 50 ms (to be cancelled), "
      "a ticker every 20 ms x3, D in 1 h\n",
      ms_since_start());
  timer.new_timeout(
      [&] {
        std::printf("%8.1f ms  A fired (due at 30 ms)\n", ms_since_start());
        done.count_down();
      },
      30ms);
  timer.new_timeout(
      [&](Timeout& t) {
        std::printf("%8.1f ms  B fired (due at 10 ms), cancel() from inside returns %d\n", ms_since_start(),
                    t.cancel());
        done.count_down();
      },
      10ms);
  Timeout c = timer.new_timeout([] { std::printf("C must never run\n"); }, 50ms);
  timer.new_timeout(std::make_shared<Ticker>(3, done), 20ms);
  Timeout d = timer.new_timeout([] { std::printf("D must never run\n"); }, 1h);

  const bool first = c.cancel();
  const bool second = c.cancel();
  std::printf("%8.1f ms  cancel C -> %d, cancel C again -> %d, C.is_cancelled() = %d\n", ms_since_start(), first,
              second, c.is_cancelled());

  if (!done.wait_for(5s)) {
    std::printf("timeouts did not fire within 5 s\n");
    return 1;
  }
  auto left = timer.stop();
  std::printf("%8.1f ms  stop() returned %zu unprocessed timeout(s); D among them: %d\n", ms_since_start(), left.size(),
              !left.empty() && left.front() == d);

  const auto st = timer.stats();
  std::printf(
      "stats: scheduled=%llu expired=%llu cancelled=%llu pending=%llu worker wakeups=%llu "
      "p99 lateness <= %llu us\n",
      static_cast<unsigned long long>(st.scheduled), static_cast<unsigned long long>(st.expired),
      static_cast<unsigned long long>(st.cancelled), static_cast<unsigned long long>(st.pending),
      static_cast<unsigned long long>(st.wakeups), static_cast<unsigned long long>(st.lateness_quantile_us(0.99)));
  return 0;
}
