#include <wheelrpc/rpc/server.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <future>
#include <stdexcept>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/transport/connector.h>
#include <wheelrpc/transport/errc.h>

#include "control_frames.h"
#include "executor_thread.h"
#include "idle_limit.h"
#include "log.h"
#include "server_core.h"

namespace wheelrpc::rpc {
namespace asio = boost::asio;
using boost::system::error_code;

namespace detail {
namespace {

// One accepted connection: expects a HELLO first, then requests.
class ServerConnection final : public transport::ChannelHandler {
 public:
  explicit ServerConnection(std::shared_ptr<ServerCore> core)
      : heartbeat_ms_(std::make_shared<std::atomic<std::int64_t>>(0)), context_(new ServerConnContext) {
    context_->core = std::move(core);
  }
  void set_channel(const std::shared_ptr<transport::Channel>& channel) { context_->channel = channel; }

  void on_frame(transport::Channel& channel, transport::Frame& frame) override {
    assert(channel.strand().running_in_this_thread());
    if (!hello_done_) {
      if (!is_hello(frame)) {
        first_frame_not_hello_ = true;  // counted and logged by on_close
        channel.close(transport::make_error_code(transport::errc::protocol_error),
                      "the first frame was not a HELLO");
        return;
      }
      hello_done_ = true;
      hello_timeout_.cancel();
      // Agree on the larger interval, so neither side thinks a healthy
      // connection idle.
      const auto theirs = hello_heartbeat(frame).value_or(context_->core->options().heartbeat);
      const auto agreed = std::max(theirs, context_->core->options().heartbeat);
      heartbeat_ms_->store(agreed.count(), std::memory_order_relaxed);
      context_->peer_max_body.store(hello_max_body(frame), std::memory_order_relaxed);
      channel.send(make_hello(frame.header.request_id, agreed, false, context_->core->options().channel.max_body));
      return;
    }
    if (frame.header.is_event()) {
      if (is_heartbeat(frame)) {
        channel.send(make_heartbeat_reply(frame.header.request_id));
      } else if (is_cancel(frame)) {
        context_->cancels.add(frame.header.request_id);  // its reply will be dropped
      }
      return;  // heartbeat replies (event responses) only refresh last-read
    }
    if (!frame.header.is_request()) return;  // the client never sends responses
    // The request may close the channel (a reply over the write queue
    // bound); the channel keeps this handler alive while it delivers the
    // frame all the same (ChannelHandler::on_frame).
    const ConnContextPtr& context = context_;
    context->core->on_request(channel, frame, context);
    // At the connection's limit: read nothing more until a reply goes out
    // (finish() resumes; posted, so a resume racing with this lands after it).
    const std::size_t cap = context->core->options().max_requests_per_connection;
    if (cap != 0 && context->in_flight.load(std::memory_order_acquire) >= static_cast<std::int64_t>(cap) &&
        channel.is_open()) {
      context->core->count_read_pause();
      channel.pause_reading();
    }
  }

  void on_close(transport::Channel& channel, const error_code& ec, const std::string& reason) override {
    hello_timeout_.cancel();
    // Bad input, counted and logged here, where every close passes: the
    // decoder's errors, and the two protocol errors of a connection without
    // a HELLO (the only protocol errors a server connection closes with).
    if (auto kind = bad_input_of(ec)) {
      context_->core->note_bad_input(*kind, channel, reason);
    } else if (ec == transport::errc::protocol_error && !hello_done_) {
      context_->core->note_bad_input(first_frame_not_hello_ ? BadInput::no_hello : BadInput::hello_timeout, channel,
                                     reason);
    }
    context_->core->on_connection_closed(channel.id());
  }

  timer::Timeout hello_timeout_;
  const std::shared_ptr<std::atomic<std::int64_t>>& heartbeat_ms() const { return heartbeat_ms_; }
  const ConnContextPtr& context() const { return context_; }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> heartbeat_ms_;  // agreed; read by the timer tasks
  bool hello_done_ = false;
  bool first_frame_not_hello_ = false;
  ConnContextPtr context_;
};

}  // namespace

ServerCore::ServerCore(boost::asio::any_io_executor ex, timer::Timer& timer, ServerOptions options)
    : ex_(std::move(ex)), timer_(timer), options_(std::move(options)),
      limiter_(options_.max_concurrency, now()), local_context_(new ServerConnContext) {
  if (options_.metrics) unknown_cells_ = &methods_.get("(unknown)");
  if (options_.return_memory) memory_return_ = std::make_shared<MemoryReturn>(ex_, timer_, timer_work_);
  if (options_.tls.enabled) tls_ = transport::TlsContext::make(options_.tls, transport::TlsRole::server);
}

void ServerCore::handle(std::string method, Server::Handler handler, MethodOptions options) {
  MethodCells* cells = options_.metrics ? &methods_.get(method) : nullptr;
  Method m{std::move(handler), cells, options.max_concurrency, nullptr, nullptr};
  if (m.max_concurrency > 0) m.running = std::make_unique<std::atomic<std::size_t>>(0);
  if (options_.handler_executor) m.service_ns = std::make_unique<std::atomic<std::int64_t>>(0);
  handlers_[std::move(method)] = std::move(m);
}

bool ServerCore::admit(const Method& method, ReplySlot& slot) {
  if (!method.running) return true;
  if (method.running->fetch_add(1) < method.max_concurrency) {
    slot.running = method.running.get();  // given back when the slot goes: the handler let go of it
    return true;
  }
  method.running->fetch_sub(1);
  refused_overloaded_.fetch_add(1, std::memory_order_relaxed);
  finish(slot, Status::overloaded,
         fmt::format("'{}' is at its limit of {} calls at once (max_concurrency): not processed", slot.method,
                     method.max_concurrency),
         {});
  return false;
}

error_code ServerCore::listen(const asio::ip::tcp::endpoint& endpoint, std::string& message) {
  auto acceptor = transport::Acceptor::create(
      ex_, [weak = weak_from_this()](asio::ip::tcp::socket s) {
        if (auto self = weak.lock()) self->on_accept(std::move(s));
      });
  if (auto ec = acceptor->listen(endpoint)) {
    message = ec.message();
    return ec;
  }
  // Idle connections are closed (and, if configured, heartbeats sent) every
  // heartbeat / 3; the tasks see the server weakly and stop with it.
  const auto tick = std::max(options_.heartbeat / 3, std::chrono::milliseconds(1));
  auto provider = [weak = weak_from_this()](std::vector<WatchedChannel>& out) {
    auto self = weak.lock();
    return self && self->watched(out);
  };
  {
    std::lock_guard lock(mu_);
    acceptor_ = acceptor;
    announced_endpoint_ = acceptor->local_endpoint();
    // The checks walk every connection under mu_: they run on the executor.
    close_task_ = std::make_shared<CloseTimerTask>(provider, tick, ex_);
    close_task_->start(timer_);
    if (options_.send_heartbeats) {
      heartbeat_task_ = std::make_shared<HeartbeatTimerTask>(provider, tick, ex_);
      heartbeat_task_->start(timer_);
    }
  }
  listening_.store(true);
  if (!options_.announcer) return {};
  // Announced once listening: the announcer bounds its own wait.
  auto promise = std::make_shared<std::promise<std::pair<error_code, std::string>>>();
  auto answer = promise->get_future();
  options_.announcer->announce(acceptor->local_endpoint(), [promise](error_code ec, std::string why) {
    promise->set_value({ec, std::move(why)});
  });
  if (answer.wait_for(std::chrono::seconds(0)) != std::future_status::ready && runs_in_this_thread(ex_)) {
    options_.announcer->withdraw([](error_code, std::string) {});
    stop();
    message = "Server::listen with an announcer that does not answer at once (e.g. check = true) cannot wait on a "
              "thread that runs the server's executor: call it from another thread";
    return make_error_code(errc::bad_request);
  }
  auto [ec, why] = answer.get();
  if (ec) {
    stop();
    message = why.empty() ? ec.message() : why;
    return ec;
  }
  announced_.store(true);
  return {};
}

std::chrono::milliseconds ServerCore::close_timeout_for(std::chrono::milliseconds agreed) const {
  return idle_limit(options_.close_timeout, agreed);
}

bool ServerCore::watched(std::vector<WatchedChannel>& out) {
  std::lock_guard lock(mu_);
  if (stopped_) return false;
  out.reserve(channels_.size());
  for (auto& [id, c] : channels_) {
    auto ch = c.channel.lock();
    if (!ch) continue;
    std::chrono::milliseconds agreed(c.heartbeat_ms->load(std::memory_order_relaxed));
    if (agreed.count() == 0) agreed = options_.heartbeat;  // before HELLO (hello_timeout applies too)
    out.push_back({std::move(ch), agreed, close_timeout_for(agreed), {}, std::chrono::steady_clock::time_point::max()});
  }
  return true;
}

asio::ip::tcp::endpoint ServerCore::local_endpoint() const {
  std::lock_guard lock(mu_);
  return announced_endpoint_;
}

void ServerCore::on_accept(asio::ip::tcp::socket socket) {
  if (options_.max_connections > 0) {
    bool over = false;
    {
      std::lock_guard lock(mu_);
      over = channels_.size() >= options_.max_connections;
    }
    if (over) {
      refused_connections_.fetch_add(1, std::memory_order_relaxed);
      const auto now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
      auto last = last_refusal_log_.load(std::memory_order_relaxed);
      if (now_ns - last >= 1'000'000'000 && last_refusal_log_.compare_exchange_strong(last, now_ns)) {
        error_code ignored;
        const auto peer = socket.remote_endpoint(ignored);
        logger()->warn("connection from {} refused: {} connections open (ServerOptions::max_connections); "
                       "{} refused so far",
                       transport::endpoint_text(peer), options_.max_connections, refused_connections_.load());
      }
      error_code ignored;
      socket.close(ignored);  // accepted and closed at once: the peer sees end of stream, never a hang
      return;
    }
  }
  auto handler = std::make_shared<ServerConnection>(shared_from_this());
  auto channel = transport::Channel::create(std::move(socket), handler, options_.channel, tls_ ? &*tls_ : nullptr);
  handler->set_channel(channel);
  {
    std::lock_guard lock(mu_);
    if (stopped_) {
      channel->close(transport::make_error_code(transport::errc::closed), "server stopped");
      return;
    }
    channels_[channel->id()] = Conn{channel, handler->heartbeat_ms(), handler->context()};
  }
  accepted_.fetch_add(1, std::memory_order_relaxed);
  // A connection must say HELLO within hello_timeout; the task only posts a
  // close, holding the channel weakly.
  std::error_code tec;
  handler->hello_timeout_ = timer_.new_timeout(
      [weak = std::weak_ptr<transport::Channel>(channel), core = weak_from_this()] {
        auto self = core.lock();
        if (!self) return;
        common::WorkGate::Scope in(self->timer_work_);
        if (!in) return;  // stopped: the channel is closed already
        if (auto ch = weak.lock()) {
          ch->close(transport::make_error_code(transport::errc::protocol_error),
                    "no HELLO within the hello timeout");
        }
      },
      options_.hello_timeout, tec);
  channel->start();
}

void ServerCore::on_connection_closed(std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    channels_.erase(id);
  }
  if (memory_return_) memory_return_->note_close();
  // Its unanswered requests no longer hold a graceful shutdown.
  if (draining_.load()) asio::post(ex_, [self = shared_from_this()] { self->check_drained(); });
}

void intrusive_ptr_add_ref(ReplySlot* s) noexcept { s->refs.fetch_add(1, std::memory_order_relaxed); }
void intrusive_ptr_release(ReplySlot* s) noexcept {
  if (common::drop_reference(s->refs)) delete s;
}

namespace {
// The request whose handler runs inline on this thread, inside on_request
// (set around dispatch; nested when a handler's own work reads requests).
// Its answer needs no locked instruction to mark the slot answered: until
// the handler returns, no other thread writes the slot's state (the deadline
// is armed after it, on this thread, and the one Responder is here). Nor a
// reference to its channel: the channel is delivering the request.
struct InlineRequest {
  const ReplySlot* slot;
  transport::Channel* channel;
  InlineRequest* outer;
};
thread_local InlineRequest* t_inline = nullptr;

struct InlineScope {
  InlineRequest here;
  InlineScope(const ReplySlot* slot, transport::Channel* channel) noexcept : here{slot, channel, t_inline} {
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
    if (slot->answered()) return;  // replied already
    ServerCore& core = *slot->core;  // alive: the slot's connection context holds it
    common::WorkGate::Scope in(core.timer_work());
    if (!in) return;  // stopped: the connection is closed, nobody to answer
    boost::asio::post(core.executor(), [s = slot] { s->core->on_deadline(s); });
  }
};
}  // namespace

void ServerCore::on_deadline(const ReplySlotPtr& slot) {
  // finish() counts it (deadline_exceeded, the recent timeouts) whether or
  // not the reply can still be sent.
  finish(*slot, Status::server_timeout,
         fmt::format("the deadline of '{}' passed before the handler replied", slot->method), {}, Answer::deadline);
}

void ServerCore::record_timeout(const ReplySlot& slot, std::chrono::steady_clock::time_point t) {
  TimeoutRecord r;
  r.time = std::chrono::system_clock::now();
  r.server_side = true;
  r.method = slot.method;
  if (auto ch = slot.conn->channel.lock()) r.provider = ch->remote();
  const bool still_queued = options_.handler_executor && slot.queued_ns.load(std::memory_order_relaxed) < 0;
  r.phase = still_queued ? TimeoutPhase::queued : TimeoutPhase::in_handler;
  r.code = CallCode::server_timeout;
  if (slot.deadline) {
    r.budget = std::chrono::duration_cast<std::chrono::microseconds>(*slot.deadline - slot.received);
  }
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(t - slot.received);
  r.attempts = 1;
  if (const auto trace = slot.trace.get()) r.trace_id = trace->trace_id_hex();
  logger()->debug("request '{}' from {} answered server_timeout after {} us (budget {} us) trace={}", r.method,
                  r.provider.empty() ? "-" : r.provider, r.elapsed.count(), r.budget.count(),
                  r.trace_id.empty() ? "-" : r.trace_id);
  timeout_log_.add(std::move(r));
}

void ServerCore::on_request(transport::Channel& channel, transport::Frame& frame, const ConnContextPtr& conn) {
  hot_.add(kRequestsCounter);
  // Counted before draining_ is read: see start_shutdown().
  conn->in_flight.fetch_add(1);
  ReplySlotPtr slot = share_unpublished(*new ReplySlot);
  slot->conn = conn;
  slot->core = this;
  slot->request_id = frame.header.request_id;
  slot->two_way = frame.header.is_two_way();
  slot->method = frame.method;
  slot->received = receipt_time(channel);
  for (const auto& [key, value] : frame.attachments) {
    if (key == kTraceparentKey) {
      slot->trace.set_raw(value);
      break;
    }
  }

  auto it = handlers_.find(frame.method);
  slot->cells = it != handlers_.end() ? it->second.cells : unknown_cells_;
  if (slot->cells) slot->cells->started();
  if (draining_.load()) {
    refused_shutting_down_.fetch_add(1, std::memory_order_relaxed);
    finish(*slot, Status::shutting_down, "server shutting down: '" + frame.method + "' not processed");
    return;
  }
  if (offline_.load(std::memory_order_relaxed)) {
    refused_offline_.fetch_add(1, std::memory_order_relaxed);
    finish(*slot, Status::shutting_down, "server offline: '" + frame.method + "' not processed");
    return;
  }
  if (it == handlers_.end()) {
    method_not_found_.fetch_add(1, std::memory_order_relaxed);
    finish(*slot, Status::method_not_found, "no method '" + frame.method + "'");
    return;
  }
  if (frame.header.deadline_ms != 0) slot->deadline = slot->received + std::chrono::milliseconds(frame.header.deadline_ms);
  if (shed_on_arrival(*slot) || !admit(it->second, *slot) || !admit_server(*slot)) return;
  // Kept to arm the deadline after the handler, if it has not answered by
  // then; and so that no other slot can take this one's address while the
  // handler runs (InlineRequest knows the slot by it).
  ReplySlotPtr keep = share_unpublished(*slot);
  Request req{std::move(frame.method), std::move(frame.payload), std::move(frame.attachments),
              slot->deadline, channel.remote()};
  {
    InlineScope inline_scope(keep.get(), &channel);
    dispatch(it->second, std::move(req), std::move(slot), channel.id());
  }
  if (keep->deadline) arm_deadline(std::move(keep));
}

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

void ServerCore::run_handler(const Method& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id) {
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

std::string ServerCore::peer_of(std::uint64_t conn_id) const {
  if (conn_id == 0) return "local";  // an in-process call (async_invoke)
  std::lock_guard lock(mu_);
  const auto it = channels_.find(conn_id);
  if (it == channels_.end()) return "-";
  const auto ch = it->second.channel.lock();
  return ch ? ch->remote() : "-";
}

namespace {
CallCode status_code(Status status) noexcept {
  switch (status) {
    case Status::ok: return CallCode::ok;
    case Status::server_timeout: return CallCode::server_timeout;
    case Status::method_not_found: return CallCode::method_not_found;
    case Status::bad_request: return CallCode::bad_request;
    case Status::server_error: return CallCode::server_error;
    case Status::overloaded: return CallCode::resource_exhausted;
    case Status::shutting_down: return CallCode::unavailable;
  }
  return CallCode::other;
}
}  // namespace

void ServerCore::invoke(std::string method, std::string payload, transport::Attachments attachments,
                        std::chrono::milliseconds budget,
                        std::function<void(Status, std::string, transport::Attachments)> done) {
  hot_.add(kRequestsCounter);
  local_context_->in_flight.fetch_add(1);
  ReplySlotPtr slot = share_unpublished(*new ReplySlot);
  slot->conn = local_context_;
  slot->core = this;
  slot->method = method;
  slot->received = now();
  slot->local = std::move(done);
  for (const auto& [key, value] : attachments) {
    if (key == kTraceparentKey) slot->trace.set_raw(value);
  }
  if (!slot->trace.get()) {
    const auto root = TraceContext::make_root();
    slot->trace.set(root);
    attachments.emplace_back(kTraceparentKey, root.traceparent());
  }
  auto it = handlers_.find(method);
  slot->cells = it != handlers_.end() ? it->second.cells : unknown_cells_;
  if (slot->cells) slot->cells->started();
  if (draining_.load() || !listening_.load()) {
    refused_shutting_down_.fetch_add(1, std::memory_order_relaxed);
    finish(*slot, Status::shutting_down,
           std::string(draining_.load() ? "server shutting down" : "server not listening") + ": '" + method +
               "' not processed",
           {});
    return;
  }
  if (offline_.load(std::memory_order_relaxed)) {
    refused_offline_.fetch_add(1, std::memory_order_relaxed);
    finish(*slot, Status::shutting_down, "server offline: '" + method + "' not processed");
    return;
  }
  if (it == handlers_.end()) {
    method_not_found_.fetch_add(1, std::memory_order_relaxed);
    finish(*slot, Status::method_not_found, "no method '" + method + "'");
    return;
  }
  if (!admit(it->second, *slot) || !admit_server(*slot)) return;
  if (budget.count() > 0) slot->deadline = slot->received + budget;
  ReplySlotPtr keep = slot->deadline ? share_unpublished(*slot) : ReplySlotPtr();
  Request req{std::move(method), std::move(payload), std::move(attachments), slot->deadline, "local"};
  dispatch(it->second, std::move(req), std::move(slot), 0);
  if (keep) arm_deadline(std::move(keep));
}

bool ServerCore::finish(ReplySlot& s, Status status, std::string payload,
                        transport::Attachments attachments, Answer by) {
  ReplySlot* slot = &s;
  InlineRequest* const inline_request = t_inline != nullptr && t_inline->slot == slot ? t_inline : nullptr;
  std::uint8_t prior = 0;
  if (inline_request) {  // see InlineRequest: no other writer now
    prior = slot->state.load(std::memory_order_relaxed);
    slot->state.store(prior | ReplySlot::kAnswered, std::memory_order_release);
  } else {
    prior = slot->state.fetch_or(ReplySlot::kAnswered, std::memory_order_acq_rel);
  }
  // The time, read once and only if needed.
  std::chrono::steady_clock::time_point t{};
  const auto now_once = [&] {
    if (t == std::chrono::steady_clock::time_point{}) t = now();
    return t;
  };
  // A handler run from the handler executor: how long it took to answer
  // (deadline_admission sheds by it), late or not.
  if (by == Answer::handler && slot->service_ns) {  // written before the handler ran
    const std::chrono::nanoseconds queued(slot->queued_ns.load(std::memory_order_relaxed));
    record_service_time(*slot->service_ns, now_once() - (slot->received + queued));
  }
  if (prior & ReplySlot::kAnswered) {
    if (by != Answer::deadline) late_replies_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // A deadline not on the wheel (the handler answered before returning) is
  // checked here: past it, the answer is the deadline's, as if the wheel had
  // fired while the handler ran, and the handler's reply is a late one.
  bool timed_out = by == Answer::deadline;
  if (by == Answer::handler && !(prior & ReplySlot::kArmed) && slot->deadline && now_once() >= *slot->deadline) {
    late_replies_.fetch_add(1, std::memory_order_relaxed);
    status = Status::server_timeout;
    payload = fmt::format("the deadline of '{}' passed before the handler replied", slot->method);
    attachments.clear();
    timed_out = true;
  }
  // Uncounted once the reply is queued (on return): the last call in flight
  // of a connection may end a graceful shutdown, which flushes what is queued.
  struct Uncount {
    ServerCore& core;
    ServerConnContext& conn;
    ~Uncount() {
      const auto before = conn.in_flight.fetch_sub(1);
      if (before == 1 && core.draining_.load()) {
        asio::post(core.ex_, [self = core.shared_from_this()] { self->check_drained(); });
      }
      // Below the connection's limit again: it reads on (see ServerConnection::on_frame).
      const std::size_t cap = core.options_.max_requests_per_connection;
      if (cap != 0 && before == static_cast<std::int64_t>(cap)) {
        auto ch = conn.channel.lock();
        if (ch) ch->resume_reading();
      }
    }
  } uncount{*this, *slot->conn};
  if (by != Answer::deadline && (prior & ReplySlot::kArmed)) slot->timeout.cancel();  // the task's reference goes with it
  if (slot->limited) release_limit(*slot);
  const bool client_cancelled = !slot->local && slot->conn->cancels.check(slot->request_id, /*forget=*/true);
  if (slot->cells) {
    slot->cells->completed(client_cancelled ? CallCode::cancelled : status_code(status), now_once() - slot->received);
    if (timed_out) {
      slot->cells->deadline_exceeded();
      record_timeout(*slot, now_once());
    }
  }
  if (client_cancelled) {
    cancelled_.fetch_add(1, std::memory_order_relaxed);  // the client stopped waiting: no reply
    return false;
  }
  if (status == Status::ok) {
    hot_.add(kRepliesCounter);
  } else {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (status == Status::server_timeout) server_timeouts_.fetch_add(1, std::memory_order_relaxed);
  }
  // The handler's reply, dropped for the deadline's answer: false to it.
  const bool as_given = !(timed_out && by == Answer::handler);
  if (slot->local) {
    auto local = std::move(slot->local);
    local(status, std::move(payload), std::move(attachments));
    return as_given;
  }
  if (!slot->two_way) return as_given;
  transport::Frame f;
  f.header.status = static_cast<std::uint8_t>(status);
  f.header.request_id = slot->request_id;
  f.attachments = std::move(attachments);
  f.payload = std::move(payload);
  std::shared_ptr<transport::Channel> held;  // unless the channel is delivering the request now
  transport::Channel* const channel =
      inline_request ? inline_request->channel : (held = slot->conn->channel.lock()).get();
  if (!channel) return false;
  // A reply the client could not take (over the limit its HELLO gave) would
  // make it close the connection and fail every call on it: this call alone
  // fails instead.
  const std::uint32_t limit = slot->conn->peer_max_body.load(std::memory_order_relaxed);
  if (f.payload.size() > limit / 2 || !f.attachments.empty()) {
    const std::size_t body = transport::encoded_size(f) - transport::kHeaderSize;
    if (body > limit) {
      oversize_replies_.fetch_add(1, std::memory_order_relaxed);
      f.header.status = static_cast<std::uint8_t>(Status::server_error);
      f.attachments.clear();
      f.payload = fmt::format("reply of {} bytes to '{}' exceeds the client's limit of {} bytes (max_body)", body,
                              slot->method, limit);
      logger()->warn("conn={} {}", channel->id(), f.payload);
    }
  }
  const auto ec = channel->send(f);
  if (inline_request) channel->recycle(std::move(f.payload));  // the next request's payload, without a malloc
  if (ec == transport::errc::write_queue_full) {
    // The client sends requests and reads no replies: closed, not allowed to grow memory.
    slow_reader_closes_.fetch_add(1, std::memory_order_relaxed);
    channel->close(ec, fmt::format("the client reads no replies: over {} bytes of replies queued "
                                   "(ChannelOptions::max_write_queue_bytes)",
                                   options_.channel.max_write_queue_bytes));
  }
  return !ec && as_given;
}

namespace {
// Completes `h` with `ec` on its associated executor, through `ex` (never
// inline: the caller may hold the server's state).
void complete_later(const asio::any_io_executor& ex, asio::any_completion_handler<Server::ShutdownSignature> h,
                    boost::system::error_code ec) {
  if (!h) return;
  auto assoc = asio::get_associated_executor(h, ex);
  asio::post(ex, asio::bind_executor(assoc, [h = std::move(h), ec]() mutable { std::move(h)(ec); }));
}
}  // namespace

void ServerCore::stop() { stop(false); }

void ServerCore::stop(bool flush) {
  std::shared_ptr<transport::Acceptor> acceptor;
  std::unordered_map<std::uint64_t, Conn> channels;
  std::vector<std::shared_ptr<AbstractTimerTask>> tasks;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    listening_.store(false);
    channels.swap(channels_);
    tasks = {close_task_, heartbeat_task_};
    // Let go of here: its pending accept holds it until the executor runs or
    // drops that. This core may outlive the executor (a request's deadline
    // task on the wheel may hold the last reference to it), and a socket
    // must not be destroyed after its io_context.
    acceptor = std::move(acceptor_);
  }
  // Outside the lock: cancel() waits for a run in progress, whose provider takes it.
  for (auto& t : tasks) {
    if (t) t->cancel();
  }
  if (acceptor) acceptor->close();
  for (auto& [id, c] : channels) {
    auto ch = c.channel.lock();
    if (!ch) continue;
    if (flush) {  // a graceful shutdown: the last replies reach their callers
      ch->close_after_flush(transport::make_error_code(transport::errc::closed), "server shut down", kFlushLimit);
    } else {
      ch->close(transport::make_error_code(transport::errc::closed), "server stopped");
    }
  }
  // A deadline or HELLO timeout still running on the timer's worker may be
  // posting to the executor: wait for it, so the executor may be destroyed
  // once stop() returns. Later ones see the gate closed and do nothing.
  timer_work_.close_and_wait();
  if (announced_.exchange(false)) withdraw({});  // not waited for
  // stop() during a graceful shutdown ends it: its handler completes, aborted.
  if (shutdown_started_.load() && !shutdown_finished_.exchange(true)) {
    complete_later(ex_, take_shutdown_handler(), asio::error::operation_aborted);
  }
}

void ServerCore::withdraw(std::function<void()> done) {
  options_.announcer->withdraw([done = std::move(done)](error_code ec, std::string why) {
    if (ec) logger()->warn("withdrawing the server's announcement failed: {}", why.empty() ? ec.message() : why);
    if (done) done();
  });
}

namespace {
// The end of the unregister grace: posts the drain (the wheel only decides).
struct GraceTask {
  std::weak_ptr<ServerCore> core;
  std::chrono::milliseconds drain_timeout;
  void operator()() const {
    auto self = core.lock();
    if (!self) return;
    common::WorkGate::Scope in(self->timer_work());
    if (!in) return;  // stopped meanwhile
    asio::post(self->executor(), [self, d = drain_timeout] { self->begin_drain(d); });
  }
};

// The drain timeout: posts the end of the shutdown (the wheel only decides).
struct DrainTimeoutTask {
  std::weak_ptr<ServerCore> core;
  void operator()() const {
    auto self = core.lock();
    if (!self) return;
    common::WorkGate::Scope in(self->timer_work());
    if (!in) return;  // stopped meanwhile
    asio::post(self->executor(), [self] { self->finish_shutdown(make_error_code(errc::timeout)); });
  }
};
}  // namespace


void ServerCore::start_shutdown(std::chrono::milliseconds drain_timeout,
                                asio::any_completion_handler<Server::ShutdownSignature> handler) {
  bool first = false;
  {
    std::lock_guard lock(shutdown_mu_);
    bool stopped = false;
    {
      std::lock_guard conns(mu_);
      stopped = stopped_;
    }
    if (!stopped && !shutdown_started_.load()) {
      first = true;
      // Not `shutdown_handler_ = std::move(handler)`: Boost 1.81's move
      // assignment of any_completion_handler wraps the handler in itself.
      shutdown_handler_.swap(handler);
      shutdown_started_.store(true);
    }
  }
  if (!first) {  // a second shutdown, or one after stop(): nothing to wait for
    complete_later(ex_, std::move(handler), {});
    return;
  }
  drain_timeout = std::max(drain_timeout, std::chrono::milliseconds(1));
  if (!announced_.exchange(false)) {
    begin_drain(drain_timeout);
    return;
  }
  // Withdrawn first; then serving on for the grace, so clients see it leave
  // before it refuses anything; then the drain.
  const auto grace = options_.unregister_grace;
  logger()->info("shutting down: withdrawing the announcement, then serving for {} ms more", grace.count());
  withdraw([weak = weak_from_this(), grace, drain_timeout] {
    auto self = weak.lock();
    if (!self) return;
    std::error_code tec;
    if (grace.count() > 0) {
      std::lock_guard lock(self->shutdown_mu_);
      if (!self->shutdown_finished_.load()) {
        self->drain_timeout_ = self->timer_.new_timeout(GraceTask{weak, drain_timeout}, grace, tec);
        if (!tec) return;
      }
    }
    asio::post(self->ex_, [self, drain_timeout] { self->begin_drain(drain_timeout); });
  });
}

void ServerCore::begin_drain(std::chrono::milliseconds drain_timeout) {
  if (shutdown_finished_.load() || draining_.exchange(true)) return;  // from now on every new request is refused
  std::shared_ptr<transport::Acceptor> acceptor;
  {
    std::lock_guard lock(mu_);
    acceptor = acceptor_;
  }
  if (acceptor) acceptor->close();
  std::error_code tec;
  {
    std::lock_guard lock(shutdown_mu_);
    drain_timeout_ = timer_.new_timeout(DrainTimeoutTask{weak_from_this()}, drain_timeout, tec);
  }
  logger()->info("shutting down: {} calls in flight, drain timeout {} ms", in_flight(), drain_timeout.count());
  // A request counts itself before it reads draining_: one that check_drained()
  // does not see reads draining_ set and is refused; the last answer of the
  // ones before checks again (finish()), as does each connection that closes.
  asio::post(ex_, [self = shared_from_this(), tec] {
    if (tec) {
      self->finish_shutdown(make_error_code(errc::timeout));
    } else {
      self->check_drained();
    }
  });
}

asio::any_completion_handler<Server::ShutdownSignature> ServerCore::take_shutdown_handler() {
  asio::any_completion_handler<Server::ShutdownSignature> handler;
  std::lock_guard lock(shutdown_mu_);
  handler.swap(shutdown_handler_);
  drain_timeout_.cancel();
  return handler;
}

std::uint64_t ServerCore::in_flight() const {
  std::int64_t n = local_context_->in_flight.load(std::memory_order_relaxed);  // in-process calls (the gateway)
  std::lock_guard lock(mu_);
  for (const auto& [id, c] : channels_) n += c.context ? c.context->in_flight.load(std::memory_order_relaxed) : 0;
  return static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0));
}

void ServerCore::check_drained() {
  if (shutdown_finished_.load()) return;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;  // stop() came first: it completes the shutdown (aborted)
    if (local_context_->in_flight.load() > 0) return;  // in-process calls (the gateway) run to their replies too
    for (const auto& [id, c] : channels_) {
      if (c.context && c.context->in_flight.load() > 0) return;
    }
  }
  finish_shutdown({});
}

void ServerCore::finish_shutdown(boost::system::error_code ec) {
  if (shutdown_finished_.exchange(true)) return;
  auto handler = take_shutdown_handler();
  if (ec) logger()->warn("shutdown: {} calls still in flight after the drain timeout; closing", in_flight());
  stop(/*flush=*/!ec);
  complete_later(ex_, std::move(handler), ec);
}

ServerStats ServerCore::stats() const {
  ServerStats s;
  {
    std::lock_guard lock(mu_);
    s.connections = channels_.size();
    if (heartbeat_task_) s.heartbeats_sent = heartbeat_task_->heartbeats_sent();
    if (close_task_) s.idle_closes = close_task_->closed();
  }
  s.accepted = accepted_.load(std::memory_order_relaxed);
  s.requests = hot_.value(kRequestsCounter);
  s.replies = hot_.value(kRepliesCounter);
  s.errors = errors_.load(std::memory_order_relaxed);
  s.server_timeouts = server_timeouts_.load(std::memory_order_relaxed);
  s.late_replies = late_replies_.load(std::memory_order_relaxed);
  s.cancelled = cancelled_.load(std::memory_order_relaxed);
  s.oversize_replies = oversize_replies_.load(std::memory_order_relaxed);
  s.read_pauses = read_pauses_.load(std::memory_order_relaxed);
  s.memory_returns = memory_return_ ? memory_return_->returns() : 0;
  s.method_not_found = method_not_found_.load(std::memory_order_relaxed);
  s.protocol_errors = bad_input_.total();
  s.bad_magic = bad_input_.count(BadInput::bad_magic);
  s.bad_version = bad_input_.count(BadInput::bad_version);
  s.oversize_frames = bad_input_.count(BadInput::oversize_frame);
  s.malformed_frames = bad_input_.count(BadInput::malformed_frame);
  s.no_hello = bad_input_.count(BadInput::no_hello);
  s.hello_timeouts = bad_input_.count(BadInput::hello_timeout);
  s.in_flight = in_flight();
  s.refused_shutting_down = refused_shutting_down_.load(std::memory_order_relaxed);
  s.refused_offline = refused_offline_.load(std::memory_order_relaxed);
  s.refused_overloaded = refused_overloaded_.load(std::memory_order_relaxed);
  s.refused_connections = refused_connections_.load(std::memory_order_relaxed);
  s.slow_reader_closes = slow_reader_closes_.load(std::memory_order_relaxed);
  s.shed = shed_.load(std::memory_order_relaxed);
  s.queued = static_cast<std::uint64_t>(std::max<std::int64_t>(queued_.load(std::memory_order_relaxed), 0));
  s.concurrency_limit = limiter_.limit();
  return s;
}

std::vector<ConnectionInfo> ServerCore::connections() const {
  std::vector<std::pair<std::shared_ptr<transport::Channel>, Conn>> conns;
  {
    std::lock_guard lock(mu_);
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
    info.sends_heartbeats = options_.send_heartbeats;
    info.state = !ch->is_open() ? ConnectionInfo::State::closing
                 : info.heartbeat.count() == 0 ? ConnectionInfo::State::connecting  // no HELLO yet
                                               : ConnectionInfo::State::ready;
    info.in_flight = static_cast<std::uint64_t>(std::max<std::int64_t>(0, c.context->in_flight.load()));
    out.push_back(std::move(info));
  }
  return out;
}

void ServerCore::set_online(bool online) {
  if (offline_.exchange(!online) == !online) return;  // no change
  logger()->info("server {}: {}", local_endpoint().port(), online ? "online" : "offline");
  if (!options_.announcer || !listening_.load() || shutdown_started_.load()) return;
  if (!online) {
    if (announced_.exchange(false)) withdraw({});
    return;
  }
  options_.announcer->announce(announced_endpoint_, [weak = weak_from_this()](error_code ec, std::string why) {
    auto self = weak.lock();
    if (!self) return;
    if (ec) {
      logger()->warn("announcing the server again failed: {}", why.empty() ? ec.message() : why);
      return;
    }
    // Still online and running: announced. (Offline meanwhile: withdraw again.)
    if (!self->offline_.load() && self->listening_.load() && !self->shutdown_started_.load()) {
      self->announced_.store(true);
    } else {
      self->withdraw({});
    }
  });
}

ServerState ServerCore::state() const {
  ServerState s;
  s.listening = listening_.load();
  s.online = !offline_.load();
  s.draining = shutdown_started_.load();
  s.announced = announced_.load() && options_.announcer && options_.announcer->in_force();
  s.has_announcer = options_.announcer != nullptr;
  return s;
}

}  // namespace detail

// ---------------------------------------------------------------- Responder

Responder::Responder(Responder&& other) noexcept : slot_(std::move(other.slot_)) {}

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    Responder dying(std::move(*this));
    slot_ = std::move(other.slot_);
  }
  return *this;
}

Responder::~Responder() {
  if (!slot_) return;
  if (!slot_->answered()) {
    // Destroyed during unwinding: the handler threw (the server logs what).
    const bool threw = std::uncaught_exceptions() > 0;
    slot_->core->finish(*slot_, Status::server_error,
                        "the handler of '" + slot_->method +
                            (threw ? "' threw" : "' dropped its Responder without replying"),
                        {}, detail::ServerCore::Answer::handler);
  }
}

bool Responder::reply(std::string payload, transport::Attachments attachments) {
  return slot_ && slot_->core->finish(*slot_, Status::ok, std::move(payload), std::move(attachments),
                                      detail::ServerCore::Answer::handler);
}

bool Responder::fail(errc code, std::string message) {
  return slot_ && slot_->core->finish(*slot_, error_status(code), std::move(message), {},
                                      detail::ServerCore::Answer::handler);
}

std::optional<std::chrono::steady_clock::time_point> Responder::deadline() const noexcept {
  return slot_ ? slot_->deadline : std::nullopt;
}

bool Responder::expired() const noexcept {
  return slot_ && slot_->deadline && slot_->core->now() >= *slot_->deadline;
}

bool Responder::pending() const noexcept {
  return slot_ && !slot_->answered();
}

bool Responder::cancelled() const noexcept {
  try {
    return slot_ && slot_->conn->cancels.check(slot_->request_id, /*forget=*/false);
  } catch (...) {  // std::mutex::lock may throw system_error in theory
    return false;
  }
}

// ---------------------------------------------------------------- Server

namespace {
ServerOptions validated(ServerOptions o) {
  validate(o);
  return o;
}
}  // namespace

Server::Server(asio::any_io_executor ex, timer::Timer& timer, ServerOptions options)
    : core_(std::make_shared<detail::ServerCore>(std::move(ex), timer, validated(std::move(options)))) {}

Server::~Server() { stop(); }

void Server::handle(std::string method, Handler handler, MethodOptions options) {
  core_->handle(std::move(method), std::move(handler), options);
}
error_code Server::listen(const asio::ip::tcp::endpoint& endpoint) {
  std::string message;
  return core_->listen(endpoint, message);
}
error_code Server::listen(const asio::ip::tcp::endpoint& endpoint, std::string& message) {
  return core_->listen(endpoint, message);
}
asio::ip::tcp::endpoint Server::local_endpoint() const { return core_->local_endpoint(); }
void Server::stop() { core_->stop(); }
void Server::start_shutdown(std::chrono::milliseconds drain_timeout,
                            boost::asio::any_completion_handler<ShutdownSignature> handler) {
  core_->start_shutdown(drain_timeout, std::move(handler));
}
ServerStats Server::stats() const { return core_->stats(); }
std::vector<MethodStats> Server::method_stats() const { return core_->method_stats(); }
std::vector<TimeoutRecord> Server::recent_timeouts() const { return core_->recent_timeouts(); }
std::vector<ConnectionInfo> Server::connections() const { return core_->connections(); }
void Server::set_online(bool online) { core_->set_online(online); }
ServerState Server::state() const { return core_->state(); }

void Server::start_invoke(std::string method, std::string payload, std::chrono::milliseconds timeout,
                          boost::asio::any_completion_handler<InvokeSignature> handler) {
  auto shared = std::make_shared<boost::asio::any_completion_handler<InvokeSignature>>();
  shared->swap(handler);
  auto ex = core_->executor();
  auto done = [shared, ex](Status status, std::string body, transport::Attachments attached) {
    Response r;
    const auto ec = status_error(status);
    if (ec) {
      r.error_message = std::move(body);
    } else {
      r.payload = std::move(body);
      r.attachments = std::move(attached);
    }
    auto assoc = asio::get_associated_executor(*shared, ex);
    asio::post(ex, asio::bind_executor(assoc, [shared, ec, r = std::move(r)]() mutable {
      std::move (*shared)(ec, std::move(r));
    }));
  };
  // Handlers run on the executor, as for a request read from a connection.
  asio::post(ex, [core = core_, m = std::move(method), p = std::move(payload), timeout, done = std::move(done)]() mutable {
    core->invoke(std::move(m), std::move(p), {}, timeout, std::move(done));
  });
}

}  // namespace wheelrpc::rpc
