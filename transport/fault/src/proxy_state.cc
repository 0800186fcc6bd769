#include "proxy_state.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/strand.hpp>

#include <wheelrpc/transport/connector.h>

#include "connection_pair.h"
#include "log.h"

namespace wheelrpc::fault::detail {
namespace asio = boost::asio;
using boost::system::error_code;

ProxyState::ProxyState(asio::any_io_executor ex, asio::ip::tcp::endpoint listen, asio::ip::tcp::endpoint upstream,
                       FaultProxyOptions options)
    : ex_(std::move(ex)),
      upstream_(std::move(upstream)),
      options_(options),
      listen_(std::move(listen)),
      acceptor_(ex_),
      accept_pause_(ex_) {}

template <class F>
void ProxyState::post_to_pairs_locked(F f) {
  for (const auto& [id, pair] : pairs_) asio::post(pair->executor(), [p = pair, f] { f(*p); });
}

// The acceptor is only ever touched under mu_ (open, async_accept's
// initiation, close), so down() closes it synchronously from any thread: when
// it returns, connects are refused.
error_code ProxyState::open_locked() {
  error_code ec;
  acceptor_.open(listen_.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(listen_, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) listen_ = acceptor_.local_endpoint(ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    // Returned, so the caller reports it (not said twice).
    logger()->debug("fault proxy cannot listen on {}: {}", transport::endpoint_text(listen_), ec.message());
    return ec;
  }
  up_ = true;
  ++generation_;
  accept_locked();
  return {};
}

void ProxyState::close_locked() {
  up_ = false;
  ++generation_;
  error_code ignored;
  acceptor_.close(ignored);
  accept_pause_.cancel();
  // Each pair goes to its close: the registry lets go of it now, so a pair
  // whose close never runs (the executor is destroyed without running again)
  // is freed with the posted handler, sockets closed, instead of living on in
  // a cycle with this state.
  for (auto& [id, pair] : pairs_) {
    const auto pair_ex = pair->executor();  // before the move below
    asio::post(pair_ex, [pair = std::move(pair)] { pair->close(); });
  }
  pairs_.clear();
}

void ProxyState::accept_locked() {
  // Each accepted socket gets a strand of its own: the pair's.
  acceptor_.async_accept(
      asio::any_io_executor(asio::make_strand(ex_)),
      [self = shared_from_this(), gen = generation_](const error_code& ec, asio::ip::tcp::socket socket) {
        self->on_accept(gen, ec, std::move(socket));
      });
}

void ProxyState::on_accept(std::uint64_t generation, const error_code& ec, asio::ip::tcp::socket socket) {
  common::LockGuard lock(mu_);
  // Accepted just before down()/stop(): the socket closes as it goes out of scope.
  if (generation != generation_ || !up_) return;
  if (ec) {
    // E.g. EMFILE: retry shortly rather than spin on the error.
    logger()->warn("fault proxy accept failed: {}", ec.message());
    accept_pause_.expires_after(std::chrono::milliseconds(50));
    accept_pause_.async_wait([self = shared_from_this(), generation](const error_code& wait_ec) {
      if (wait_ec) return;
      common::LockGuard l(self->mu_);
      if (generation == self->generation_ && self->up_) self->accept_locked();
    });
    return;
  }
  bump(counters_.accepted);
  bump(counters_.active);
  const std::uint64_t id = next_pair_id_++;
  auto pair = std::make_shared<ConnectionPair>(id, std::move(socket), shared_from_this());
  pairs_.emplace(id, pair);
  // Posted under the lock with a copy of the toxics: a toxic added or removed
  // after this point reaches the pair by a later post, so it is seen exactly once.
  asio::post(pair->executor(), [pair, toxics = toxics_] { pair->start(toxics); });
  accept_locked();
}

void ProxyState::forget(std::uint64_t id) {
  std::shared_ptr<ConnectionPair> gone;  // released after the unlock
  common::LockGuard lock(mu_);
  if (const auto it = pairs_.find(id); it != pairs_.end()) {
    gone = std::move(it->second);
    pairs_.erase(it);
  }
}

error_code ProxyState::start() {
  common::LockGuard lock(mu_);
  if (stopped_) return errc::stopped;
  if (up_) return {};
  const error_code ec = open_locked();
  if (!ec) started_ = true;
  return ec;
}

void ProxyState::stop() {
  common::LockGuard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  close_locked();
}

void ProxyState::down() {
  common::LockGuard lock(mu_);
  if (up_) close_locked();
}

error_code ProxyState::up() {
  common::LockGuard lock(mu_);
  if (stopped_) return errc::stopped;
  if (!started_) return errc::not_started;
  if (up_) return {};
  return open_locked();
}

bool ProxyState::is_up() const {
  common::LockGuard lock(mu_);
  return up_;
}

asio::ip::tcp::endpoint ProxyState::local_endpoint() const {
  common::LockGuard lock(mu_);
  return listen_;
}

error_code ProxyState::add_toxic(Toxic toxic) {
  if (!validate(toxic).empty()) return errc::invalid_toxic;
  common::LockGuard lock(mu_);
  const bool exists =
      std::any_of(toxics_.begin(), toxics_.end(), [&](const ToxicEntry& e) { return e.toxic.name == toxic.name; });
  if (exists) return errc::toxic_exists;
  ToxicEntry entry{std::move(toxic)};
  toxics_.push_back(entry);
  post_to_pairs_locked([entry](ConnectionPair& p) { p.add_toxic(entry); });
  return {};
}

error_code ProxyState::remove_toxic(std::string_view name) {
  common::LockGuard lock(mu_);
  const auto it =
      std::find_if(toxics_.begin(), toxics_.end(), [&](const ToxicEntry& e) { return e.toxic.name == name; });
  if (it == toxics_.end()) return errc::no_such_toxic;
  toxics_.erase(it);
  post_to_pairs_locked([n = std::string(name)](ConnectionPair& p) { p.remove_toxic(n); });
  return {};
}

std::vector<ToxicInfo> ProxyState::toxics() const {
  common::LockGuard lock(mu_);
  std::vector<ToxicInfo> out;
  out.reserve(toxics_.size());
  for (const auto& e : toxics_) out.push_back(ToxicInfo{e.toxic, read(*e.applied)});
  return out;
}

ProxyStats ProxyState::stats() const {
  ProxyStats s;
  s.connections_accepted = read(counters_.accepted);
  s.connections_active = read(counters_.active);
  s.upstream_connect_failures = read(counters_.connect_failures);
  s.bytes_upstream_in = read(counters_.upstream_in);
  s.bytes_upstream_out = read(counters_.upstream_out);
  s.bytes_downstream_in = read(counters_.downstream_in);
  s.bytes_downstream_out = read(counters_.downstream_out);
  s.bytes_dropped = read(counters_.dropped);
  s.toxics_applied = read(counters_.applied);
  s.resets = read(counters_.resets);
  s.limit_closes = read(counters_.limit_closes);
  s.up = is_up();
  return s;
}

}  // namespace wheelrpc::fault::detail
