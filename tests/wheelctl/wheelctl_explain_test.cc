// wheelctl explain against a real AdminServer with a client following rules:
// the table names the winning layer, the rule's key and revision and the
// layers it beats; --json passes the admin's answer through; a port where
// nothing listens is exit 3.
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/parse.hpp>

#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/rpc/call_rules.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "failure.h"
#include "verbs.h"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

struct ExplainFixture {
  ExplainFixture() {
    auto rules = std::make_shared<wheelrpc::rpc::CallRules>();
    rules->revision = 4712;
    rules->methods["echo"].timeout = wheelrpc::rpc::Overridden<std::chrono::milliseconds>{
        200ms, false, std::make_shared<const std::string>("runtime override /wheelrpc/echo/rules/slow rev 4712")};
    wheelrpc::rpc::ClientOptions co;
    co.call_defaults.timeout = 3s;
    co.rules = wheelrpc::rpc::static_rules(rules);
    // Never called: the endpoint needs no server.
    client.emplace(io.get_executor(), timer,
                   std::vector<asio::ip::tcp::endpoint>{{asio::ip::make_address("127.0.0.1"), 9}}, co);
    admin.emplace(io.get_executor(), timer);
    admin->add_client("checkout", *client);
    if (auto ec = admin->listen(0)) throw boost::system::system_error(ec);
    thread = std::thread([this] { io.run(); });
  }
  ~ExplainFixture() {
    admin->stop();
    client->close();
    work.reset();
    io.stop();
    thread.join();
  }
  std::string where() const { return "127.0.0.1:" + std::to_string(admin->local_endpoint().port()); }

  wheelrpc::timer::HashedWheelTimer timer;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::optional<wheelrpc::rpc::Client> client;
  std::optional<wheelrpc::admin::AdminServer> admin;
  std::thread thread;
};

int explain(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::istringstream in;
  std::ostringstream o, e;
  wheelrpc::wheelctl::Io io{in, o, e};
  const int rc = wheelrpc::wheelctl::run_explain(args, io);
  out = o.str();
  err = e.str();
  return rc;
}

TEST(WheelctlExplain, NamesTheWinningLayerItsRuleAndWhatItBeats) {
  ExplainFixture fx;
  std::string out, err;
  ASSERT_EQ(explain({fx.where(), "echo"}, out, err), wheelrpc::wheelctl::kExitOk) << err;
  EXPECT_NE(out.find("method echo\n"), std::string::npos) << out;
  EXPECT_NE(out.find("client checkout: rules from "), std::string::npos) << out;
  EXPECT_NE(out.find("revision 4712"), std::string::npos) << out;
  std::istringstream lines(out);
  std::string line, timeout_line;
  while (std::getline(lines, line))
    if (line.rfind("  timeout_ms ", 0) == 0) timeout_line = line;
  EXPECT_NE(timeout_line.find("200"), std::string::npos) << out;
  EXPECT_NE(timeout_line.find("runtime override /wheelrpc/echo/rules/slow rev 4712"), std::string::npos) << out;
  EXPECT_NE(timeout_line.find("beats client default 3000; beats built-in default 1000"), std::string::npos) << out;

  ASSERT_EQ(explain({"http://" + fx.where() + "/", "echo", "--json"}, out, err), 0) << err;
  const auto doc = boost::json::parse(out);
  EXPECT_EQ(doc.at("clients").at(0).at("settings").at(0).at("layer").as_string(), "runtime override");
}

TEST(WheelctlExplain, UsageAndUnreachableHaveTheirExitStatus) {
  std::string out, err;
  EXPECT_EQ(explain({"127.0.0.1:1"}, out, err), wheelrpc::wheelctl::kExitUsage);
  EXPECT_EQ(explain({"nohostport", "echo"}, out, err), wheelrpc::wheelctl::kExitUsage);
  // Port 1 on loopback: nothing listens there for an unprivileged test.
  EXPECT_EQ(explain({"127.0.0.1:1", "echo", "--timeout-ms", "3000"}, out, err), wheelrpc::wheelctl::kExitUnreachable)
      << err;
  EXPECT_NE(err.find("wheelctl explain: cannot connect to 127.0.0.1:1"), std::string::npos) << err;
}

}  // namespace
