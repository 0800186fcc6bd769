#include "etcd_client.h"

#include <cassert>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <wheelrpc/registry/errc.h>

#include "log.h"

namespace wheelrpc::registry::detail {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

using RequestHandler = std::function<void(error_code, const std::string&, const std::string&)>;

// One unary POST, tried on each endpoint in turn from the preferred one.
// Lives in shared_ptrs held by its pending operations; everything runs on the
// client's strand.
class UnaryRequest : public std::enable_shared_from_this<UnaryRequest> {
 public:
  UnaryRequest(std::shared_ptr<EtcdClient> client, std::string path, std::string body, RequestHandler handler)
      : client_(std::move(client)),
        path_(std::move(path)),
        body_(std::move(body)),
        handler_(std::move(handler)),
        socket_(client_->strand()),
        resolver_(client_->strand()),
        first_(client_->preferred_endpoint()) {}

  ~UnaryRequest() { deadline_.cancel(); }

  void start() {
    assert(client_->strand().running_in_this_thread());
    next_attempt();
  }

 private:
  const EtcdEndpoint& endpoint() const {
    const auto& eps = client_->endpoints();
    return eps[(first_ + attempt_) % eps.size()];
  }

  void next_attempt() {
    if (attempt_ >= client_->endpoints().size()) {
      const std::size_t n = client_->endpoints().size();
      std::string why = last_why_;
      if (n > 1) why = "all " + std::to_string(n) + " etcd endpoints failed; last: " + why;
      finish(last_ec_, why, {});
      return;
    }
    ++gen_;
    timed_out_ = false;
    socket_ = tcp::socket(client_->strand());
    res_.emplace();
    res_->body_limit(client_->options().max_body);
    buffer_.clear();
    started_ = std::chrono::steady_clock::now();
    arm_deadline();
    resolver_.async_resolve(endpoint().host, std::to_string(endpoint().port),
                            [self = shared_from_this(), gen = gen_](error_code ec, tcp::resolver::results_type r) {
                              self->on_resolve(gen, ec, std::move(r));
                            });
  }

  void arm_deadline() {
    deadline_.cancel();
    std::error_code tec;
    // The timer thread only posts; the socket is touched on the strand.
    deadline_ = client_->timer().new_timeout(
        [w = weak_from_this(), gen = gen_] {
          if (auto self = w.lock()) {
            asio::post(self->client_->strand(), [self, gen] { self->on_deadline(gen); });
          }
        },
        client_->options().request_timeout, tec);
    if (tec) logger()->warn("etcd request {}: no deadline: {}", path_, tec.message());
  }

  void on_deadline(std::uint64_t gen) {
    assert(client_->strand().running_in_this_thread());
    if (gen != gen_ || done_) return;
    timed_out_ = true;
    error_code ignored;
    resolver_.cancel();
    socket_.close(ignored);
  }

  // A failure of this attempt: goes to the next endpoint.
  void attempt_failed(std::string_view phase, error_code ec) {
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
    if (timed_out_) {
      last_ec_ = make_error_code(errc::timeout);
      last_why_ = "etcd " + path_ + " to " + to_string(endpoint()) + ": no answer within " +
                  std::to_string(client_->options().request_timeout.count()) + " ms (in " + std::string(phase) + ")";
    } else if (phase == "connect" && ec == asio::error::connection_refused) {
      // The commonest first-hour mistake (etcd not started, a wrong port):
      // say it plainly.
      last_ec_ = make_error_code(errc::unavailable);
      last_why_ = "etcd at " + to_string(endpoint()) + " refused the connection (" + path_ + ")";
    } else {
      last_ec_ = make_error_code(phase == "read" ? errc::truncated : errc::unavailable);
      last_why_ = "etcd " + path_ + " to " + to_string(endpoint()) + ": " + std::string(phase) + " failed after " +
                  std::to_string(elapsed.count()) + " ms: " + ec.message();
    }
    logger()->debug("attempt={} {}", attempt_ + 1, last_why_);
    error_code ignored;
    socket_.close(ignored);
    ++attempt_;
    next_attempt();
  }

  void on_resolve(std::uint64_t gen, error_code ec, tcp::resolver::results_type results) {
    if (gen != gen_) return;
    if (ec) return attempt_failed("resolve", ec);
    asio::async_connect(socket_, results, [self = shared_from_this(), gen](error_code e, const tcp::endpoint&) {
      self->on_connect(gen, e);
    });
  }

  void on_connect(std::uint64_t gen, error_code ec) {
    if (gen != gen_) return;
    if (ec) return attempt_failed("connect", ec);
    req_ = {};
    req_.method(http::verb::post);
    req_.target(path_);
    req_.version(11);
    req_.set(http::field::host, to_string(endpoint()));
    req_.set(http::field::content_type, "application/json");
    req_.keep_alive(false);
    req_.body() = body_;
    req_.prepare_payload();
    http::async_write(socket_, req_,
                      [self = shared_from_this(), gen](error_code e, std::size_t) { self->on_write(gen, e); });
  }

  void on_write(std::uint64_t gen, error_code ec) {
    if (gen != gen_) return;
    if (ec) return attempt_failed("write", ec);
    http::async_read(socket_, buffer_, *res_,
                     [self = shared_from_this(), gen](error_code e, std::size_t) { self->on_read(gen, e); });
  }

  void on_read(std::uint64_t gen, error_code ec) {
    if (gen != gen_) return;
    if (ec == http::error::body_limit) {
      return finish(make_error_code(errc::bad_response),
                    "etcd " + path_ + " from " + to_string(endpoint()) + ": answer larger than " +
                        std::to_string(client_->options().max_body) + " bytes",
                    {});
    }
    if (ec) return attempt_failed("read", ec);
    deadline_.cancel();
    client_->set_preferred_endpoint((first_ + attempt_) % client_->endpoints().size());
    auto& res = res_->get();
    const unsigned status = res.result_int();
    if (status / 100 == 2) return finish({}, {}, res.body());
    if (auto msg = decode_error_message(res.body())) {
      return finish(make_error_code(errc::etcd_error), "etcd " + path_ + " at " + to_string(endpoint()) + ": " + *msg,
                    res.body());
    }
    std::string excerpt = res.body().substr(0, 120);
    finish(make_error_code(errc::http_error),
           "etcd " + path_ + " at " + to_string(endpoint()) + ": HTTP " + std::to_string(status) + " " +
               std::string(res.reason()) + (excerpt.empty() ? "" : ": " + excerpt),
           res.body());
  }

  void finish(error_code ec, const std::string& why, const std::string& body) {
    if (done_) return;
    done_ = true;
    deadline_.cancel();
    error_code ignored;
    socket_.close(ignored);
    if (ec) logger()->debug("{}", why);
    auto handler = std::move(handler_);
    handler(ec, why, body);
  }

  std::shared_ptr<EtcdClient> client_;
  std::string path_;
  std::string body_;
  RequestHandler handler_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  boost::beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  std::optional<http::response_parser<http::string_body>> res_;
  timer::Timeout deadline_;
  std::size_t first_;
  std::size_t attempt_ = 0;
  std::uint64_t gen_ = 0;  // attempt generation: a stale deadline or handler is ignored
  bool timed_out_ = false;
  bool done_ = false;
  error_code last_ec_ = make_error_code(errc::unavailable);
  std::string last_why_;
  std::chrono::steady_clock::time_point started_;
};

// Decodes a unary answer with `decoder` and hands the result to `handler`.
template <class Result, class Decoder>
RequestHandler decoding(std::function<void(error_code, Result)> handler, Decoder decoder) {
  return [handler = std::move(handler), decoder](error_code ec, const std::string& why, const std::string& body) {
    Result out{};
    if (!ec) {
      std::string decode_why;
      decoder(body, out, ec, decode_why);
      if (ec) logger()->warn("etcd answer rejected: {}", decode_why);
    } else if (ec != make_error_code(errc::etcd_error)) {
      logger()->debug("etcd request failed: {}", why);
    }
    handler(ec, std::move(out));
  };
}

}  // namespace

std::shared_ptr<EtcdClient> EtcdClient::create(Executor ex, timer::Timer& timer, std::vector<EtcdEndpoint> endpoints,
                                               EtcdClientOptions options) {
  if (endpoints.empty()) throw std::invalid_argument("EtcdClient: no etcd endpoint");
  return std::shared_ptr<EtcdClient>(new EtcdClient(std::move(ex), timer, std::move(endpoints), options));
}

EtcdClient::EtcdClient(Executor ex, timer::Timer& timer, std::vector<EtcdEndpoint> endpoints, EtcdClientOptions options)
    : strand_(asio::make_strand(std::move(ex))), timer_(timer), endpoints_(std::move(endpoints)), options_(options) {}

std::size_t EtcdClient::preferred_endpoint() const noexcept {
  assert(strand_.running_in_this_thread());
  return preferred_;
}

void EtcdClient::set_preferred_endpoint(std::size_t i) noexcept {
  assert(strand_.running_in_this_thread());
  preferred_ = i;
}

void EtcdClient::request(std::string path, std::string body, RequestHandler handler) {
  asio::post(strand_, [self = shared_from_this(), path = std::move(path), body = std::move(body),
                       handler = std::move(handler)]() mutable {
    std::make_shared<UnaryRequest>(self, std::move(path), std::move(body), std::move(handler))->start();
  });
}

void EtcdClient::put(std::string key, std::string value, std::int64_t lease,
                     std::function<void(error_code, PutResult)> handler) {
  request("/v3/kv/put", encode_put(key, value, lease), decoding(std::move(handler), decode_put));
}

void EtcdClient::range_prefix(std::string prefix, std::function<void(error_code, RangeResult)> handler) {
  request("/v3/kv/range", encode_range_prefix(prefix), decoding(std::move(handler), decode_range));
}

void EtcdClient::delete_key(std::string key, std::function<void(error_code, DeleteResult)> handler) {
  request("/v3/kv/deleterange", encode_delete(key), decoding(std::move(handler), decode_delete));
}

void EtcdClient::lease_grant(std::chrono::seconds ttl, std::function<void(error_code, LeaseGrantResult)> handler) {
  request("/v3/lease/grant", encode_lease_grant(ttl), decoding(std::move(handler), decode_lease_grant));
}

void EtcdClient::lease_keepalive(std::int64_t id, std::function<void(error_code, KeepAliveResult)> handler) {
  request("/v3/lease/keepalive", encode_lease_id(id), decoding(std::move(handler), decode_keepalive));
}

void EtcdClient::lease_revoke(std::int64_t id, std::function<void(error_code)> handler) {
  request("/v3/lease/revoke", encode_lease_id(id),
          [handler = std::move(handler)](error_code ec, const std::string&, const std::string& body) {
            if (!ec) {
              std::string why;
              decode_empty(body, ec, why);
            }
            handler(ec);
          });
}

}  // namespace wheelrpc::registry::detail
