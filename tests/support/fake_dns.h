#pragma once
// A DNS the test controls, for rpc::detail::resolved_providers' resolve seam,
// and a recorder of a ProviderSource's reports.

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/provider_source.h>

#include "client/resolved_providers.h"

namespace wheelrpc::test {

inline boost::asio::ip::tcp::endpoint make_endpoint(const char* address, unsigned short port) {
  return {boost::asio::ip::make_address(address), port};
}

/// A DNS the test controls: host -> addresses or an error. Counts lookups.
/// Answers inline, or holds them until release() when `hold` is set.
/// Thread-safe.
class FakeDns {
 public:
  using error_code = boost::system::error_code;
  using tcp = boost::asio::ip::tcp;

  void set(const std::string& host, std::vector<std::string> addresses) {
    std::lock_guard l(mu_);
    answers_[host] = Answer{{}, std::move(addresses)};
  }
  void fail(const std::string& host, error_code ec = boost::asio::error::host_not_found) {
    std::lock_guard l(mu_);
    answers_[host] = Answer{ec, {}};
  }
  void hold(bool on) {
    std::lock_guard l(mu_);
    hold_ = on;
  }
  /// Completes the held lookups; returns how many.
  std::size_t release() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard l(mu_);
      held.swap(held_);
    }
    for (auto& h : held) h();
    return held.size();
  }
  int calls(const std::string& host) const {
    std::lock_guard l(mu_);
    auto it = calls_.find(host);
    return it == calls_.end() ? 0 : it->second;
  }

  rpc::detail::ResolveFunction function() {
    return [this](std::string host, std::string port, rpc::detail::ResolveDone done) {
      std::unique_lock l(mu_);
      ++calls_[host];
      auto it = answers_.find(host);
      error_code ec = boost::asio::error::host_not_found;
      std::vector<tcp::endpoint> eps;
      if (it != answers_.end()) {
        ec = it->second.ec;
        for (const auto& a : it->second.addresses)
          eps.emplace_back(boost::asio::ip::make_address(a), static_cast<unsigned short>(std::stoi(port)));
      }
      auto complete = [done = std::move(done), ec, eps] { done(ec, eps); };
      if (hold_) {
        held_.push_back(std::move(complete));
        return;
      }
      l.unlock();
      complete();
    };
  }

 private:
  struct Answer {
    error_code ec;
    std::vector<std::string> addresses;
  };
  mutable std::mutex mu_;
  std::map<std::string, Answer> answers_;
  std::map<std::string, int> calls_;
  bool hold_ = false;
  std::vector<std::function<void()>> held_;
};

/// Records every report. Thread-safe.
class ProviderRecorder {
 public:
  using error_code = boost::system::error_code;
  using tcp = boost::asio::ip::tcp;

  struct Report {
    error_code ec;
    std::vector<tcp::endpoint> endpoints;
    std::string why;
  };
  rpc::ProviderSource::Listener listener() {
    return [this](error_code ec, std::vector<tcp::endpoint> eps, std::string why) {
      std::lock_guard l(mu_);
      reports_.push_back(Report{ec, std::move(eps), std::move(why)});
    };
  }
  std::size_t count() const {
    std::lock_guard l(mu_);
    return reports_.size();
  }
  Report last() const {
    std::lock_guard l(mu_);
    return reports_.empty() ? Report{} : reports_.back();
  }

 private:
  mutable std::mutex mu_;
  std::vector<Report> reports_;
};

}  // namespace wheelrpc::test
