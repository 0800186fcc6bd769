#pragma once
// EtcdCluster: 1 or 3 real etcd processes (/usr/bin/etcd, Debian's 3.4) on
// free loopback ports, each with its own temporary data directory, for the
// registry's integration tests. A member can be killed (SIGKILL), frozen
// (SIGSTOP), thawed (SIGCONT) and restarted. The destructor kills and reaps
// every process it started (only those: by PID) and removes the directories.
// Each etcd also gets PR_SET_PDEATHSIG, so a test that dies without running
// destructors still leaves no etcd behind.
//
// Not thread-safe: use it from the test's thread. PR_SET_PDEATHSIG follows
// the thread that forked, so create it on a thread that outlives it (the
// test's main thread).

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "support/raw_http.h"

namespace wheelrpc::test {

class EtcdCluster {
 public:
  static constexpr const char* kEtcdBinary = "/usr/bin/etcd";

  /// True if the etcd binary is installed (scripts/install_deps.sh installs it).
  static bool available() { return ::access(kEtcdBinary, X_OK) == 0; }

  /// Starts `members` (1 or 3) members and waits until each answers /health,
  /// up to `limit`. Check `ok()` (and `error()`) afterwards.
  explicit EtcdCluster(int members = 1, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    char tmpl[] = "/tmp/wheelrpc-etcd-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    token_ = std::filesystem::path(dir_).filename().string();
    // Ports are probed free then released: another process could take one in
    // between, so a cluster that does not come up is retried on new ports.
    for (int round = 0; round < 3; ++round) {
      kill_all();
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) std::filesystem::remove_all(entry, ec);
      members_.assign(static_cast<std::size_t>(members), Member{});
      for (std::size_t i = 0; i < members_.size(); ++i) {
        members_[i].client_port = free_port();
        members_[i].peer_port = free_port();
        members_[i].name = "m" + std::to_string(i);
        members_[i].data_dir = dir_ + "/" + members_[i].name;
      }
      bool started = true;
      for (std::size_t i = 0; i < members_.size() && started; ++i) started = spawn(i);
      if (!started) continue;
      bool healthy = true;
      for (std::size_t i = 0; i < members_.size() && healthy; ++i) healthy = wait_healthy(static_cast<int>(i), limit);
      if (healthy) {
        ok_ = true;
        error_.clear();
        return;
      }
    }
  }

  ~EtcdCluster() {
    kill_all();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int size() const { return static_cast<int>(members_.size()); }

  std::uint16_t client_port(int i) const { return members_.at(static_cast<std::size_t>(i)).client_port; }
  /// "127.0.0.1:PORT" of member `i`'s client URL.
  std::string client_address(int i) const { return "127.0.0.1:" + std::to_string(client_port(i)); }
  /// "etcd://127.0.0.1:P0,127.0.0.1:P1,...".
  std::string endpoints() const {
    std::string out = "etcd://";
    for (int i = 0; i < size(); ++i) out += (i ? "," : "") + client_address(i);
    return out;
  }
  pid_t pid(int i) const { return members_.at(static_cast<std::size_t>(i)).pid; }

  /// SIGKILL member `i` and reap it.
  void kill(int i) {
    auto& m = members_.at(static_cast<std::size_t>(i));
    if (m.pid <= 0) return;
    ::kill(m.pid, SIGKILL);
    int status = 0;
    ::waitpid(m.pid, &status, 0);
    m.pid = -1;
  }
  void freeze(int i) { signal_member(i, SIGSTOP); }
  void thaw(int i) { signal_member(i, SIGCONT); }

  /// The watchers member `i` serves now (its `etcd_debugging_mvcc_watcher_total`
  /// gauge, from GET /metrics), or -1 if it does not answer.
  int watchers(int i) {
    const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), client_port(i));
    const auto reply = http_exchange(ep, http_request_text("GET", "/metrics"), std::chrono::seconds(2));
    if (reply.status != 200) return -1;
    const std::string_view name = "\netcd_debugging_mvcc_watcher_total ";
    const auto at = reply.body.find(name);
    if (at == std::string::npos) return -1;
    return std::atoi(reply.body.c_str() + at + name.size());
  }

  /// Kills member `i` if it runs, starts it again on its ports and data
  /// directory, and waits for its health up to `limit`.
  bool restart(int i, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    kill(i);
    return spawn(static_cast<std::size_t>(i)) && wait_healthy(i, limit);
  }

  /// Polls GET /health on member `i` until it answers "true" or `limit` passes.
  bool wait_healthy(int i, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), client_port(i));
    while (std::chrono::steady_clock::now() < end) {
      if (!running(i)) {
        error_ = "etcd member " + std::to_string(i) + " exited; log: " + log_tail(i);
        return false;
      }
      const auto reply = http_exchange(ep, http_request_text("GET", "/health"), std::chrono::seconds(2));
      if (reply.status == 200 && reply.body.find("\"true\"") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    error_ = "etcd member " + std::to_string(i) + " not healthy in time; log: " + log_tail(i);
    return false;
  }

 private:
  struct Member {
    std::string name;
    std::string data_dir;
    std::uint16_t client_port = 0;
    std::uint16_t peer_port = 0;
    pid_t pid = -1;
  };

  static std::uint16_t free_port() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
  }

  bool running(int i) {
    auto& m = members_.at(static_cast<std::size_t>(i));
    if (m.pid <= 0) return false;
    int status = 0;
    if (::waitpid(m.pid, &status, WNOHANG) == m.pid) {
      m.pid = -1;
      return false;
    }
    return true;
  }

  void signal_member(int i, int sig) {
    const auto& m = members_.at(static_cast<std::size_t>(i));
    if (m.pid > 0) ::kill(m.pid, sig);
  }

  std::string log_path(std::size_t i) const { return dir_ + "/" + members_[i].name + ".log"; }

  std::string log_tail(int i) const {
    std::string all;
    if (FILE* f = std::fopen(log_path(static_cast<std::size_t>(i)).c_str(), "r")) {
      char buf[4096];
      std::size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) all.append(buf, n);
      std::fclose(f);
    }
    return all.size() > 800 ? all.substr(all.size() - 800) : all;
  }

  bool spawn(std::size_t i) {
    auto& m = members_[i];
    auto url = [](std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); };
    std::string initial;
    for (const auto& o : members_) initial += (initial.empty() ? "" : ",") + o.name + "=" + url(o.peer_port);
    std::vector<std::string> args = {kEtcdBinary,
                                     "--name",
                                     m.name,
                                     "--data-dir",
                                     m.data_dir,
                                     "--listen-client-urls",
                                     url(m.client_port),
                                     "--advertise-client-urls",
                                     url(m.client_port),
                                     "--listen-peer-urls",
                                     url(m.peer_port),
                                     "--initial-advertise-peer-urls",
                                     url(m.peer_port),
                                     "--initial-cluster",
                                     initial,
                                     "--initial-cluster-state",
                                     "new",
                                     "--initial-cluster-token",
                                     token_,
                                     "--heartbeat-interval",
                                     "50",
                                     "--election-timeout",
                                     "500",
                                     "--logger",
                                     "zap",
                                     "--log-outputs",
                                     "stderr",
                                     "--log-level",
                                     "error"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int log_fd = ::open(log_path(i).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      if (log_fd >= 0) ::close(log_fd);
      error_ = "fork failed";
      return false;
    }
    if (pid == 0) {
      // Child: only async-signal-safe calls until exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      if (log_fd >= 0) {
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
      }
      ::execv(kEtcdBinary, argv.data());
      ::_exit(127);
    }
    if (log_fd >= 0) ::close(log_fd);
    m.pid = pid;
    return true;
  }

  void kill_all() {
    for (std::size_t i = 0; i < members_.size(); ++i) kill(static_cast<int>(i));
  }

  std::string dir_;
  std::string token_;
  std::vector<Member> members_;
  bool ok_ = false;
  std::string error_ = "not started";
};

}  // namespace wheelrpc::test
