#include "http_session.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <exception>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

#include "http_server_core.h"
#include "log.h"

namespace wheelrpc::admin::detail {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// After a response that closes the connection, the session shuts down its
// sending side and reads until the client closes, so that a request still in
// flight does not turn the close into a reset that destroys the response
// before the client reads it. Bounded in time and bytes.
constexpr std::chrono::milliseconds kMaxLinger{2000};
constexpr std::size_t kMaxLingerBytes = 1 << 20;

// The timer's task: it only decides that something expired. It holds the
// server weakly and names the session by id; the core posts to the session's
// strand, unless the session is closed or the server stopped.
struct SessionTimeoutTask {
  std::weak_ptr<HttpServerCore> core;
  std::uint64_t id;
  std::uint64_t seq;
  void operator()() const {
    if (const auto c = core.lock()) c->post_to_session(id, [n = seq](HttpSession& s) { s.on_timeout(n); });
  }
};

// Shared by the copies of one Reply: the first call wins; if none happens
// before the last copy goes, the request is answered 500. Like the timer's
// task, it names the session by id.
struct ReplyState {
  std::weak_ptr<HttpServerCore> core;
  std::uint64_t id;
  std::uint64_t seq;
  std::atomic<bool> done{false};

  ReplyState(std::weak_ptr<HttpServerCore> c, std::uint64_t i, std::uint64_t n) : core(std::move(c)), id(i), seq(n) {}
  ReplyState(const ReplyState&) = delete;
  ReplyState& operator=(const ReplyState&) = delete;
  ~ReplyState() {
    if (!done.load(std::memory_order_acquire)) send(HttpResponse::text(500, "the handler dropped its reply"));
  }
  void reply(HttpResponse res) {
    if (done.exchange(true, std::memory_order_acq_rel)) {
      logger()->warn("conn={} admin HTTP handler replied twice to one request; the later reply is dropped", id);
      return;
    }
    send(std::move(res));
  }
  void send(HttpResponse res) {
    if (const auto c = core.lock()) {
      c->post_to_session(id, [n = seq, r = std::move(res)](HttpSession& s) mutable { s.on_reply(n, std::move(r)); });
    }
  }
};

bool valid_header(const std::string& name, const std::string& value) {
  if (name.empty()) return false;
  auto bad = [](char c) { return c == '\r' || c == '\n' || c == '\0'; };
  if (std::any_of(name.begin(), name.end(), [&](char c) { return bad(c) || c == ':' || c == ' '; })) return false;
  if (std::any_of(value.begin(), value.end(), bad)) return false;
  const http::field f = http::string_to_field(name);
  return f != http::field::content_length && f != http::field::transfer_encoding && f != http::field::connection;
}

std::string endpoint_text(const asio::ip::tcp::socket& s) {
  error_code ec;
  const auto ep = s.remote_endpoint(ec);
  if (ec) return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace

HttpSession::HttpSession(std::uint64_t id, asio::ip::tcp::socket socket, std::shared_ptr<HttpServerCore> core,
                         bool reject)
    : id_(id),
      core_(std::move(core)),
      reject_(reject),
      strand_(socket.get_executor()),
      socket_(std::move(socket)),
      peer_(endpoint_text(socket_)),
      parser_(core_->options()),
      idle_limit_(core_->options().request_timeout) {}

HttpSession::~HttpSession() = default;

bool HttpSession::on_strand() const {
  const auto* s = strand_.target<asio::strand<asio::any_io_executor>>();
  return s != nullptr && s->running_in_this_thread();
}

void HttpSession::start() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->phase_ == Phase::closed) return;
    if (self->reject_) {
      self->refused_ = true;
      self->write_response(HttpResponse::text(503, "too many admin connections", true));
      return;
    }
    error_code ignored;
    self->socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    self->process_buffer();
  });
}

void HttpSession::close_soon() {
  asio::post(strand_, [self = shared_from_this()] { self->close(); });
}

void HttpSession::process_buffer() {
  assert(on_strand());
  if (in_.empty()) {
    // Nothing of the next request yet: it may take idle_limit_ to start.
    if (!request_started_) arm(TimerKind::idle, idle_limit_);
    do_read();
    return;
  }
  if (!request_started_) {
    request_started_ = true;
    arm(TimerKind::request, core_->options().request_timeout);
  }
  ParseResult r = parser_.feed(in_);
  in_.erase(0, r.consumed);
  switch (r.status) {
    case ParseStatus::need_more:
      if (r.expect_continue) {
        write_continue();
      } else {
        do_read();
      }
      return;
    case ParseStatus::error:
      core_->count_bad_request();
      logger()->debug("conn={} peer={} admin HTTP request refused ({}): {}", id_, peer_, r.http_status, r.reason);
      keep_alive_ = false;
      refused_ = true;
      write_response(HttpResponse::text(r.http_status, r.reason, true));
      return;
    case ParseStatus::complete:
      disarm();
      handle(std::move(r.request));
      return;
  }
}

void HttpSession::do_read() {
  assert(on_strand());
  if (reading_) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buf_),
                          [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_read(ec, n); });
}

void HttpSession::write_continue() {
  assert(on_strand());
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  writing_continue_ = true;
  asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                    [self = shared_from_this()](const error_code& ec, std::size_t) {
                      self->writing_continue_ = false;
                      if (self->phase_ == Phase::closed) return;
                      if (ec) {
                        self->close();
                        return;
                      }
                      self->do_read();
                    });
}

void HttpSession::on_read(const error_code& ec, std::size_t n) {
  assert(on_strand());
  reading_ = false;
  if (phase_ == Phase::closed) return;
  if (phase_ == Phase::lingering) {
    lingered_ += n;
    if (ec || lingered_ > kMaxLingerBytes) {
      close();
    } else {
      do_read();
    }
    return;
  }
  if (ec) {
    if (request_started_) {
      logger()->debug("conn={} peer={} admin HTTP connection ended inside a request: {}", id_, peer_, ec.message());
    }
    close();
    return;
  }
  // Bytes read while a 408 is being written are dropped: the connection closes.
  if (phase_ != Phase::reading) return;
  in_.append(read_buf_.data(), n);
  process_buffer();
}

void HttpSession::handle(HttpRequest req) {
  assert(on_strand());
  phase_ = Phase::handling;
  ++request_seq_;
  core_->count_request();
  req_ = std::move(req);
  keep_alive_ = req_.keep_alive;
  version_ = req_.version;
  HttpServerCore::Routed routed = core_->route(req_);
  head_ = routed.head || req_.method == "HEAD";  // no answer to a HEAD has a body, a 404 neither
  if (routed.refusal) {
    write_response(std::move(*routed.refusal));
    return;
  }
  const auto state = std::make_shared<ReplyState>(core_, id_, request_seq_);
  try {
    routed.handler(req_, [state](HttpResponse res) { state->reply(std::move(res)); });
  } catch (const std::exception& e) {
    logger()->error("conn={} peer={} admin HTTP handler for {} {} threw: {}", id_, peer_, req_.method, req_.path,
                    e.what());
    if (!state->done.exchange(true)) write_response(HttpResponse::text(500, "internal error in the handler"));
  } catch (...) {
    logger()->error("conn={} peer={} admin HTTP handler for {} {} threw a non-std exception", id_, peer_, req_.method,
                    req_.path);
    if (!state->done.exchange(true)) write_response(HttpResponse::text(500, "internal error in the handler"));
  }
}

void HttpSession::on_reply(std::uint64_t seq, HttpResponse res) {
  assert(on_strand());
  if (phase_ != Phase::handling || seq != request_seq_) return;  // closed meanwhile, or stale
  write_response(std::move(res));
}

void HttpSession::write_response(HttpResponse res) {
  assert(on_strand());
  phase_ = Phase::writing;
  if (res.status < 100 || res.status > 999) {
    logger()->error("conn={} peer={} admin HTTP handler answered an invalid status {}", id_, peer_, res.status);
    res = HttpResponse::text(500, "invalid status from the handler");
  }
  http::response<http::string_body> m;
  m.result(res.status);
  m.version(version_ == 10 ? 10 : 11);
  m.set(http::field::server, "wheelrpc-admin");
  m.set(http::field::cache_control, "no-store");
  m.set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) {
    if (valid_header(name, value)) {
      m.insert(name, value);
    } else {
      logger()->warn("conn={} peer={} admin HTTP response header '{}' dropped", id_, peer_, name);
    }
  }
  m.content_length(res.body.size());
  if (!head_) m.body() = std::move(res.body);
  close_after_write_ = res.close || !keep_alive_;
  m.keep_alive(!close_after_write_);
  res_ = std::move(m);
  arm(TimerKind::write, core_->options().request_timeout);
  http::async_write(socket_, res_,
                    [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_write(ec); });
}

void HttpSession::on_write(const error_code& ec) {
  assert(on_strand());
  if (phase_ == Phase::closed) return;
  disarm();
  if (ec) {
    logger()->debug("conn={} peer={} admin HTTP write failed: {}", id_, peer_, ec.message());
    close();
    return;
  }
  if (close_after_write_) {
    // A refused request may still be arriving: linger so that it does not
    // turn our close into a reset. After an answered request the client has
    // no reason to send more; close at once unless it did.
    error_code aec;
    if (refused_ || !in_.empty() || socket_.available(aec) != 0 || aec) {
      linger();
    } else {
      close();
    }
    return;
  }
  phase_ = Phase::reading;
  request_started_ = false;
  idle_limit_ = core_->options().idle_timeout;
  head_ = false;
  req_ = HttpRequest{};
  res_ = {};
  parser_.reset();
  process_buffer();  // a pipelined request may be buffered already
}

void HttpSession::linger() {
  assert(on_strand());
  phase_ = Phase::lingering;
  in_.clear();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  arm(TimerKind::linger, std::min(kMaxLinger, core_->options().request_timeout));
  do_read();  // a read still outstanding (after a 408) goes on instead
}

void HttpSession::on_timeout(std::uint64_t seq) {
  assert(on_strand());
  if (phase_ == Phase::closed || seq != timer_seq_) return;
  switch (timer_kind_) {
    case TimerKind::none: return;
    case TimerKind::idle:
      logger()->debug("conn={} peer={} admin HTTP connection idle, closed", id_, peer_);
      close();
      return;
    case TimerKind::request:
      if (phase_ != Phase::reading) return;
      if (writing_continue_) {  // not a second write at once: the client does not read anyway
        core_->count_timeout();
        close();
        return;
      }
      core_->count_timeout();
      logger()->info("conn={} peer={} admin HTTP request incomplete after {} ms, answered 408", id_, peer_,
                     core_->options().request_timeout.count());
      keep_alive_ = false;
      refused_ = true;
      write_response(HttpResponse::text(408, "request timeout", true));
      return;
    case TimerKind::write:
      core_->count_timeout();
      logger()->info("conn={} peer={} admin HTTP response not written within {} ms, closed", id_, peer_,
                     core_->options().request_timeout.count());
      close();
      return;
    case TimerKind::linger: close(); return;
  }
}

void HttpSession::arm(TimerKind kind, std::chrono::milliseconds delay) {
  assert(on_strand());
  timer_kind_ = kind;
  core_->arm(id_, SessionTimeoutTask{core_, id_, ++timer_seq_}, delay);
}

void HttpSession::disarm() {
  assert(on_strand());
  timer_kind_ = TimerKind::none;
  ++timer_seq_;
  core_->disarm(id_);
}

void HttpSession::close() {
  assert(on_strand());
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  timer_kind_ = TimerKind::none;
  ++timer_seq_;
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  core_->forget(id_, !reject_);
}

}  // namespace wheelrpc::admin::detail
