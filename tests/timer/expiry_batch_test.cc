// ExpiryBatch on a manual clock: the tasks of one tick's expirations gather
// into an ExpiryBatch that is flushed once, after the last of them; a tick
// later is another batch; outside a batch defer() refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <wheelrpc/timer/expiry_batch.h>

#include "support/manual_timer.h"

using namespace std::chrono_literals;
using wheelrpc::test::ManualTimer;
using wheelrpc::timer::ExpiryBatch;
using wheelrpc::timer::ExpiryBatchScope;

namespace {

// Records what tasks deferred and when it was flushed.
class Recorder final : public ExpiryBatch {
 public:
  std::vector<std::string>* log = nullptr;
  int gathered = 0;

 private:
  void flush() noexcept override {
    log->push_back("flush " + std::to_string(gathered));
    gathered = 0;
  }
};

TEST(ExpiryBatch, OneTicksTasksAreFlushedOnceAfterTheLast) {
  ManualTimer mt;
  std::vector<std::string> log;
  Recorder rec;
  rec.log = &log;
  for (int i = 0; i < 3; ++i) {
    mt.timer.new_timeout(
        [&log, &rec, i] {
          EXPECT_TRUE(rec.defer());
          ++rec.gathered;
          log.push_back("task " + std::to_string(i));
        },
        10ms);
  }
  mt.timer.new_timeout(
      [&log, &rec] {
        EXPECT_TRUE(rec.defer());
        ++rec.gathered;
        log.push_back("later");
      },
      20ms);
  EXPECT_EQ(mt.advance(10ms), 3u);
  EXPECT_EQ(log, (std::vector<std::string>{"task 0", "task 1", "task 2", "flush 3"}));
  log.clear();
  EXPECT_EQ(mt.advance(10ms), 1u);
  EXPECT_EQ(log, (std::vector<std::string>{"later", "flush 1"})) << "another tick, another batch";
}

TEST(ExpiryBatch, OutsideABatchDeferRefuses) {
  std::vector<std::string> log;
  Recorder rec;
  rec.log = &log;
  EXPECT_FALSE(ExpiryBatch::in_batch());
  EXPECT_FALSE(rec.defer());
  {
    ExpiryBatchScope outer;
    EXPECT_TRUE(ExpiryBatch::in_batch());
    {
      ExpiryBatchScope inner;  // nested: the outer one flushes
      EXPECT_TRUE(rec.defer());
    }
    EXPECT_TRUE(log.empty());
    EXPECT_TRUE(rec.defer());  // registered once
  }
  EXPECT_EQ(log, (std::vector<std::string>{"flush 0"}));
  EXPECT_FALSE(ExpiryBatch::in_batch());
}

TEST(ExpiryBatch, TasksHandedToAnExecutorRunOutsideABatch) {
  std::vector<wheelrpc::timer::ExpiredTask> queued;
  ManualTimer mt(1ms, 512, 0, [&queued](wheelrpc::timer::ExpiredTask t) { queued.push_back(std::move(t)); });
  bool deferred = true;
  Recorder rec;
  std::vector<std::string> log;
  rec.log = &log;
  mt.timer.new_timeout([&] { deferred = rec.defer(); }, 1ms);
  mt.advance(1ms);
  ASSERT_EQ(queued.size(), 1u);
  queued.front()();
  EXPECT_FALSE(deferred) << "one at a time on the executor: the task hands on its own work";
  EXPECT_TRUE(log.empty());
}

}  // namespace
