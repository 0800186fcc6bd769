// The client's provider set: the first one, the source's reports, providers
// joining, leaving (retired: drained, then closed) and coming back.

#include <algorithm>
#include <cassert>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "client_core.h"
#include "log.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

std::string join_peers(const std::vector<std::shared_ptr<ClientConnection>>& conns) {
  std::string out;
  for (const auto& c : conns) out += (out.empty() ? "" : ",") + c->peer();
  return out;
}

}  // namespace

void ClientCore::make_failback() {
  failback_ = std::make_shared<FailbackQueue>(ex_, timer_, options_.failback,
                                              [weak = weak_from_this()](RetryTimerTask::Delivery d) {
                                                if (auto self = weak.lock()) self->send_failback(std::move(d));
                                              });
}

void ClientCore::init(const std::vector<tcp::endpoint>& servers) {
  make_failback();
  ToClose to_close;  // nothing: no provider leaves the first set
  std::unique_lock set_lock(set_mu_);
  apply_set(set_lock, servers, to_close);
}

void ClientCore::init(std::shared_ptr<ProviderSource> source) {
  make_failback();
  source_ = std::move(source);
  auto empty = std::make_shared<ProviderSet>();
  empty->peers = source_->describe();
  set_.store(std::move(empty));
  source_->start([weak = weak_from_this()](error_code ec, std::vector<tcp::endpoint> endpoints, std::string why) {
    if (auto self = weak.lock()) self->on_source_report(ec, std::move(endpoints), std::move(why));
  });
}

void ClientCore::on_source_report(error_code ec, std::vector<tcp::endpoint> endpoints, std::string why) {
  if (closed_.load(std::memory_order_acquire)) return;
  bool check_waiting = false;
  ToClose to_close;
  {
    std::unique_lock set_lock(set_mu_);
    if (closed_.load(std::memory_order_acquire)) return;
    const auto set = current_set();
    if (ec) {
      // The client keeps what it has; with nothing yet, calls that do not
      // wait for ready learn why at once.
      logger()->warn("provider source {}: {}{}", source_->describe(), why.empty() ? ec.message() : why,
                     set->known ? fmt::format(" (keeping {} providers)", set->conns.size()) : "");
      if (!set->known) {
        auto next = std::make_shared<ProviderSet>(*set);
        next->source_error = source_->describe() + ": " + (why.empty() ? ec.message() : why);
        set_.store(std::move(next));
        check_waiting = true;
      }
    } else if (endpoints.empty() && options_.empty_protection) {
      empty_sets_ignored_.fetch_add(1, std::memory_order_relaxed);
      if (!set->known) {
        auto next = std::make_shared<ProviderSet>(*set);
        next->known = true;  // known to be empty: calls that do not wait for ready fail now
        next->source_error.clear();
        next->empty_why = source_->why_empty();
        set_.store(std::move(next));
        check_waiting = true;
        // Nothing was ever known, so nothing is kept: no alarm about empty
        // protection, just the fact.
        logger()->warn("{}", source_->why_empty());
      } else {
        logger()->warn("{} reported no provider: keeping the last {} (empty protection)", source_->describe(),
                       set->conns.size());
      }
    } else {
      apply_set(set_lock, std::move(endpoints), to_close);
      check_waiting = true;
    }
  }
  close_retired(to_close);
  if (!check_waiting) return;
  // A new set may hold a provider that is ready already (kept, or back
  // before its channel closed): no HELLO will come to send the calls that
  // waited while the set had none ready. The set is published before the
  // drain takes books_mu_, so a call that starts waiting after the drain
  // saw this set (dispatch reads it under books_mu_) and did not wait.
  if (any_slot(*current_set())) dispatch_waiting();
  fail_fast_waiting();
}

SourceState ClientCore::source_state() const {
  const auto set = current_set();
  SourceState s;
  s.source = source_ ? source_->describe() : set->peers;
  s.reported = set->known;
  s.providers = set->conns.size();
  if (!set->known) {
    s.error = set->source_error;
  } else if (set->conns.empty()) {
    s.error = set->empty_why;
  }
  return s;
}

void ClientCore::remember_left(const ClientConnection& conn) {
  // Its task counters live on in the client's totals.
  forgotten_heartbeats_.fetch_add(conn.heartbeat_task->heartbeats_sent(), std::memory_order_relaxed);
  forgotten_idle_closes_.fetch_add(conn.reconnect_task->idle_closes(), std::memory_order_relaxed);
  auto& entry = left_[conn.endpoint()];
  if (entry.peer.empty()) left_order_.push_back(conn.endpoint());
  entry.peer = conn.peer();
  entry.attempts = conn.attempts.load(std::memory_order_relaxed);
  entry.failures = conn.failures.load(std::memory_order_relaxed);
  entry.ok = conn.oks.load(std::memory_order_relaxed);
  entry.cancelled = conn.cancelled.load(std::memory_order_relaxed);
  entry.connect_attempts = conn.connect_attempts.load(std::memory_order_relaxed);
  entry.removed = true;
  if (left_order_.size() > kLeftKept) {
    left_.erase(left_order_.front());
    left_order_.erase(left_order_.begin());
  }
}

std::shared_ptr<ClientConnection> ClientCore::make_connection(const tcp::endpoint& endpoint) {
  auto c = std::make_shared<ClientConnection>(weak_from_this(), endpoint, transport::endpoint_text(endpoint),
                                              options_.reconnect, next_seed_++);
  // Back after it left: its counters go on from where they were.
  if (auto it = left_.find(endpoint); it != left_.end()) {
    c->attempts.store(it->second.attempts, std::memory_order_relaxed);
    c->failures.store(it->second.failures, std::memory_order_relaxed);
    c->oks.store(it->second.ok, std::memory_order_relaxed);
    c->cancelled.store(it->second.cancelled, std::memory_order_relaxed);
    c->connect_attempts.store(it->second.connect_attempts, std::memory_order_relaxed);
    left_.erase(it);
    left_order_.erase(std::find(left_order_.begin(), left_order_.end(), endpoint));
  }
  // Each provider's channel has its own HeartbeatTimerTask and
  // ReconnectTimerTask. They run on the worker, read only the connection's
  // atomics, and post any action. Watching one channel each, they sleep until
  // it needs them (a heartbeat due, the idle timeout), at most a heartbeat
  // interval; a connect failure, a loss and the start of a handshake bring
  // the reconnect task's next check forward (check_within).
  const auto tick = std::max(options_.heartbeat, std::chrono::milliseconds(1));
  auto provider = [weak = std::weak_ptr<ClientConnection>(c)](std::vector<WatchedChannel>& out) {
    auto conn = weak.lock();
    return conn && conn->watched(out);
  };
  c->heartbeat_task = std::make_shared<HeartbeatTimerTask>(provider, tick);
  c->reconnect_task = std::make_shared<ReconnectTimerTask>(provider, tick);
  c->heartbeat_task->start(timer_);
  c->reconnect_task->start(timer_);
  return c;
}

void ClientCore::apply_set(std::unique_lock<std::mutex>& set_lock, std::vector<tcp::endpoint> endpoints,
                           ToClose& to_close) {
  assert(set_lock.owns_lock());
  (void)set_lock;
  // Duplicates dropped, the first occurrence's order kept.
  std::vector<tcp::endpoint> unique;
  for (const auto& ep : endpoints) {
    if (std::find(unique.begin(), unique.end(), ep) == unique.end()) unique.push_back(ep);
  }
  const auto old = current_set();
  auto next = std::make_shared<ProviderSet>();
  next->known = true;
  std::vector<std::shared_ptr<ClientConnection>> joined;
  std::size_t added = 0, back = 0;
  for (const auto& ep : unique) {
    auto same = std::find_if(old->conns.begin(), old->conns.end(), [&](const auto& c) { return c->endpoint() == ep; });
    if (same != old->conns.end()) {
      next->conns.push_back(*same);
      continue;
    }
    if (auto it = retiring_.find(ep); it != retiring_.end()) {
      auto c = std::move(it->second);
      retiring_.erase(it);
      revive(c);
      next->conns.push_back(c);
      joined.push_back(std::move(c));
      ++back;
      continue;
    }
    auto c = make_connection(ep);
    next->conns.push_back(c);
    joined.push_back(std::move(c));
    ++added;
  }
  std::vector<std::shared_ptr<ClientConnection>> left;
  for (const auto& c : old->conns) {
    if (std::find(next->conns.begin(), next->conns.end(), c) == next->conns.end()) left.push_back(c);
  }
  next->peers = next->conns.empty() && source_ ? source_->describe() : join_peers(next->conns);
  if (next->conns.empty()) next->empty_why = source_ ? source_->why_empty() : "the provider list is empty";
  if (old->known && joined.empty() && left.empty()) return;  // nothing changed
  set_.store(next);
  provider_sets_.fetch_add(1, std::memory_order_relaxed);
  providers_added_.fetch_add(added + back, std::memory_order_relaxed);
  providers_removed_.fetch_add(left.size(), std::memory_order_relaxed);
  if (old->known) {
    logger()->info("providers now {} ({}): {} joined, {} left", next->conns.size(),
                   next->conns.empty() ? "none" : next->peers, joined.size(), left.size());
  }
  // Published first, retired after: an attempt is never sent to a provider
  // that is in no set, and a provider is never in the set and retired.
  for (const auto& c : left) retire(c, to_close);
  // A client in use connects to new providers at once; one not used yet
  // connects on its first call, as it would to its first providers.
  if (started_.load(std::memory_order_acquire)) {
    const auto t = now();
    for (const auto& c : joined) {
      std::unique_lock conn_lock(c->mu);
      c->wanted.store(true, std::memory_order_release);
      attempt_connect(conn_lock, *c, t);
    }
  }
}

void ClientCore::close_retired(ToClose& to_close) {
  for (auto& channel : to_close) {
    channel->close(transport::make_error_code(transport::errc::closed), "provider left the set");
  }
  to_close.clear();
}

void ClientCore::retire(const std::shared_ptr<ClientConnection>& c, ToClose& to_close) {
  std::shared_ptr<transport::Channel> close_now;
  bool keep = false;
  {
    std::lock_guard conn_lock(c->mu);
    c->retired.store(true, std::memory_order_seq_cst);
    c->wanted.store(false, std::memory_order_release);  // no reconnect from now on (heartbeats while it drains)
    if (c->channel) {
      keep = true;  // it drains: closed when its last attempt ends, or after the grace
      if (c->active.load(std::memory_order_seq_cst) == 0) close_now = c->channel;
    } else if (c->state == ClientConnection::State::connecting) {
      keep = true;  // on_connected drops the socket and forgets it
    }
  }
  if (keep) {
    retiring_[c->endpoint()] = c;
    // Its CloseTimerTask: closes the channel `removal_grace` from now. Until
    // then it keeps its heartbeats (ClientConnection::watched), so neither
    // side takes a connection that still carries calls for an idle one.
    const auto grace = options_.removal_grace;
    const auto close_at = timer::fast_steady_now() + grace;
    c->close_task = std::make_shared<CloseTimerTask>(
        [weak = std::weak_ptr<ClientConnection>(c), close_at](std::vector<WatchedChannel>& out) {
          auto conn = weak.lock();
          if (!conn || !conn->retired.load(std::memory_order_acquire)) return false;
          WatchedChannel w;
          w.channel = conn->watched_channel.load();
          w.close_at = close_at;
          out.push_back(std::move(w));
          return true;
        },
        grace);
    c->close_task->start(timer_);
  } else {
    remember_left(*c);
    c->heartbeat_task->cancel();
    c->reconnect_task->cancel();
  }
  if (close_now) to_close.push_back(std::move(close_now));  // after set_mu_ is released
}

void ClientCore::revive(const std::shared_ptr<ClientConnection>& c) {
  std::shared_ptr<CloseTimerTask> task;
  {
    std::lock_guard conn_lock(c->mu);
    c->retired.store(false, std::memory_order_seq_cst);
    task.swap(c->close_task);
  }
  if (task) task->cancel();
  logger()->debug("peer={} back in the provider set before its channel closed", c->peer());
}

void ClientCore::forget_retired(ClientConnection& conn) {
  std::shared_ptr<ClientConnection> self;
  {
    std::lock_guard set_lock(set_mu_);
    auto it = retiring_.find(conn.endpoint());
    if (it == retiring_.end() || it->second.get() != &conn) return;  // revived, or the client closed
    self = std::move(it->second);
    retiring_.erase(it);
    remember_left(conn);
  }
  std::shared_ptr<CloseTimerTask> close_task;
  {
    std::lock_guard conn_lock(conn.mu);
    close_task.swap(conn.close_task);
  }
  conn.heartbeat_task->cancel();
  conn.reconnect_task->cancel();
  if (close_task) close_task->cancel();
}

void ClientCore::attempt_ended(ClientConnection& conn, std::uint64_t before) {
  // A slot freed on a provider at its max_active_per_provider: calls waiting
  // for one go now. Posted: the caller may hold a call's lock. A call that
  // decides to wait (under books_mu_) after this decrement sees the slot;
  // one that decided before is in the list the posted drain takes.
  const std::size_t cap = options_.max_active_per_provider;
  if (cap != 0 && before == cap && conn.ready.load(std::memory_order_acquire)) {
    asio::post(ex_, [self = shared_from_this()] { self->dispatch_waiting(); });
  }
  // Pairs with retire(): it marks the provider retired and reads `active`
  // under the connection's lock, under which `active` dropped; `retired` is
  // read after. One of the two sees the other.
  if (before == 1 && conn.retired.load(std::memory_order_seq_cst)) {
    asio::post(ex_, [self = shared_from_this(), keep = conn.shared_from_this()] { self->close_drained(*keep); });
  }
}

void ClientCore::close_drained(ClientConnection& conn) {
  std::shared_ptr<transport::Channel> channel;
  {
    std::lock_guard conn_lock(conn.mu);
    if (conn.closed || !conn.retired.load(std::memory_order_relaxed) ||
        conn.active.load(std::memory_order_relaxed) != 0) {
      return;
    }
    channel = conn.channel;
  }
  if (channel) channel->close(transport::make_error_code(transport::errc::closed), "provider left the set; drained");
}

}  // namespace wheelrpc::rpc::detail
