#include "http_server.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include <boost/asio/socket_base.hpp>
#include <boost/asio/strand.hpp>

#include "http_server_core.h"
#include "http_session.h"
#include "log.h"

namespace wheelrpc::admin::detail {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// After a failed accept (e.g. EMFILE), wait this long before the next one
// rather than spin on the error.
constexpr std::chrono::milliseconds kAcceptRetry{50};
}  // namespace

HttpServerCore::HttpServerCore(asio::any_io_executor ex, timer::Timer& timer, HttpServerOptions options)
    : ex_(std::move(ex)), timer_(timer), options_(options), acceptor_(ex_) {
  if (options_.request_timeout <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("HttpServerOptions::request_timeout must be positive");
  }
  if (options_.idle_timeout <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("HttpServerOptions::idle_timeout must be positive");
  }
}

void HttpServerCore::add(std::string method, std::string path, Handler h, bool prefix) {
  if (!h) throw std::invalid_argument("admin HTTP route " + method + " " + path + " has an empty handler");
  common::LockGuard lock(routes_mu_);
  (prefix ? prefixes_ : exact_)[std::move(path)][std::move(method)] = std::move(h);
}

HttpServerCore::Routed HttpServerCore::route(const HttpRequest& req) const {
  common::SharedLock lock(routes_mu_);
  const MethodMap* methods = nullptr;
  if (const auto it = exact_.find(req.path); it != exact_.end()) {
    methods = &it->second;
  } else {
    std::size_t best = 0;
    for (const auto& [prefix, m] : prefixes_) {
      if (req.path.starts_with(prefix) && (methods == nullptr || prefix.size() > best)) {
        methods = &m;
        best = prefix.size();
      }
    }
  }
  Routed r;
  if (methods == nullptr) {
    r.refusal = HttpResponse::text(404, "not found");
    return r;
  }
  if (const auto it = methods->find(req.method); it != methods->end()) {
    r.handler = it->second;
    return r;
  }
  const auto get = methods->find("GET");
  if (req.method == "HEAD" && get != methods->end()) {
    r.handler = get->second;
    r.head = true;
    return r;
  }
  std::string allow;
  for (const auto& [method, h] : *methods) {
    if (!allow.empty()) allow += ", ";
    allow += method;
    if (method == "GET" && !methods->contains("HEAD")) allow += ", HEAD";
  }
  r.refusal = HttpResponse::text(405, "method not allowed");
  r.refusal->headers.emplace_back("Allow", std::move(allow));
  return r;
}

error_code HttpServerCore::listen(const asio::ip::tcp::endpoint& ep) {
  common::LockGuard lock(mu_);
  if (stopped_) return asio::error::operation_aborted;
  if (listening_) return asio::error::already_open;
  error_code ec;
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) endpoint_ = acceptor_.local_endpoint(ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    // Returned, so the caller reports it (not said twice).
    logger()->debug("admin HTTP server cannot listen on {}:{}: {}", ep.address().to_string(), ep.port(), ec.message());
    return ec;
  }
  listening_ = true;
  logger()->info("admin HTTP server listening on {}:{}", endpoint_.address().to_string(), endpoint_.port());
  accept_locked();
  return {};
}

asio::ip::tcp::endpoint HttpServerCore::local_endpoint() const {
  common::LockGuard lock(mu_);
  return endpoint_;
}

void HttpServerCore::accept_locked() {
  acceptor_.async_accept(asio::make_strand(ex_),
                         [self = shared_from_this()](const error_code& ec, asio::ip::tcp::socket socket) {
                           self->on_accept(ec, std::move(socket));
                         });
}

void HttpServerCore::on_accept(const error_code& ec, asio::ip::tcp::socket socket) {
  std::shared_ptr<HttpSession> session;
  bool reject = false;
  {
    common::LockGuard lock(mu_);
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      logger()->warn("admin HTTP server accept failed: {}; retrying in {} ms", ec.message(), kAcceptRetry.count());
      // The timer's task only posts the next accept to the executor.
      std::error_code tec;
      accept_retry_ = timer_.new_timeout(
          [weak = weak_from_this()] {
            const auto self = weak.lock();
            if (!self) return;
            self->post_if_running(self->ex_, [self] {
              common::LockGuard l(self->mu_);
              if (!self->stopped_) self->accept_locked();
            });
          },
          kAcceptRetry, tec);
      if (tec) logger()->error("admin HTTP server stops accepting: cannot schedule a retry: {}", tec.message());
      return;
    }
    accepted_.fetch_add(1, std::memory_order_relaxed);
    reject = open_ >= options_.max_connections;
    if (reject) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++open_;
    }
    const std::uint64_t id = next_id_++;
    session = std::make_shared<HttpSession>(id, std::move(socket), shared_from_this(), reject);
    sessions_.emplace(id, Entry{session, {}});
    accept_locked();
  }
  if (reject) {
    logger()->warn("conn={} admin HTTP connection refused: too many admin connections (limit {})", session->id(),
                   options_.max_connections);
  }
  session->start();
}

void HttpServerCore::disarm(std::uint64_t id) {
  common::LockGuard lock(mu_);
  if (stopped_) return;
  if (const auto it = sessions_.find(id); it != sessions_.end()) it->second.timeout.cancel();
}

void HttpServerCore::forget(std::uint64_t id, bool counted) {
  std::shared_ptr<HttpSession> last;  // released after the lock
  common::LockGuard lock(mu_);
  if (stopped_) return;  // stop() cancelled and dropped every entry
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  it->second.timeout.cancel();
  last = std::move(it->second.session);
  sessions_.erase(it);
  if (counted) --open_;
}

void HttpServerCore::stop() {
  std::vector<std::shared_ptr<HttpSession>> sessions;
  {
    common::LockGuard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
    sessions.reserve(sessions_.size());
    for (auto& [id, entry] : sessions_) {
      entry.timeout.cancel();
      sessions.push_back(std::move(entry.session));
    }
    sessions_.clear();
    open_ = 0;
  }
  if (!sessions.empty()) logger()->debug("admin HTTP server stopping: closing {} connections", sessions.size());
  for (const auto& s : sessions) s->close_soon();
}

HttpServer::Stats HttpServerCore::stats() const {
  HttpServer::Stats s;
  s.accepted = accepted_.load(std::memory_order_relaxed);
  s.rejected_connections = rejected_.load(std::memory_order_relaxed);
  s.requests = requests_.load(std::memory_order_relaxed);
  s.bad_requests = bad_requests_.load(std::memory_order_relaxed);
  s.timeouts = timeouts_.load(std::memory_order_relaxed);
  common::LockGuard lock(mu_);
  s.open = open_;
  return s;
}

HttpServer::HttpServer(asio::any_io_executor ex, timer::Timer& timer, HttpServerOptions options)
    : core_(std::make_shared<HttpServerCore>(std::move(ex), timer, options)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::add(std::string method, std::string path, Handler h) {
  core_->add(std::move(method), std::move(path), std::move(h), false);
}

void HttpServer::add_prefix(std::string method, std::string prefix, Handler h) {
  core_->add(std::move(method), std::move(prefix), std::move(h), true);
}

error_code HttpServer::listen(const asio::ip::tcp::endpoint& ep) { return core_->listen(ep); }

asio::ip::tcp::endpoint HttpServer::local_endpoint() const { return core_->local_endpoint(); }

void HttpServer::stop() { core_->stop(); }

HttpServer::Stats HttpServer::stats() const { return core_->stats(); }

}  // namespace wheelrpc::admin::detail
