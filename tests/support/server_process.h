#pragma once
// ServerProcess: a real server program (the echo_server example) run as a
// child process on a free loopback port, for tests that abuse it from outside
// and watch its memory. Its stdout and stderr go to a log file in a temporary
// directory of its own (removed at the end); `log_tail()` shows the end of it
// when a test fails. The destructor stops it with SIGTERM (a graceful
// shutdown) and reaps it, with SIGKILL if it has not exited after 20 s; it
// also gets PR_SET_PDEATHSIG, so a test that dies leaves no server behind.
//
// Not thread-safe; create it on the test's main thread (PR_SET_PDEATHSIG
// follows the thread that forked).

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace wheelrpc::test {

class ServerProcess {
 public:
  /// Starts `binary` with `args` (plus "--port 0") and waits up to 60 s for
  /// its "listening on HOST:PORT" line; ok() tells whether it came.
  ServerProcess(const std::string& binary, std::vector<std::string> args) {
    std::string dir_template = (std::filesystem::temp_directory_path() / "wheelrpc-server-XXXXXX").string();
    if (::mkdtemp(dir_template.data()) == nullptr) return;
    dir_ = dir_template;
    log_ = dir_ + "/server.log";
    args.insert(args.begin(), {binary, "--port", "0"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) return;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Child: only async-signal-safe calls until exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(log_fd);
    if (pid_ < 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until && port_ == 0 && alive()) {
      std::ifstream in(log_);
      for (std::string line; std::getline(in, line);) {
        const std::string prefix = "listening on ";
        if (line.rfind(prefix, 0) == 0) {
          port_ = static_cast<std::uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
          break;
        }
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~ServerProcess() {
    stop();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool ok() const { return port_ != 0; }
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  /// Resident set size now, in KiB (from /proc; -1 if unreadable).
  long rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

  /// Open file descriptors of the server now (-1 if unreadable).
  long open_files() const {
    std::error_code ec;
    long n = 0;
    for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid_) + "/fd", ec), end; !ec && it != end;
         it.increment(ec)) {
      ++n;
    }
    return ec ? -1 : n;
  }

  /// The last `bytes` of its log.
  std::string log_tail(std::size_t bytes = 4000) const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string all = ss.str();
    return all.size() > bytes ? all.substr(all.size() - bytes) : all;
  }

  /// Stops it (SIGTERM; SIGKILL after 20 s) and reaps it; returns its exit
  /// status (-1 if it was killed or never ran). Idempotent.
  int stop() {
    if (pid_ <= 0) return status_;
    ::kill(pid_, SIGTERM);
    int st = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    pid_t r = 0;
    while ((r = ::waitpid(pid_, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (r == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      status_ = -1;
    } else {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    pid_ = -1;
    return status_;
  }

 private:
  bool alive() const {
    int st = 0;
    return pid_ > 0 && ::waitpid(pid_, &st, WNOHANG) == 0;
  }

  std::string dir_, log_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  int status_ = -1;
};

}  // namespace wheelrpc::test
