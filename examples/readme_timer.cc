// Docs quote this file's lines verbatim (tests/examples checks them): not reformatted.
// clang-format off
// readme_timer: the README's timer snippet, as a whole program (the README
// shows the part between the [readme:timer] marks). One timeout is cancelled
// in time, one runs, one is still pending when the timer stops.
//
//   readme_timer            (prints three lines and exits 0)
// [readme:timer]
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <chrono>
#include <cstdio>
#include <future>

using namespace std::chrono_literals;

int main() {
  wheelrpc::timer::HashedWheelTimer timer;  // 1 ms tick, 512 slots per level; starts on first use

  // A task is a callable or a std::shared_ptr<TimerTask>. cancel() is true
  // only if it prevented the run.
  auto t = timer.new_timeout([] { std::puts("too late to cancel"); }, 10s);
  if (t.cancel()) std::puts("cancelled: it will never run");

  std::promise<void> ran;  // tasks run on the timer's worker thread
  timer.new_timeout([&ran] { std::puts("ran after 20 ms"); ran.set_value(); }, 20ms);
  ran.get_future().wait();

  timer.new_timeout([] { std::puts("never printed"); }, 1h);
  auto never_ran = timer.stop();  // the timeouts that neither ran nor were cancelled
  std::printf("stopped: %zu never ran\n", never_ran.size());
}
// [readme:timer-end]
// clang-format on
