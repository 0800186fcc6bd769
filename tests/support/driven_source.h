#pragma once
// A ProviderSource the test drives (provider_source.h): each report() goes
// to the client at once, on the test's thread.

#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <wheelrpc/rpc/provider_source.h>

namespace wheelrpc::test {

class DrivenSource final : public rpc::ProviderSource {
 public:
  void start(Listener) override { ADD_FAILURE() << "the client starts a source with start_with_info"; }
  void start_with_info(InfoListener listener) override {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }
  void stop() override {
    std::lock_guard lock(mu_);
    listener_ = nullptr;
  }
  std::string describe() const override { return "test providers"; }
  void report(std::vector<rpc::ProviderInfo> providers) {
    InfoListener l;
    {
      std::lock_guard lock(mu_);
      l = listener_;
    }
    ASSERT_TRUE(l) << "the client did not start its source";
    l({}, std::move(providers), {});
  }

 private:
  std::mutex mu_;
  InfoListener listener_;
};

}  // namespace wheelrpc::test
