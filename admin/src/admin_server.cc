#include <wheelrpc/admin/admin_server.h>

#include <stdexcept>

#include <boost/asio/post.hpp>
#include <boost/json/serialize.hpp>

#include <wheelrpc/admin/exposition.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/timer/hashed_wheel_timer.h>

#include "admin_core.h"
#include "log.h"
#include "pages.h"
#include "plain_json.h"

namespace wheelrpc::admin {
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using detail::HttpRequest;
using detail::HttpResponse;
using detail::Reply;

namespace {

constexpr std::chrono::seconds kSampleEvery{1};
constexpr std::size_t kKeptSamples = 11;  // now and the 10 seconds before

detail::HttpServerOptions http_options(const AdminOptions& o) {
  detail::HttpServerOptions h;
  h.max_connections = o.max_connections;
  h.max_body_bytes = o.max_body_bytes;
  h.max_header_bytes = o.max_header_bytes;
  h.request_timeout = o.request_timeout;
  return h;
}

}  // namespace

HttpResponse json_response(unsigned status, const json::value& v) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = detail::plain_json(v);  // 50, not 5E1
  r.body += '\n';
  return r;
}

namespace {

HttpResponse page(std::string_view html) {
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body.assign(html);
  r.headers.emplace_back("Content-Security-Policy", std::string(detail::pages_content_security_policy()));
  return r;
}

bool wants_json(const HttpRequest& req) { return req.query_param("format") == "json"; }

}  // namespace

AdminCore::AdminCore(asio::any_io_executor ex, timer::HashedWheelTimer& timer, AdminOptions options)
    : ex_(std::move(ex)),
      timer_(timer),
      options_(std::move(options)),
      http_(std::make_unique<detail::HttpServer>(ex_, timer_, http_options(options_))) {
  if (options_.gateway_timeout.count() <= 0) throw std::invalid_argument("AdminOptions::gateway_timeout must be > 0");
}

void AdminCore::add_client(std::string name, rpc::Client& client) {
  for (const auto& c : clients_) {
    if (c.name == name)
      throw std::invalid_argument("AdminServer::add_client: a client named '" + name + "' was added already");
  }
  clients_.push_back({std::move(name), &client});
}

error_code AdminCore::listen(unsigned short port) {
  error_code ec;
  const auto address = asio::ip::make_address(options_.address, ec);
  if (ec) return ec;
  if (!address.is_loopback() && !options_.allow_remote) {
    detail::logger()->error("admin: refusing to bind {}: not a loopback address (set AdminOptions::allow_remote)",
                            options_.address);
    return make_error_code(boost::system::errc::invalid_argument);
  }
  add_routes();
  if ((ec = http_->listen({address, port}))) return ec;
  sample();  // the first sample now; then every second
  return {};
}

void AdminCore::stop() {
  timer::Timeout sample;  // cancelled outside the lock
  {
    common::LockGuard lock(mu_);
    stopped_ = true;
    sample = std::move(sample_timeout_);
  }
  sample.cancel();
  http_->stop();
}

void AdminCore::schedule_sample() {
  std::error_code ec;
  auto t = timer_.new_timeout(
      [weak = weak_from_this(), ex = ex_] {
        // The timer's worker only posts: sampling reads every source.
        asio::post(ex, [weak] {
          if (auto self = weak.lock()) self->sample();
        });
      },
      kSampleEvery, ec);
  common::LockGuard lock(mu_);
  if (stopped_) {
    t.cancel();
    return;
  }
  sample_timeout_ = std::move(t);
}

void AdminCore::sample() {
  std::vector<std::pair<std::string, std::vector<rpc::MethodStats>>> now;
  if (server_) now.emplace_back("server", server_->method_stats());
  for (const auto& c : clients_) now.emplace_back("client " + c.name, c.client->method_stats());
  const auto t = timer_.stats();
  {
    common::LockGuard lock(mu_);
    if (stopped_) return;
    for (auto& [owner, methods] : now) {
      for (auto& m : methods) {
        auto& h = history_[owner + '\n' + m.method];
        h.push_back(std::move(m.latency_fine));
        while (h.size() > kKeptSamples) h.pop_front();
      }
    }
    timer_history_.push_back({t.pending, t.wakeups});
    while (timer_history_.size() > kKeptSamples) timer_history_.pop_front();
  }
  schedule_sample();
}

void AdminCore::add_routes() {
  auto self = weak_from_this();
  // Every route holds the core weakly: the HttpServer is stopped before the core goes.
  auto route = [self](auto fn) {
    return [self, fn](HttpRequest& req, Reply reply) {
      auto core = self.lock();
      if (!core) {
        reply(HttpResponse::text(503, "admin server stopped", true));
        return;
      }
      fn(*core, req, std::move(reply));
    };
  };
  http_->add("GET", "/", route([](AdminCore&, HttpRequest&, Reply reply) {
               reply(HttpResponse::text(
                   200,
                   "wheelrpc admin: /status /connections /timeouts /config/effective?method=M /metrics /health /ready; "
                   "POST /offline /online /rpc/METHOD"));
             }));
  http_->add("GET", "/metrics", route([](AdminCore& core, HttpRequest&, Reply reply) {
               HttpResponse r;
               r.content_type = std::string(TextExposition::kContentType);
               r.body = core.metrics_text();
               reply(std::move(r));
             }));
  http_->add("GET", "/status", route([](AdminCore& core, HttpRequest& req, Reply reply) {
               reply(wants_json(req) ? json_response(200, core.status_json()) : page(detail::status_page()));
             }));
  http_->add("GET", "/status.json",
             route([](AdminCore& core, HttpRequest&, Reply reply) { reply(json_response(200, core.status_json())); }));
  http_->add("GET", "/connections", route([](AdminCore& core, HttpRequest& req, Reply reply) {
               reply(wants_json(req) ? json_response(200, core.connections_json()) : page(detail::connections_page()));
             }));
  http_->add("GET", "/connections.json", route([](AdminCore& core, HttpRequest&, Reply reply) {
               reply(json_response(200, core.connections_json()));
             }));
  http_->add("GET", "/timeouts", route([](AdminCore& core, HttpRequest& req, Reply reply) {
               reply(wants_json(req) ? json_response(200, core.timeouts_json()) : page(detail::timeouts_page()));
             }));
  http_->add("GET", "/timeouts.json", route([](AdminCore& core, HttpRequest&, Reply reply) {
               reply(json_response(200, core.timeouts_json()));
             }));
  http_->add("GET", "/config/effective", route([](AdminCore& core, HttpRequest& req, Reply reply) {
               const auto method = req.query_param("method");
               if (method.empty()) {
                 reply(HttpResponse::text(400, "GET /config/effective?method=NAME: which method?"));
                 return;
               }
               reply(wants_json(req) || req.query_param("format") == "json"
                         ? json_response(200, core.effective_config_json(method))
                         : page(detail::config_page()));
             }));
  http_->add("GET", "/config/effective.json", route([](AdminCore& core, HttpRequest& req, Reply reply) {
               const auto method = req.query_param("method");
               if (method.empty()) {
                 reply(HttpResponse::text(400, "GET /config/effective.json?method=NAME: which method?"));
                 return;
               }
               reply(json_response(200, core.effective_config_json(method)));
             }));
  http_->add("GET", "/health", route([](AdminCore& core, HttpRequest&, Reply reply) {
               if (!core.server_) {
                 reply(HttpResponse::text(200, "OK"));  // a client-only process: up while it answers
                 return;
               }
               const auto s = core.server_->state();
               if (s.serving()) {
                 reply(HttpResponse::text(200, "OK"));
               } else {
                 reply(HttpResponse::text(503, !s.listening ? "not listening" : s.draining ? "draining" : "offline"));
               }
             }));
  http_->add("GET", "/ready", route([](AdminCore& core, HttpRequest&, Reply reply) {
               if (!core.server_) {
                 reply(HttpResponse::text(200, "ready"));
                 return;
               }
               const auto s = core.server_->state();
               if (s.ready()) {
                 reply(HttpResponse::text(200, "ready"));
               } else {
                 reply(HttpResponse::text(503, !s.listening ? "not listening"
                                               : s.draining ? "draining"
                                               : !s.online  ? "offline"
                                                            : "not registered yet"));
               }
             }));
  auto qos = [route](bool online) {
    return route([online](AdminCore& core, HttpRequest&, Reply reply) {
      if (!core.server_) {
        reply(HttpResponse::text(404, "no server in this process"));
        return;
      }
      core.server_->set_online(online);
      detail::logger()->info("admin: server set {} over HTTP", online ? "online" : "offline");
      reply(HttpResponse::text(200, online ? "online" : "offline"));
    });
  };
  http_->add("POST", "/offline", qos(false));
  http_->add("POST", "/online", qos(true));
  http_->add_prefix("POST", "/rpc/",
                    route([](AdminCore& core, HttpRequest& req, Reply reply) { core.gateway(req, std::move(reply)); }));
}

// ---------------------------------------------------------------- AdminServer

AdminServer::AdminServer(asio::any_io_executor ex, timer::HashedWheelTimer& timer, AdminOptions options)
    : core_(std::make_shared<AdminCore>(std::move(ex), timer, std::move(options))) {}
AdminServer::~AdminServer() { stop(); }
void AdminServer::add_server(rpc::Server& server) { core_->add_server(server); }
void AdminServer::add_client(std::string name, rpc::Client& client) { core_->add_client(std::move(name), client); }
void AdminServer::add_section(std::string title, std::function<Values()> values) {
  core_->add_section(std::move(title), std::move(values));
}
void AdminServer::add_metrics(std::function<void(TextExposition&)> write) { core_->add_metrics(std::move(write)); }
error_code AdminServer::listen(unsigned short port) { return core_->listen(port); }
asio::ip::tcp::endpoint AdminServer::local_endpoint() const { return core_->local_endpoint(); }
void AdminServer::stop() { core_->stop(); }

}  // namespace wheelrpc::admin
