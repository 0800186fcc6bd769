// InterceptorChain on its own, through a fake chain: the synchronous path
// (a next used inside intercept(), on the running thread) takes no reference
// on the chain and resumes nothing through the executor; a next kept past
// intercept() holds the chain until it is used, and resumes it on the
// executor; one used on another thread while intercept() still runs goes
// on inline; on_complete waits for a next still held when the call ended.
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <wheelrpc/rpc/interceptor_next.h>
#include <wheelrpc/rpc/status_code.h>

#include "interceptors/interceptor_chain.h"

namespace {

using wheelrpc::rpc::InterceptorNext;
using wheelrpc::rpc::StatusCode;

// A chain of plain functions; the executor is a queue the test runs.
class FakeChain final : public wheelrpc::rpc::detail::InterceptorChain {
 public:
  using Step = std::function<void(InterceptorNext)>;
  explicit FakeChain(std::vector<Step> steps) : steps_(std::move(steps)) {}

  using InterceptorChain::end;
  /// Runs what was posted to the executor, in order.
  void drain() {
    while (!posted.empty()) {
      auto fn = std::move(posted.front());
      posted.erase(posted.begin());
      fn();
    }
  }

  std::vector<std::function<void()>> posted;
  bool proceeded_ = false;
  std::optional<std::pair<StatusCode, std::string>> rejection;
  std::vector<std::size_t> completed_;  // on_complete, in the order called
  std::optional<bool> completed_now;

 private:
  std::size_t size() const noexcept override { return steps_.size(); }
  std::string_view name(std::size_t index) const noexcept override { return index == 0 ? "first" : "other"; }
  const char* side() const noexcept override { return "test"; }
  void intercept(std::size_t index, InterceptorNext next) override { steps_[index](std::move(next)); }
  void complete(std::size_t index) override { completed_.push_back(index); }
  void completed(bool now) override { completed_now = now; }
  void proceeded() override { proceeded_ = true; }
  void rejected(StatusCode code, std::string message) override { rejection.emplace(code, std::move(message)); }
  void resume_later(std::function<void()> fn) override { posted.push_back(std::move(fn)); }

  std::vector<Step> steps_;
};

TEST(InterceptorChain, AnInlineProceedTakesNoReferenceAndPostsNothing) {
  std::shared_ptr<FakeChain> chain;
  std::vector<long> counts;  // the chain's use count inside each intercept(), before and after proceed()
  const auto step = [&](InterceptorNext next) {
    counts.push_back(chain.use_count());
    next.proceed();
    counts.push_back(chain.use_count());
  };
  chain = std::make_shared<FakeChain>(std::vector<FakeChain::Step>{step, step, step});
  chain->run();
  EXPECT_TRUE(chain->proceeded_);  // before run() returned, on this thread
  EXPECT_TRUE(chain->posted.empty());
  EXPECT_EQ(counts, std::vector<long>(6, 1));  // only the test's own reference, all along
  EXPECT_TRUE(chain->end());                   // nothing at work: on_complete now, in reverse order
  EXPECT_EQ(chain->completed_, (std::vector<std::size_t>{2, 1, 0}));
  EXPECT_EQ(chain->completed_now, true);
}

TEST(InterceptorChain, AnInlineRejectionStopsTheChainOnThisThread) {
  bool second_ran = false;
  auto chain = std::make_shared<FakeChain>(
      std::vector<FakeChain::Step>{[](InterceptorNext next) { next.reject(StatusCode::permission_denied, "no"); },
                                   [&](InterceptorNext next) {
                                     second_ran = true;
                                     next.proceed();
                                   }});
  chain->run();
  ASSERT_TRUE(chain->rejection);
  EXPECT_EQ(chain->rejection->first, StatusCode::permission_denied);
  EXPECT_EQ(chain->rejection->second, "no");
  EXPECT_FALSE(second_ran);
  EXPECT_FALSE(chain->proceeded_);
  EXPECT_TRUE(chain->posted.empty());
  EXPECT_TRUE(chain->end());
  EXPECT_EQ(chain->completed_, (std::vector<std::size_t>{0}));
}

TEST(InterceptorChain, ANextDroppedInsideInterceptRejectsNamingTheInterceptor) {
  auto chain = std::make_shared<FakeChain>(std::vector<FakeChain::Step>{[](InterceptorNext) {}});
  chain->run();
  ASSERT_TRUE(chain->rejection);
  EXPECT_EQ(chain->rejection->first, StatusCode::internal);
  EXPECT_NE(chain->rejection->second.find("'first'"), std::string::npos) << chain->rejection->second;
  EXPECT_TRUE(chain->posted.empty());
}

TEST(InterceptorChain, ANextKeptPastInterceptHoldsTheChainAndResumesOnTheExecutor) {
  InterceptorNext kept;
  bool second_ran = false;
  auto chain =
      std::make_shared<FakeChain>(std::vector<FakeChain::Step>{[&](InterceptorNext next) { kept = std::move(next); },
                                                               [&](InterceptorNext next) {
                                                                 second_ran = true;
                                                                 next.proceed();
                                                               }});
  chain->run();
  EXPECT_FALSE(second_ran);
  EXPECT_FALSE(chain->proceeded_);
  std::weak_ptr<FakeChain> weak = chain;
  FakeChain* raw = chain.get();
  chain.reset();  // the kept next holds it now
  ASSERT_FALSE(weak.expired());
  ASSERT_TRUE(kept.pending());
  kept.proceed();  // after intercept() returned: resumed through the executor, not here
  EXPECT_FALSE(second_ran);
  ASSERT_EQ(raw->posted.size(), 1u);
  auto fn = std::move(raw->posted.front());
  raw->posted.clear();
  fn();  // the executor runs it: the second interceptor, then the call
  EXPECT_TRUE(second_ran);
  EXPECT_TRUE(raw->proceeded_);
  fn = nullptr;  // the last reference
  EXPECT_TRUE(weak.expired());
}

TEST(InterceptorChain, ANextUsedOnAnotherThreadWhileInterceptRunsGoesOnInline) {
  auto chain = std::make_shared<FakeChain>(std::vector<FakeChain::Step>{
      [](InterceptorNext next) { std::thread([n = std::move(next)]() mutable { n.proceed(); }).join(); },
      [](InterceptorNext next) {
        std::thread([n = std::move(next)]() mutable { n.reject(StatusCode::aborted, "x"); }).join();
      }});
  chain->run();
  ASSERT_TRUE(chain->rejection);  // on this thread, before run() returned
  EXPECT_EQ(chain->rejection->first, StatusCode::aborted);
  EXPECT_TRUE(chain->posted.empty());
}

TEST(InterceptorChain, OnCompleteWaitsForANextHeldWhenTheCallEnded) {
  InterceptorNext kept;
  auto chain = std::make_shared<FakeChain>(std::vector<FakeChain::Step>{
      [](InterceptorNext next) { next.proceed(); }, [&](InterceptorNext next) { kept = std::move(next); }});
  chain->run();
  EXPECT_FALSE(chain->end());  // the second interceptor still works
  EXPECT_TRUE(chain->completed_.empty());
  kept.proceed();  // a no-op for the call (it ended), but it lets go: on_complete runs here
  EXPECT_TRUE(chain->posted.empty());
  EXPECT_FALSE(chain->proceeded_);
  EXPECT_EQ(chain->completed_, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(chain->completed_now, false);
}

TEST(InterceptorChain, AChainRunInsideAnInterceptKeepsBothInline) {
  // An interceptor whose work runs another chain on the same thread (a call
  // it makes): each next still counts as used inside its own intercept().
  auto inner = std::make_shared<FakeChain>(std::vector<FakeChain::Step>{[](InterceptorNext next) { next.proceed(); }});
  auto outer = std::make_shared<FakeChain>(std::vector<FakeChain::Step>{[&](InterceptorNext next) {
    inner->run();
    next.proceed();
  }});
  outer->run();
  EXPECT_TRUE(inner->proceeded_);
  EXPECT_TRUE(outer->proceeded_);
  EXPECT_TRUE(inner->posted.empty());
  EXPECT_TRUE(outer->posted.empty());
}

}  // namespace
