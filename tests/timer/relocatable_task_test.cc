// Word-sized tasks that own a reference (declared `wheelrpc_relocatable`) are
// stored in the timeout record itself, and the reference they own is released
// exactly once however the timeout ends: run, cancelled, or left at stop().
#include <gtest/gtest.h>

#include <memory>

#include <wheelrpc/timer/detail/task_box.h>

#include "support/manual_timer.h"

using namespace std::chrono_literals;
using wheelrpc::test::ManualTimer;

namespace {

struct OwningTask {
  using wheelrpc_relocatable = void;
  std::shared_ptr<int> counter;  // two words: too big to be stored inline
  void operator()() const { ++*counter; }
};

// One word: a pointer owning a reference (an intrusive pointer would do the same).
struct SmallOwningTask {
  using wheelrpc_relocatable = void;
  explicit SmallOwningTask(std::shared_ptr<int>* owner) : ref(new std::shared_ptr<int>(*owner)) {}
  SmallOwningTask(SmallOwningTask&& o) noexcept : ref(o.ref) { o.ref = nullptr; }
  SmallOwningTask(const SmallOwningTask&) = delete;
  ~SmallOwningTask() { delete ref; }
  void operator()() const { ++**ref; }
  std::shared_ptr<int>* ref;
};

TEST(RelocatableTask, OnlyWordSizedDeclaredTasksAreStoredInline) {
  using wheelrpc::timer::detail::kRelocatableInline;
  EXPECT_TRUE(kRelocatableInline<SmallOwningTask>);
  EXPECT_FALSE(kRelocatableInline<OwningTask>) << "two words do not fit";
  EXPECT_FALSE(kRelocatableInline<std::shared_ptr<int>>) << "not declared relocatable";
}

TEST(RelocatableTask, TheReferenceIsReleasedAfterItRuns) {
  ManualTimer mt;
  auto counter = std::make_shared<int>(0);
  mt.timer.new_timeout(SmallOwningTask(&counter), 10ms);
  EXPECT_EQ(counter.use_count(), 2);
  mt.advance(10ms);
  EXPECT_EQ(*counter, 1);
  EXPECT_EQ(counter.use_count(), 1) << "released once the task ran";
}

TEST(RelocatableTask, TheReferenceIsReleasedWhenCancelled) {
  ManualTimer mt;
  auto counter = std::make_shared<int>(0);
  auto t = mt.timer.new_timeout(SmallOwningTask(&counter), 10ms);
  EXPECT_TRUE(t.cancel());
  EXPECT_EQ(counter.use_count(), 1) << "released by the cancel";
  mt.advance(20ms);
  EXPECT_EQ(*counter, 0);
}

TEST(RelocatableTask, TheReferenceIsReleasedWhenTheTimerStops) {
  auto counter = std::make_shared<int>(0);
  {
    ManualTimer mt;
    mt.timer.new_timeout(SmallOwningTask(&counter), 10ms);
    auto left = mt.timer.stop();
    EXPECT_EQ(left.size(), 1u);
  }
  EXPECT_EQ(counter.use_count(), 1) << "released with the timer's unprocessed timeouts";
  EXPECT_EQ(*counter, 0);
}

}  // namespace
