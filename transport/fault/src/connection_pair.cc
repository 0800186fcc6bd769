#include "connection_pair.h"

#include <utility>
#include <variant>

#include <boost/asio/socket_base.hpp>

#include "log.h"
#include "proxy_state.h"

namespace wheelrpc::fault::detail {
namespace asio = boost::asio;
using boost::system::error_code;

ConnectionPair::ConnectionPair(std::uint64_t id, asio::ip::tcp::socket client, std::shared_ptr<ProxyState> state)
    : id_(id),
      state_(std::move(state)),
      ex_(client.get_executor()),
      client_(std::move(client)),
      server_(ex_),
      connect_timer_(ex_),
      upstream_(*this, Stream::upstream, client_, server_),
      downstream_(*this, Stream::downstream, server_, client_) {}

Counters& ConnectionPair::counters() { return state_->counters(); }
const FaultProxyOptions& ConnectionPair::options() const { return state_->options(); }

void ConnectionPair::start(const std::vector<ToxicEntry>& toxics) {
  for (const auto& t : toxics) add_toxic(t);
  if (closed_) return;  // reset_peer with timeout 0: never connect upstream
  error_code ignored;
  client_.set_option(asio::ip::tcp::no_delay(true), ignored);
  connect_timer_.expires_after(options().connect_timeout);
  connect_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->closed_ || self->connected_) return;
    bump(self->counters().connect_failures);
    logger()->debug("conn={} connecting upstream timed out", self->id_);
    self->close();
  });
  server_.async_connect(state_->upstream(),
                        [self = shared_from_this()](const error_code& ec) { self->on_connect(ec); });
}

void ConnectionPair::on_connect(const error_code& ec) {
  if (closed_) return;
  connect_timer_.cancel();
  if (ec) {
    bump(counters().connect_failures);
    logger()->debug("conn={} cannot connect upstream: {}", id_, ec.message());
    close();
    return;
  }
  connected_ = true;
  error_code ignored;
  server_.set_option(asio::ip::tcp::no_delay(true), ignored);
  upstream_.start();
  downstream_.start();
}

void ConnectionPair::add_toxic(const ToxicEntry& entry) {
  if (closed_) return;
  if (std::holds_alternative<ResetPeer>(entry.toxic.attributes)) {
    schedule_reset(entry);
    return;
  }
  const Stream s = entry.toxic.stream;
  if (s == Stream::upstream || s == Stream::both) upstream_.add_stage(make_stage(upstream_, entry));
  if (s == Stream::downstream || s == Stream::both) downstream_.add_stage(make_stage(downstream_, entry));
}

void ConnectionPair::remove_toxic(const std::string& name) {
  if (closed_) return;
  if (const auto it = reset_timers_.find(name); it != reset_timers_.end()) {
    it->second->cancel();
    reset_timers_.erase(it);
    return;
  }
  upstream_.remove_stage(name);
  downstream_.remove_stage(name);
}

void ConnectionPair::schedule_reset(const ToxicEntry& entry) {
  const auto timeout = std::get<ResetPeer>(entry.toxic.attributes).timeout;
  if (timeout.count() <= 0) {
    apply_reset(entry);
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(ex_, timeout);
  reset_timers_[entry.toxic.name] = timer;
  // The timer is compared on expiry: a removed (or removed and re-added)
  // toxic's stale wait does nothing.
  timer->async_wait([self = shared_from_this(), timer, entry](const error_code& ec) {
    if (ec || self->closed_) return;
    const auto it = self->reset_timers_.find(entry.toxic.name);
    if (it == self->reset_timers_.end() || it->second != timer) return;
    self->reset_timers_.erase(it);
    self->apply_reset(entry);
  });
}

void ConnectionPair::apply_reset(const ToxicEntry& entry) {
  if (closed_) return;
  bump(*entry.applied);
  bump(counters().applied);
  bump(counters().resets);
  logger()->debug("conn={} reset by toxic {}", id_, entry.toxic.name);
  reset();
}

void ConnectionPair::on_pipe_finished() {
  if (upstream_.finished() && downstream_.finished()) close();
}

void ConnectionPair::on_limit_reached() {
  if (closed_) return;
  bump(counters().limit_closes);
  close();
}

void ConnectionPair::on_pipe_error(Stream direction, const error_code& ec) {
  if (closed_) return;
  logger()->debug("conn={} {} error: {}", id_, stream_name(direction), ec.message());
  // Pass the failure on as a reset: a peer that reset its side should look
  // reset from the other side too.
  reset();
}

void ConnectionPair::close() { finish(false); }
void ConnectionPair::reset() { finish(true); }

void ConnectionPair::finish(bool abortive) {
  if (closed_) return;
  closed_ = true;
  connect_timer_.cancel();
  for (auto& [name, timer] : reset_timers_) timer->cancel();
  reset_timers_.clear();
  upstream_.close();
  downstream_.close();
  for (auto* socket : {&client_, &server_}) {
    if (!socket->is_open()) continue;
    error_code ignored;
    if (abortive) {
      socket->set_option(asio::socket_base::linger(true, 0), ignored);
    } else {
      socket->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    }
    socket->close(ignored);
  }
  state_->counters().active.fetch_sub(1, std::memory_order_relaxed);
  state_->forget(id_);
}

}  // namespace wheelrpc::fault::detail
