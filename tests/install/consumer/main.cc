// Built against an installed wheelrpc: schedules a timeout and checks it ran.
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  wheelrpc::timer::HashedWheelTimer timer;
  std::atomic<bool> ran{false};
  timer.new_timeout([&] { ran = true; }, std::chrono::milliseconds(1));
  for (int i = 0; i < 10000 && !ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::puts(ran ? "consumer: timeout ran" : "consumer: timeout did not run");
  return ran ? 0 : 1;
}
