// EtcdClient::watch: one streaming POST to /v3/watch whose chunked answer is a
// sequence of newline-separated JSON messages.

#include <cassert>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <wheelrpc/registry/errc.h>

#include "etcd_client.h"
#include "log.h"

namespace wheelrpc::registry::detail {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

using WatchHandler = std::function<void(error_code, const WatchResponse&)>;

// Until etcd confirms the watch (`created`), a failure to connect or a
// timeout moves on to the next endpoint; after that any break is final and
// the caller resumes from the last revision it saw + 1. Runs on the client's
// strand.
class WatchStream final : public EtcdWatch, public std::enable_shared_from_this<WatchStream> {
 public:
  WatchStream(std::shared_ptr<EtcdClient> client, std::string prefix, std::int64_t start_revision, WatchHandler handler)
      : client_(std::move(client)),
        prefix_(std::move(prefix)),
        start_revision_(start_revision),
        handler_(std::move(handler)),
        socket_(client_->strand()),
        resolver_(client_->strand()),
        splitter_(client_->options().max_body),
        first_(0) {}

  ~WatchStream() override { deadline_.cancel(); }

  void start() {
    assert(client_->strand().running_in_this_thread());
    first_ = client_->preferred_endpoint();
    next_attempt();
  }

  void cancel() override {
    asio::post(client_->strand(), [self = shared_from_this()] {
      if (self->done_) return;
      self->cancelled_ = true;
      self->finish(asio::error::operation_aborted, "watch cancelled");
    });
  }

 private:
  const EtcdEndpoint& endpoint() const {
    const auto& eps = client_->endpoints();
    return eps[(first_ + attempt_) % eps.size()];
  }

  void next_attempt() {
    if (done_) return;
    if (attempt_ >= client_->endpoints().size()) return finish(last_ec_, last_why_);
    ++gen_;
    timed_out_ = false;
    socket_ = tcp::socket(client_->strand());
    buffer_.clear();
    parser_.emplace();
    parser_->body_limit(boost::none);
    splitter_ = WatchStreamSplitter(client_->options().max_body);
    chunk_cb_ = [this](std::uint64_t, std::string_view body, error_code& ec) -> std::size_t {
      on_bytes(body, ec);
      return body.size();
    };
    parser_->on_chunk_body(chunk_cb_);
    arm_deadline();
    resolver_.async_resolve(endpoint().host, std::to_string(endpoint().port),
                            [self = shared_from_this(), gen = gen_](error_code ec, tcp::resolver::results_type r) {
                              if (gen != self->gen_ || self->done_) return;
                              if (ec) return self->attempt_failed("resolve", ec);
                              asio::async_connect(self->socket_, r, [self, gen](error_code e, const tcp::endpoint&) {
                                self->on_connect(gen, e);
                              });
                            });
  }

  void arm_deadline() {
    deadline_.cancel();
    std::error_code tec;
    deadline_ = client_->timer().new_timeout(
        [w = weak_from_this(), gen = gen_] {
          if (auto self = w.lock()) {
            asio::post(self->client_->strand(), [self, gen] {
              assert(self->client_->strand().running_in_this_thread());
              if (gen != self->gen_ || self->done_ || self->created_) return;
              self->timed_out_ = true;
              error_code ignored;
              self->resolver_.cancel();
              self->socket_.close(ignored);
            });
          }
        },
        client_->options().request_timeout, tec);
    if (tec) logger()->warn("etcd watch {}: no deadline: {}", prefix_, tec.message());
  }

  void attempt_failed(std::string_view phase, error_code ec) {
    if (timed_out_) {
      last_ec_ = make_error_code(errc::timeout);
      last_why_ = "etcd watch " + prefix_ + " on " + to_string(endpoint()) + ": not created within " +
                  std::to_string(client_->options().request_timeout.count()) + " ms (in " + std::string(phase) + ")";
    } else {
      last_ec_ = make_error_code(errc::unavailable);
      last_why_ = "etcd watch " + prefix_ + " on " + to_string(endpoint()) + ": " + std::string(phase) +
                  " failed: " + ec.message();
    }
    logger()->debug("attempt={} {}", attempt_ + 1, last_why_);
    error_code ignored;
    socket_.close(ignored);
    ++attempt_;
    next_attempt();
  }

  void on_connect(std::uint64_t gen, error_code ec) {
    if (gen != gen_ || done_) return;
    if (ec) return attempt_failed("connect", ec);
    req_ = {};
    req_.method(http::verb::post);
    req_.target("/v3/watch");
    req_.version(11);
    req_.set(http::field::host, to_string(endpoint()));
    req_.set(http::field::content_type, "application/json");
    req_.body() = encode_watch_create(prefix_, start_revision_);
    req_.prepare_payload();
    http::async_write(socket_, req_, [self = shared_from_this(), gen](error_code e, std::size_t) {
      if (gen != self->gen_ || self->done_) return;
      if (e) return self->attempt_failed("write", e);
      http::async_read_header(self->socket_, self->buffer_, *self->parser_,
                              [self, gen](error_code e2, std::size_t) { self->on_header(gen, e2); });
    });
  }

  void on_header(std::uint64_t gen, error_code ec) {
    if (gen != gen_ || done_) return;
    if (ec) return attempt_failed("read header", ec);
    const unsigned status = parser_->get().result_int();
    if (status != 200) {
      return finish(make_error_code(errc::http_error),
                    "etcd watch " + prefix_ + " on " + to_string(endpoint()) + ": HTTP " + std::to_string(status));
    }
    if (!parser_->chunked()) {
      return finish(make_error_code(errc::bad_response),
                    "etcd watch " + prefix_ + " on " + to_string(endpoint()) + ": answer is not a chunked stream");
    }
    read_more(gen);
  }

  void read_more(std::uint64_t gen) {
    http::async_read_some(socket_, buffer_, *parser_,
                          [self = shared_from_this(), gen](error_code ec, std::size_t) { self->on_read(gen, ec); });
  }

  void on_read(std::uint64_t gen, error_code ec) {
    if (gen != gen_ || done_) return;
    if (ec == asio::error::operation_aborted && error_) return finish(error_, error_why_);
    if (ec) {
      if (error_) return finish(error_, error_why_);
      if (!created_) return attempt_failed("read", ec);
      return finish(make_error_code(errc::truncated), "etcd watch " + prefix_ + " on " + to_string(endpoint()) +
                                                          ": stream broke (" + ec.message() + ")" +
                                                          (splitter_.pending() ? " mid-message" : ""));
    }
    if (parser_->is_done()) {
      if (splitter_.pending() != 0) {
        return finish(make_error_code(errc::truncated), "etcd watch " + prefix_ + ": stream ended mid-message");
      }
      return finish(make_error_code(errc::watch_closed), "etcd watch " + prefix_ + ": stream ended");
    }
    read_more(gen);
  }

  // Called by the parser with body bytes; a final condition is recorded in
  // error_ and makes the parser stop (through `ec`).
  void on_bytes(std::string_view bytes, error_code& ec) {
    assert(client_->strand().running_in_this_thread());
    if (done_ || error_) return;
    bool overflow = false;
    for (const auto& line : splitter_.feed(bytes, overflow)) {
      WatchResponse resp;
      error_code dec;
      std::string why;
      decode_watch_response(line, resp, dec, why);
      if (dec) {
        fail_stream(dec, "etcd watch " + prefix_ + ": " + why, ec);
        return;
      }
      if (resp.compact_revision > 0) {
        fail_stream(make_error_code(errc::compacted),
                    "etcd watch " + prefix_ + ": revision " + std::to_string(start_revision_) +
                        " compacted (compact_revision " + std::to_string(resp.compact_revision) + ")",
                    ec);
        return;
      }
      if (resp.canceled) {
        fail_stream(make_error_code(errc::watch_canceled),
                    "etcd watch " + prefix_ + " cancelled by etcd: " + resp.cancel_reason, ec);
        return;
      }
      if (resp.created && !created_) {
        created_ = true;
        deadline_.cancel();
        client_->set_preferred_endpoint((first_ + attempt_) % client_->endpoints().size());
      }
      handler_(error_code{}, resp);
      if (done_) return;
    }
    if (overflow) fail_stream(make_error_code(errc::bad_response), "etcd watch " + prefix_ + ": message too long", ec);
  }

  void fail_stream(error_code e, std::string why, error_code& parser_ec) {
    error_ = e;
    error_why_ = std::move(why);
    parser_ec = asio::error::operation_aborted;
  }

  void finish(error_code ec, const std::string& why) {
    if (done_) return;
    done_ = true;
    deadline_.cancel();
    error_code ignored;
    resolver_.cancel();
    socket_.close(ignored);
    if (ec != asio::error::operation_aborted) logger()->debug("{}", why);
    auto handler = std::move(handler_);
    handler_ = nullptr;
    // chunk_cb_ stays: a read already completed on the socket may still feed
    // the parser after this; on_bytes ignores it once done_ is set.
    handler(ec, WatchResponse{});
  }

  std::shared_ptr<EtcdClient> client_;
  std::string prefix_;
  std::int64_t start_revision_;
  WatchHandler handler_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  boost::beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  std::optional<http::response_parser<http::empty_body>> parser_;
  std::function<std::size_t(std::uint64_t, std::string_view, error_code&)> chunk_cb_;
  WatchStreamSplitter splitter_;
  timer::Timeout deadline_;
  std::size_t first_;
  std::size_t attempt_ = 0;
  std::uint64_t gen_ = 0;
  bool timed_out_ = false;
  bool created_ = false;
  bool cancelled_ = false;
  bool done_ = false;
  error_code error_;
  std::string error_why_;
  error_code last_ec_ = make_error_code(errc::unavailable);
  std::string last_why_;
};

}  // namespace

std::shared_ptr<EtcdWatch> EtcdClient::watch(std::string prefix, std::int64_t start_revision,
                                             std::function<void(error_code, const WatchResponse&)> on_event) {
  auto w = std::make_shared<WatchStream>(shared_from_this(), std::move(prefix), start_revision, std::move(on_event));
  asio::post(strand_, [w] { w->start(); });
  return w;
}

}  // namespace wheelrpc::registry::detail
