#pragma once
// The engine behind AdminServer: what it shows (a Server, Clients, the
// timer), the once-a-second samples behind "last 10 s", and the renderers of
// each endpoint. Renderers run on the HTTP sessions' strands and read the
// sources through their thread-safe snapshot methods; the samples are
// guarded by `mu_`.

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <wheelrpc/admin/admin_server.h>
#include <wheelrpc/common/mutex.h>
#include <wheelrpc/rpc/introspection.h>
#include <wheelrpc/timer/timeout.h>

#include "http_server.h"

namespace wheelrpc::admin {

/// Adds `b`'s counts to `a`: one method's payloads across clients, or a
/// side's methods summed.
inline void add_traffic(rpc::PayloadTraffic& a, const rpc::PayloadTraffic& b) noexcept {
  a.messages += b.messages;
  a.compressed += b.compressed;
  a.bytes += b.bytes;
  a.wire_bytes += b.wire_bytes;
}

/// A JSON answer: `v` with plain numbers (50, not 5E1) and a newline.
detail::HttpResponse json_response(unsigned status, const boost::json::value& v);

class AdminCore : public std::enable_shared_from_this<AdminCore> {
 public:
  AdminCore(boost::asio::any_io_executor ex, timer::HashedWheelTimer& timer, AdminOptions options);

  void add_server(rpc::Server& server) { server_ = &server; }
  void add_client(std::string name, rpc::Client& client);
  void add_section(std::string title, std::function<AdminServer::Values()> values) {
    sections_.emplace_back(std::move(title), std::move(values));
  }
  void add_metrics(std::function<void(TextExposition&)> write) { metrics_.push_back(std::move(write)); }
  boost::system::error_code listen(unsigned short port);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return http_->local_endpoint(); }
  void stop();

  // ---- renderers (any thread)
  std::string metrics_text() const;
  boost::json::object status_json() const;
  boost::json::object connections_json() const;
  boost::json::object timeouts_json() const;
  /// GET /config/effective?method=M (admin_config.cc).
  boost::json::object effective_config_json(const std::string& method) const;

  /// Takes a sample now (the sampling task posts this every second).
  void sample();

 private:
  struct NamedClient {
    std::string name;
    rpc::Client* client;
  };
  /// One method's fine latency histograms, a second apart, oldest first.
  using History = std::deque<rpc::LatencyHistogram>;

  void add_routes();
  void schedule_sample();
  /// POST /rpc/METHOD (admin_gateway.cc).
  void gateway(detail::HttpRequest& req, detail::Reply reply);
  boost::json::array methods_json(const std::vector<rpc::MethodStats>& methods, const std::string& owner,
                                  bool server_side) const;

  boost::asio::any_io_executor ex_;
  timer::HashedWheelTimer& timer_;
  const AdminOptions options_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<detail::HttpServer> http_;
  rpc::Server* server_ = nullptr;
  std::vector<NamedClient> clients_;
  std::vector<std::pair<std::string, std::function<AdminServer::Values()>>> sections_;
  std::vector<std::function<void(TextExposition&)>> metrics_;

  mutable common::Mutex mu_;
  bool stopped_ WHEELRPC_GUARDED_BY(mu_) = false;
  timer::Timeout sample_timeout_ WHEELRPC_GUARDED_BY(mu_);
  std::map<std::string, History> history_ WHEELRPC_GUARDED_BY(mu_);  // key: owner + '\n' + method
  struct TimerPoint {
    std::uint64_t pending = 0, wakeups = 0;
  };
  std::deque<TimerPoint> timer_history_ WHEELRPC_GUARDED_BY(mu_);
};

}  // namespace wheelrpc::admin
