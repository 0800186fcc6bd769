// module_logger: the application's logger when one is registered, a null
// logger otherwise, and a change in the registry is seen at the next call.
#include <wheelrpc/common/logging.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "support/log_capture.h"

namespace {

using wheelrpc::detail::module_logger;

TEST(ModuleLogger, WithoutAnApplicationLoggerIsANullLoggerOfThatName) {
  auto l = module_logger("wheelrpc.test.none");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->name(), "wheelrpc.test.none");
  EXPECT_EQ(spdlog::get("wheelrpc.test.none"), nullptr) << "the null logger must not take the name";
  EXPECT_EQ(module_logger("wheelrpc.test.none"), l) << "one null logger per name";
}

TEST(ModuleLogger, ALoggerRegisteredLaterIsUsedAndADroppedOneIsNot) {
  // Longer than the small-string size on purpose, like "wheelrpc.transport".
  const char* name = "wheelrpc.test.registered_later";
  auto before = module_logger(name);
  {
    wheelrpc::test::LogCapture capture(name);
    auto now = module_logger(name);
    EXPECT_NE(now, before);
    EXPECT_EQ(now, spdlog::get(name));
    now->warn("seen");
    EXPECT_EQ(capture.count("seen"), 1u);
  }
  EXPECT_EQ(module_logger(name), before) << "after spdlog::drop, back to the null logger";
}

TEST(ModuleLogger, NamesAreComparedByContent) {
  const std::string a = "wheelrpc.test.content";
  const std::string b = a;  // another address, same name
  EXPECT_EQ(module_logger(a.c_str()), module_logger(b.c_str()));
}

TEST(ModuleLogger, ManyNamesAndThreadsEachGetTheirOwn) {
  // More names than the lock-free table holds, from several threads at once.
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("wheelrpc.test.many." + std::to_string(i));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&names] {
      for (int round = 0; round < 50; ++round) {
        for (const auto& n : names) {
          auto l = module_logger(n.c_str());
          if (!l || l->name() != n) ADD_FAILURE() << "wrong logger for " << n;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& n : names) EXPECT_EQ(module_logger(n.c_str()), module_logger(n.c_str()));
}

}  // namespace

namespace {
// Constructed before main, so destroyed after everything made during the
// tests: its destructor logs as a thread still running at exit would. The
// name table must outlive it (under ASan a destroyed table is a
// use-after-free, and the test binary fails at exit).
struct LogsAtExit {
  // spdlog's registry first, so that it outlives this (it is spdlog's own).
  LogsAtExit() { spdlog::get("wheelrpc.at_exit"); }
  ~LogsAtExit() { wheelrpc::detail::module_logger("wheelrpc.at_exit")->info("logged during exit"); }
} logs_at_exit;
}  // namespace

TEST(ModuleLogger, WorksDuringStaticDestruction) {
  // Makes the name table (if no test did yet) after logs_at_exit: it is
  // destroyed first at exit, unless it is never destroyed.
  EXPECT_NE(wheelrpc::detail::module_logger("wheelrpc.at_exit"), nullptr);
}
