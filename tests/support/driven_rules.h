#pragma once
// A RuleSource the test drives (call_rules.h): each report() or fail() goes
// to the client at once, on the test's thread.

#include <mutex>
#include <string>

#include <boost/asio/error.hpp>
#include <gtest/gtest.h>

#include <wheelrpc/rpc/call_rules.h>

namespace wheelrpc::test {

class DrivenRules final : public rpc::RuleSource {
 public:
  void start(Listener listener) override {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }
  void stop() override {
    std::lock_guard lock(mu_);
    listener_ = nullptr;
  }
  std::string describe() const override { return "test rules"; }
  void report(std::shared_ptr<const rpc::CallRules> rules) { send({}, std::move(rules), {}); }
  void fail(std::string why) { send(make_error_code(boost::asio::error::connection_refused), nullptr, why); }

 private:
  void send(boost::system::error_code ec, std::shared_ptr<const rpc::CallRules> rules, std::string why) {
    Listener l;
    {
      std::lock_guard lock(mu_);
      l = listener_;
    }
    ASSERT_TRUE(l) << "the client did not start its rule source";
    l(ec, std::move(rules), std::move(why));
  }
  std::mutex mu_;
  Listener listener_;
};

}  // namespace wheelrpc::test
