#include "server/server_core.h"

#include "stream/stream_core.h"

#include <algorithm>
#include <cassert>
#include <exception>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "base/idle_limit.h"
#include "base/log.h"
#include "server/server_interception.h"
#include "server/server_options.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// The request whose handler runs inline on this thread, inside on_request
// (set around dispatch; nested when a handler's own work reads requests).
// Its answer needs no locked instruction to mark the slot answered: until
// the handler returns, no other thread writes the slot's state (the deadline
// is armed after it, on this thread, and the one Responder is here). Nor a
// reference to its transport: the transport is delivering the request.
struct InlineRequest {
  const ReplySlot* slot;
  ServerTransport* transport;
  InlineRequest* outer;
};
thread_local InlineRequest* t_inline = nullptr;

struct InlineScope {
  InlineRequest here;
  InlineScope(const ReplySlot* slot, ServerTransport* transport) noexcept : here{slot, transport, t_inline} {
    t_inline = &here;
  }
  ~InlineScope() { t_inline = here.outer; }
  InlineScope(const InlineScope&) = delete;
  InlineScope& operator=(const InlineScope&) = delete;
};

// The deadline of a request, stored in the timeout record itself (it owns one
// reference to the slot). On the timer's worker it only posts the answer.
struct SlotDeadlineTask {
  using wheelrpc_relocatable = void;
  ReplySlotPtr slot;
  void operator()() const {
    if (slot->answered()) return;    // replied already
    ServerCore& core = *slot->core;  // alive: the slot's connection context holds it
    common::WorkGate::Scope in(core.timer_work());
    if (!in) return;  // stopped: the connection is closed, nobody to answer
    boost::asio::post(core.executor(), [s = slot] { s->core->on_deadline(s); });
  }
};

/// What a reply's status counts under (errc.cc's table, through the error it stands for).
CallCode status_code(Status status) noexcept {
  return status == Status::ok ? CallCode::ok : call_code(status_error(status));
}

std::string deadline_passed(std::string_view method) {
  return fmt::format("the deadline of '{}' passed before the handler replied", method);
}
}  // namespace

ServerCore::ServerCore(boost::asio::any_io_executor ex, timer::Timer& timer, ServerOptions options,
                       ServerWireFactory make_wire)
    : ex_(std::move(ex)),
      timer_(timer),
      options_(std::move(options)),
      wire_settings_(wire_settings_for(options_)),
      make_wire_(make_wire),
      admission_(*this, options_, shutdown_, methods_, stream_methods_, now()),
      local_context_(new ServerConnContext),
      health_(std::make_shared<HealthRegistry>([this] { return shutdown_.serving(); })) {
  if (options_.return_memory) memory_return_ = std::make_shared<MemoryReturn>(ex_, timer_, timer_work_);
  if (options_.tls.enabled) tls_ = transport::TlsContext::make(options_.tls, transport::TlsRole::server);
}

// ---------------------------------------------------------------- listening and connections

error_code ServerCore::listen(const asio::ip::tcp::endpoint& endpoint, std::string& message) {
  if (!listened_.load(std::memory_order_acquire)) register_builtins();
  listened_.store(true, std::memory_order_release);  // the method tables are fixed from here on
  auto acceptor = transport::Acceptor::create(ex_, [weak = weak_from_this()](asio::ip::tcp::socket s) {
    if (auto self = weak.lock()) self->on_accept(std::move(s));
  });
  if (auto ec = acceptor->listen(endpoint)) {
    message = ec.message();
    return ec;
  }
  // The liveness tasks see the server weakly and stop with it.
  auto provider = [weak = weak_from_this()](std::vector<WatchedChannel>& out) {
    auto self = weak.lock();
    return self && self->watched(out);
  };
  {
    common::LockGuard lock(mu_);
    acceptor_ = acceptor;
    announced_endpoint_ = acceptor->local_endpoint();
    liveness_.start(provider, ex_, timer_);
  }
  shutdown_.set_listening(true);
  health_registry().server_changed();  // SERVING from here (NOT_SERVING again if the announcement fails)
  return shutdown_.announce(acceptor->local_endpoint(), message);
}

bool ServerCore::watched(std::vector<WatchedChannel>& out) {
  common::LockGuard lock(mu_);
  if (stopped_) return false;
  out.reserve(channels_.size());
  for (auto& [id, c] : channels_) {
    auto ch = c.channel.lock();
    if (!ch) continue;
    out.push_back(liveness_.watch(std::move(ch), c.heartbeat_ms->load(std::memory_order_relaxed)));
  }
  return true;
}

asio::ip::tcp::endpoint ServerCore::local_endpoint() const {
  common::LockGuard lock(mu_);
  return announced_endpoint_;
}

bool ServerCore::room_for_connection(const asio::ip::tcp::socket& socket) {
  if (options_.limits.max_connections == 0) return true;
  {
    common::LockGuard lock(mu_);
    if (channels_.size() < options_.limits.max_connections) return true;
  }
  refused_connections_.fetch_add(1, std::memory_order_relaxed);
  const auto now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  auto last = last_refusal_log_.load(std::memory_order_relaxed);
  if (now_ns - last >= 1'000'000'000 && last_refusal_log_.compare_exchange_strong(last, now_ns)) {
    error_code ignored;
    const auto peer = socket.remote_endpoint(ignored);
    logger()->warn(
        "connection from {} refused: {} connections open (ServerOptions::limits.max_connections); "
        "{} refused so far",
        transport::endpoint_text(peer), options_.limits.max_connections, refused_connections_.load());
  }
  return false;
}

void ServerCore::on_accept(asio::ip::tcp::socket socket) {
  if (!room_for_connection(socket)) {
    error_code ignored;
    socket.close(ignored);  // accepted and closed at once: the peer sees end of stream, never a hang
    return;
  }
  // The wire's handler and channel (its handshake's timeout armed: closed
  // with the channel if the server stopped meanwhile).
  AcceptedConnection conn = make_wire_(std::move(socket), shared_from_this(), timer_, tls_ ? &*tls_ : nullptr);
  const auto& channel = conn.channel;
  {
    common::UniqueLock lock(mu_);
    if (stopped_) {
      lock.unlock();
      channel->close(transport::make_error_code(transport::errc::closed), "server stopped");
      return;
    }
    Conn& c = channels_[channel->id()] = Conn{channel, conn.heartbeat_ms, conn.context, {}, {}, {}, false};
    if (age_.enabled()) {  // max_connection_age: its own, jittered (server_age.cc)
      c.age = age_.draw();
      c.age_timeout = arm_age_step(channel->id(), AgeStep::age, c.age);
    }
  }
  accepted_.fetch_add(1, std::memory_order_relaxed);
  channel->start();
}

void ServerCore::on_connection_closed(std::uint64_t id) {
  decltype(channels_)::node_type gone;  // its age's timeouts are cancelled after the lock
  {
    common::LockGuard lock(mu_);
    gone = channels_.extract(id);
  }
  if (gone) {
    gone.mapped().age_timeout.cancel();
    gone.mapped().check_timeout.cancel();
  }
  if (memory_return_) memory_return_->note_close();
  shutdown_.recheck_drained();  // its unanswered requests no longer hold a graceful shutdown
}

std::string ServerCore::peer_of(std::uint64_t conn_id) const {
  if (conn_id == 0) return "local";  // an in-process call (async_invoke)
  common::LockGuard lock(mu_);
  const auto it = channels_.find(conn_id);
  if (it == channels_.end()) return "-";
  const auto ch = it->second.channel.lock();
  return ch ? ch->remote() : "-";
}

// ---------------------------------------------------------------- requests

ReplySlotPtr ServerCore::new_slot(const ConnContextPtr& conn, std::string_view method) {
  hot_.add(kRequestsCounter);
  conn->in_flight.fetch_add(1);  // before admission reads draining (ServerShutdown::begin_drain)
  ReplySlotPtr slot = share_unpublished(*new ReplySlot);
  slot->conn = conn;
  slot->core = this;
  slot->method = method;  // the caller's, until admission points it at the server's own
  return slot;
}

void ServerCore::on_request(ServerTransport& transport, IncomingRequest& request, const ConnContextPtr& conn) {
  ReplySlotPtr slot = new_slot(conn, request.method);
  slot->request_id = request.id;
  slot->two_way = request.two_way;
  slot->received = request.received;
  for (const auto& [key, value] : request.attachments) {
    if (key == kTraceparentKey) {
      slot->trace.set_raw(value);
    } else if (key == kBaggageKey) {
      slot->trace.set_tag(RoutingTag::from_baggage(value));
    }
  }
  if (request.budget.count() != 0) slot->deadline = slot->received + request.budget;
  // Replies mirror the call's algorithm unless the server has its own.
  slot->reply_compression = options_.compression.reply.value_or(request.reply_compression);
  slot->request_compressed = request.compressed;
  if (request.decode_error) [[unlikely]] {
    admission_.refuse_undecodable(*slot, request.decode_error, std::move(request.payload));
    return;
  }
  const ServerMethod* method = admission_.admit(*slot, RequestOrigin::channel);
  if (!method) return;
  if (slot->cells)
    slot->cells->payload(Direction::received, request.payload.size(), request.wire_size, request.compressed);
  // Kept to arm the deadline after the handler, if it has not answered by
  // then; and so that no other slot can take this one's address while the
  // handler runs (InlineRequest knows the slot by it).
  ReplySlotPtr keep = share_unpublished(*slot);
  Request req{std::move(request.method), std::move(request.payload), std::move(request.attachments), slot->deadline,
              transport.remote()};
  {
    InlineScope inline_scope(keep.get(), &transport);
    if (!admission_.dispatch(*method, req, slot, transport.id())) {
      run_handler(*method, std::move(req), std::move(slot), transport.id());
    }
  }
  if (keep->deadline) arm_deadline(std::move(keep));
}

void ServerCore::invoke(std::string method, std::string payload, transport::Attachments attachments,
                        std::chrono::milliseconds budget,
                        std::function<void(Status, std::string, transport::Attachments)> done) {
  ReplySlotPtr slot = new_slot(local_context_, method);
  slot->received = now();
  slot->local = std::move(done);
  for (const auto& [key, value] : attachments) {
    if (key == kTraceparentKey) slot->trace.set_raw(value);
    if (key == kBaggageKey) slot->trace.set_tag(RoutingTag::from_baggage(value));
  }
  if (!slot->trace.get()) {
    const auto root = TraceContext::make_root();
    slot->trace.set(root);
    attachments.emplace_back(kTraceparentKey, root.traceparent());
  }
  if (budget.count() > 0) slot->deadline = slot->received + budget;
  const ServerMethod* m = admission_.admit(*slot, RequestOrigin::local);
  if (!m) return;
  ReplySlotPtr keep = slot->deadline ? share_unpublished(*slot) : ReplySlotPtr();
  Request req{std::move(method), std::move(payload), std::move(attachments), slot->deadline, "local"};
  if (!admission_.dispatch(*m, req, slot, 0)) run_handler(*m, std::move(req), std::move(slot), 0);
  if (keep) arm_deadline(std::move(keep));
}

void ServerCore::run_handler(const ServerMethod& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id) {
  if (slot->interception && !slot->interception->passed()) [[unlikely]] {
    const auto chain = slot->interception;  // the interceptors first: they call back here
    chain->start(method, std::move(req), std::move(slot), conn_id);
    return;
  }
  // Calls the handler starts inherit the caller's deadline (deadline
  // propagation) and continue its trace. The scopes outlive the handler's
  // exceptions, so a log line about one names the trace (parsed only then).
  DeadlineScope scope(slot->deadline);
  LazyTraceScope trace_scope(slot->trace);
  try {
    method.handler(std::move(req), Responder(std::move(slot)));
  } catch (const std::exception& e) {
    // The Responder was consumed by the call; if the handler had not replied,
    // its destructor already answered server_error. Log what happened.
    logger()->error("conn={} peer={} trace={} handler threw: {}", conn_id, peer_of(conn_id), current_trace_id(),
                    e.what());
  } catch (...) {
    logger()->error("conn={} peer={} trace={} handler threw a non-std exception", conn_id, peer_of(conn_id),
                    current_trace_id());
  }
}

std::string ServerCore::current_trace_id() {
  const auto t = current_trace();
  return t ? t->trace_id_hex() : "-";
}

// ---------------------------------------------------------------- deadlines

void ServerCore::arm_deadline(ReplySlotPtr slot) {
  if (slot->answered()) return;  // the common case: the handler replied inline
  const auto left = std::max<std::chrono::nanoseconds>(*slot->deadline - now(), std::chrono::nanoseconds(0));
  std::error_code tec;
  // The task's own reference: `slot` stays held until the bit is set, as the
  // task may run and let go of its reference at once.
  auto timeout = timer_.new_timeout(SlotDeadlineTask{slot}, left, tec);
  if (tec) return;  // the timer stopped: the server is going away
  slot->timeout = timeout;
  if (slot->state.fetch_or(ReplySlot::kArmed, std::memory_order_acq_rel) & ReplySlot::kAnswered) {
    slot->timeout.cancel();  // answered meanwhile, before it saw the bit
  }
}

void ServerCore::on_deadline(const ReplySlotPtr& slot) {
  // finish() counts it (deadline_exceeded, the recent timeouts) whether or
  // not the reply can still be sent.
  finish(*slot, Status::server_timeout, deadline_passed(slot->method), {}, Answer::deadline);
}

void ServerCore::record_timeout(const ReplySlot& slot, std::chrono::steady_clock::time_point t) {
  TimeoutRecord r;
  r.time = std::chrono::system_clock::now();
  r.server_side = true;
  r.method.assign(slot.method);
  if (auto tr = slot.conn->transport.lock()) r.provider = tr->remote();
  const bool still_queued = options_.handler_executor && slot.queued_ns.load(std::memory_order_relaxed) < 0;
  r.phase = still_queued ? TimeoutPhase::queued : TimeoutPhase::in_handler;
  r.code = CallCode::server_timeout;
  if (slot.deadline) r.budget = std::chrono::duration_cast<std::chrono::microseconds>(*slot.deadline - slot.received);
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(t - slot.received);
  r.attempts = 1;
  if (const auto trace = slot.trace.get()) r.trace_id = trace->trace_id_hex();
  logger()->debug("request '{}' from {} answered server_timeout after {} us (budget {} us) trace={}", r.method,
                  r.provider.empty() ? "-" : r.provider, r.elapsed.count(), r.budget.count(),
                  r.trace_id.empty() ? "-" : r.trace_id);
  timeout_log_.add(std::move(r));
}

// ---------------------------------------------------------------- answers

bool ServerCore::finish(ReplySlot& slot, Status status, std::string payload, transport::Attachments attachments,
                        Answer by) {
  InlineRequest* const here = t_inline != nullptr && t_inline->slot == &slot ? t_inline : nullptr;
  Reply reply{status, std::move(payload), std::move(attachments)};
  LazyNow now{*this};
  const Verdict verdict = decide(slot, reply, by, here != nullptr, now);
  if (verdict.fate == Verdict::Fate::late) return false;
  // The interceptors' on_complete, before the reply goes (they may add to it).
  if (slot.interception) [[unlikely]]
    slot.interception->finish(status_error(reply.status), reply.attachments);
  // Uncounted once the reply is queued (on return): the last call in flight
  // of a connection may end a graceful shutdown, which flushes what is queued.
  struct Uncount {
    ServerCore& core;
    ServerConnContext& conn;
    ~Uncount() {
      if (conn.request_done(core.options_.limits.max_requests_per_connection) == 1) core.shutdown_.recheck_drained();
    }
  } uncount{*this, *slot.conn};
  if (verdict.fate == Verdict::Fate::cancelled) return false;  // the client stopped waiting: no reply
  return send(slot, std::move(reply), here ? here->transport : nullptr) && verdict.as_given;
}

ServerCore::Verdict ServerCore::decide(ReplySlot& slot, Reply& reply, Answer by, bool inline_request, LazyNow& now) {
  std::uint8_t prior = 0;
  if (inline_request) {  // see InlineRequest: no other writer now
    prior = slot.state.load(std::memory_order_relaxed);
    slot.state.store(prior | ReplySlot::kAnswered, std::memory_order_release);
  } else {
    prior = slot.state.fetch_or(ReplySlot::kAnswered, std::memory_order_acq_rel);
  }
  // A handler run from the handler executor: how long it took to answer
  // (deadline_admission sheds by it), late or not.
  if (by == Answer::handler && slot.service_ns) {  // written before the handler ran
    const std::chrono::nanoseconds queued(slot.queued_ns.load(std::memory_order_relaxed));
    Admission::record_service_time(*slot.service_ns, now() - (slot.received + queued));
  }
  if (prior & ReplySlot::kAnswered) {
    if (by != Answer::deadline) late_replies_.fetch_add(1, std::memory_order_relaxed);
    return {Verdict::Fate::late};
  }
  // A deadline not on the wheel (the handler answered before returning) is
  // checked here: past it, the answer is the deadline's, as if the wheel had
  // fired while the handler ran, and the handler's reply is a late one.
  bool timed_out = by == Answer::deadline;
  if (by == Answer::handler && !(prior & ReplySlot::kArmed) && slot.deadline && now() >= *slot.deadline) {
    late_replies_.fetch_add(1, std::memory_order_relaxed);
    reply = {Status::server_timeout, deadline_passed(slot.method), {}};
    timed_out = true;
  }
  if (by != Answer::deadline && (prior & ReplySlot::kArmed))
    slot.timeout.cancel();  // the task's reference goes with it
  if (slot.limited) admission_.release_limit(slot);
  const bool cancelled = !slot.local && slot.conn->cancels.check(slot.request_id, /*forget=*/true);
  account(slot, reply.status, cancelled, timed_out, now);
  if (cancelled) return {Verdict::Fate::cancelled};
  // The handler's reply, dropped for the deadline's answer: false to it.
  return {Verdict::Fate::send, !(timed_out && by == Answer::handler)};
}

void ServerCore::account(const ReplySlot& slot, Status status, bool cancelled, bool timed_out, LazyNow& now) {
  if (slot.cells) {
    slot.cells->completed(cancelled ? CallCode::cancelled : status_code(status), now() - slot.received);
    if (timed_out) {
      slot.cells->deadline_exceeded();
      record_timeout(slot, now());
    }
  }
  if (cancelled) {
    cancelled_.fetch_add(1, std::memory_order_relaxed);
  } else if (status == Status::ok) {
    hot_.add(kRepliesCounter);
  } else {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (status == Status::server_timeout) server_timeouts_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool ServerCore::send(ReplySlot& slot, Reply&& reply, ServerTransport* inline_transport) {
  if (slot.local) {
    auto local = std::move(slot.local);
    local(reply.status, std::move(reply.payload), std::move(reply.attachments));
    return true;
  }
  if (!slot.two_way) return true;
  ReplyCoding coding{slot.reply_compression, options_.compression.reply_level};
  const std::size_t bytes = reply.payload.size();
  std::shared_ptr<ServerTransport> held;
  ServerTransport* const t = inline_transport ? inline_transport : (held = slot.conn->transport.lock()).get();
  if (options_.load_reports.enabled) load_reporter_->attach_if_due(slot.conn->load_report_seen, reply.attachments);
  const bool sent = t && t->send_reply(slot.request_id, reply.status, reply.payload, reply.attachments, slot.method,
                                       coding, inline_transport != nullptr);
  if (sent && slot.cells) slot.cells->payload(Direction::sent, bytes, coding.wire_size, coding.compressed);
  return sent;
}

// ---------------------------------------------------------------- stop and state

void ServerCore::stop(bool flush) {
  std::shared_ptr<transport::Acceptor> acceptor;
  std::unordered_map<std::uint64_t, Conn> channels;
  std::vector<std::shared_ptr<AbstractTimerTask>> tasks;
  {
    common::LockGuard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    shutdown_.set_listening(false);
    channels.swap(channels_);
    tasks = liveness_.tasks();
    // Let go of here: its pending accept holds it until the executor runs or
    // drops that. This core may outlive the executor (a request's deadline
    // task on the wheel may hold the last reference to it), and a socket
    // must not be destroyed after its io_context.
    acceptor = std::move(acceptor_);
  }
  const bool draining = shutdown_.draining();
  // Outside the lock: cancel() waits for a run in progress, whose provider takes it.
  for (auto& t : tasks) {
    if (t) t->cancel();
  }
  if (acceptor) acceptor->close();
  for (auto& [id, c] : channels) {
    c.age_timeout.cancel();
    c.check_timeout.cancel();
    auto ch = c.channel.lock();
    if (!ch) continue;
    // Streams still open end with a clear status before their connection closes.
    if (c.context && c.context->streams) {
      for (auto& s : c.context->streams->all()) {
        s->end_local(make_error_code(errc::unavailable),
                     draining ? "the server shut down: the stream was still open when the shutdown's grace "
                                "(its drain timeout) ran out"
                              : "the server stopped",
                     StreamEnd::shutdown);
      }
    }
    if (flush) {  // a graceful shutdown: the last replies reach their callers
      ch->close_after_flush(transport::make_error_code(transport::errc::closed), "server shut down", kFlushLimit);
    } else {
      ch->close(transport::make_error_code(transport::errc::closed), "server stopped");
    }
  }
  // A deadline or HELLO timeout running on the timer's worker may be posting
  // to the executor: wait for it (the executor may go once stop() returns).
  timer_work_.close_and_wait();
  health_registry().stop();  // NOT_SERVING; its watches (their streams ended above) let go of
  shutdown_.on_stopped();
}

bool ServerCore::stopped() const {
  common::LockGuard lock(mu_);
  return stopped_;
}

void ServerCore::close_acceptor() {
  std::shared_ptr<transport::Acceptor> acceptor;
  {
    common::LockGuard lock(mu_);
    acceptor = acceptor_;
  }
  if (acceptor) acceptor->close();
}

std::uint64_t ServerCore::in_flight() const {
  std::int64_t n = local_context_->in_flight.load(std::memory_order_relaxed);  // in-process calls (the gateway)
  common::LockGuard lock(mu_);
  for (const auto& [id, c] : channels_) n += c.context ? c.context->in_flight.load(std::memory_order_relaxed) : 0;
  return static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0));
}

std::uint64_t ServerCore::open_streams() const {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(streams_.open.load(std::memory_order_relaxed), 0));
}

bool ServerCore::drained() const {
  common::LockGuard lock(mu_);
  if (stopped_) return false;
  if (local_context_->in_flight.load() > 0) return false;
  for (const auto& [id, c] : channels_) {
    if (c.context && c.context->in_flight.load() > 0) return false;
    if (c.context && c.context->streams && c.context->streams->size() > 0) return false;
  }
  return true;
}

ServerStats ServerCore::stats() const {
  ServerStats s;
  {
    common::LockGuard lock(mu_);
    s.connections = channels_.size();
    liveness_.add_stats(s);
  }
  s.accepted = accepted_.load(std::memory_order_relaxed);
  s.requests = hot_.value(kRequestsCounter);
  s.replies = hot_.value(kRepliesCounter);
  s.errors = errors_.load(std::memory_order_relaxed);
  s.server_timeouts = server_timeouts_.load(std::memory_order_relaxed);
  s.late_replies = late_replies_.load(std::memory_order_relaxed);
  s.cancelled = cancelled_.load(std::memory_order_relaxed);
  s.oversize_replies = oversize_replies_.load(std::memory_order_relaxed);
  fill(streams_, s.streams);
  s.streams_refused = streams_refused_.load(std::memory_order_relaxed);
  s.unknown_stream_frames = unknown_stream_frames_.load(std::memory_order_relaxed);
  s.read_pauses = read_pauses_.load(std::memory_order_relaxed);
  s.memory_returns = memory_return_ ? memory_return_->returns() : 0;
  s.protocol_errors = bad_input_.total();
  s.bad_magic = bad_input_.count(BadInput::bad_magic);
  s.bad_version = bad_input_.count(BadInput::bad_version);
  s.oversize_frames = bad_input_.count(BadInput::oversize_frame);
  s.malformed_frames = bad_input_.count(BadInput::malformed_frame);
  s.no_hello = bad_input_.count(BadInput::no_hello);
  s.hello_timeouts = bad_input_.count(BadInput::hello_timeout);
  s.http2_errors = bad_input_.count(BadInput::http2);
  s.in_flight = in_flight();
  s.refused_connections = refused_connections_.load(std::memory_order_relaxed);
  s.slow_reader_closes = slow_reader_closes_.load(std::memory_order_relaxed);
  admission_.add_stats(s);
  age_.add_stats(s);
  return s;
}

std::vector<ConnectionInfo> ServerCore::connections() const {
  std::vector<std::pair<std::shared_ptr<transport::Channel>, Conn>> conns;
  {
    common::LockGuard lock(mu_);
    conns.reserve(channels_.size());
    for (const auto& [id, c] : channels_) {
      if (auto ch = c.channel.lock()) conns.emplace_back(std::move(ch), c);
    }
  }
  std::vector<ConnectionInfo> out;
  out.reserve(conns.size());
  for (const auto& [ch, c] : conns) {
    ConnectionInfo info;
    info.server_side = true;
    fill_channel_info(info, *ch);
    info.heartbeat = std::chrono::milliseconds(c.heartbeat_ms->load(std::memory_order_relaxed));
    info.sends_heartbeats = options_.keepalive.send_heartbeats;
    if (info.heartbeat.count() > 0 && options_.keepalive.tcp_user_timeout)
      info.user_timeout = idle_limit(options_.keepalive.idle_timeout, info.heartbeat);
    if (c.age.count() > 0 && !c.aged) info.max_age_in = std::max(c.age - info.age, std::chrono::milliseconds{0});
    info.state = !ch->is_open()                ? ConnectionInfo::State::closing
                 : info.heartbeat.count() == 0 ? ConnectionInfo::State::connecting  // no HELLO yet
                                               : ConnectionInfo::State::ready;
    info.in_flight = static_cast<std::uint64_t>(std::max<std::int64_t>(0, c.context->in_flight.load()));
    info.streams = c.context->streams ? c.context->streams->size() : 0;
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace wheelrpc::rpc::detail
