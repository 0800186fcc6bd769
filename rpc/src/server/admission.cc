// Admission and overload control of a server: the refusal ladder,
// deadline-aware admission (shed what nobody waits for), the per-method and
// server-wide concurrency limits, and the optional handler executor whose
// queue makes a backlog visible.
#include "server/admission.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "server/health_service.h"
#include "server/server_host.h"
#include "server/server_interception.h"
#include "server/server_shutdown.h"

namespace wheelrpc::rpc::detail {
namespace {
std::int64_t micros(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}
const char* limit_kind(const ConcurrencyLimit& limit) {
  return limit.kind() == ConcurrencyLimit::Kind::automatic ? "auto" : "fixed";
}
}  // namespace

Admission::Admission(ServerHost& host, const ServerOptions& options, const ServerShutdown& shutdown,
                     MethodTable& methods, const StreamMethods& streams, std::chrono::steady_clock::time_point now)
    : host_(host),
      options_(options),
      shutdown_(shutdown),
      methods_(methods),
      streams_(streams),
      limiter_(options.overload.max_concurrency, now) {
  if (options_.metrics) unknown_cells_ = &methods_.get("(unknown)");
}

void Admission::add_method(std::string name, Server::Handler handler, MethodOptions options) {
  MethodCells* cells = options_.metrics ? &methods_.get(name) : nullptr;
  if (options.timeout.count() < 0) {
    throw std::invalid_argument("MethodOptions::timeout of '" + name + "' must be 0 (none) or positive, got " +
                                std::to_string(options.timeout.count()) + " ms");
  }
  ServerMethod m{std::move(handler), cells, std::make_unique<MethodLimits>(options),
                 std::make_unique<std::atomic<std::size_t>>(0), nullptr};
  if (options_.handler_executor) m.service_ns = std::make_unique<std::atomic<std::int64_t>>(0);
  handlers_[std::move(name)] = std::move(m);
}

void Admission::apply_rules(const ServerRules* rules) noexcept {
  for (auto& [name, m] : handlers_) {
    if (is_library_method(name)) continue;
    m.limits->apply(rules ? rules->for_method(name) : ServerMethodOverrides{});
  }
}

const ServerMethod* Admission::admit(ReplySlot& slot, RequestOrigin origin) {
  const auto it = handlers_.find(slot.method);
  const ServerMethod* method = it != handlers_.end() ? &it->second : nullptr;
  if (method) {
    slot.method = it->first;  // the server's own name: the request's may go to the handler
  } else {
    slot.own_method();
  }
  slot.cells = method ? method->cells : unknown_cells_;
  if (slot.cells) slot.cells->started();
  // A request read from a connection counted itself (in_flight) before it
  // reads draining: see ServerShutdown::begin_drain. Only an in-process call
  // can come while the server does not listen (before listen, after stop).
  // The health service answers while offline or draining (NOT_SERVING is
  // its answer then); checked only on those paths, off the common one.
  const bool draining = shutdown_.draining();
  const bool refusing = draining || shutdown_.offline();
  const bool health = refusing && HealthService::serves_while_refusing(options_, slot.method);
  if ((draining && !health) || (origin == RequestOrigin::local && !shutdown_.listening())) {
    return refuse(
        slot, refused_shutting_down_, Status::shutting_down,
        fmt::format("{}: '{}' not processed", draining ? "server shutting down" : "server not listening", slot.method));
  }
  if (shutdown_.offline() && !health) {
    return refuse(slot, refused_offline_, Status::shutting_down,
                  fmt::format("server offline: '{}' not processed", slot.method));
  }
  if (!method) [[unlikely]] {
    if (const StreamMethod* stream = streams_.find(slot.method_storage)) {
      return refuse(slot, method_not_found_, Status::method_not_found,
                    called_as_call(slot.method_storage, stream->kind));
    }
    return refuse(slot, method_not_found_, Status::method_not_found, fmt::format("no method '{}'", slot.method));
  }
  // The method's own timeout bounds a caller that set none, or a later deadline.
  if (const auto timeout = method->limits->timeout(); timeout.count() != 0) [[unlikely]] {
    const auto bound = slot.received + timeout;
    if (!slot.deadline || bound < *slot.deadline) slot.deadline = bound;
  }
  // Only a request read from a connection may have waited (behind the
  // handlers of the frames before it in the same read) before it got here.
  if (origin == RequestOrigin::channel && options_.overload.deadline_admission && slot.deadline &&
      shed_if_spent(slot)) {
    return nullptr;
  }
  if (!admit_method(*method, slot) || !admit_server(slot)) return nullptr;
  return method;
}

void Admission::refuse_undecodable(ReplySlot& slot, const boost::system::error_code& ec, std::string message) {
  const auto it = handlers_.find(slot.method);
  if (it != handlers_.end()) {
    slot.method = it->first;
  } else {
    slot.own_method();
  }
  slot.cells = it != handlers_.end() ? it->second.cells : unknown_cells_;
  if (slot.cells) slot.cells->started();
  refuse(slot, undecodable_, error_status(ec), std::move(message));
}

const ServerMethod* Admission::refuse(ReplySlot& slot, std::atomic<std::uint64_t>& counter, Status status,
                                      std::string message) {
  counter.fetch_add(1, std::memory_order_relaxed);
  host_.finish(slot, status, std::move(message), {}, ServerHost::Answer::server);
  return nullptr;
}

void Admission::count_shed(const ReplySlot& slot) {
  shed_.fetch_add(1, std::memory_order_relaxed);
  if (slot.cells) slot.cells->shed();
}

// A frame handled after others of the same read counts from when it arrived
// (ServerWireSettings::receipt_time): its budget may be spent by the handlers before it.
bool Admission::shed_if_spent(ReplySlot& slot) {
  const auto t = server_now(options_);
  if (t < *slot.deadline) return false;
  count_shed(slot);
  host_.finish(slot, Status::server_timeout,
               fmt::format("the deadline of '{}' had passed when the server got to it ({} us after it was read): "
                           "not processed",
                           slot.method, micros(t - slot.received)),
               {}, ServerHost::Answer::server);
  return true;
}

bool Admission::admit_method(const ServerMethod& method, ReplySlot& slot) {
  const std::size_t limit = method.limits->max_concurrency();
  if (limit == 0) return true;
  if (method.running->fetch_add(1) < limit) {
    slot.running = method.running.get();  // given back when the slot goes: the handler let go of it
    return true;
  }
  method.running->fetch_sub(1);
  refused_overloaded_.fetch_add(1, std::memory_order_relaxed);
  host_.finish(
      slot, Status::overloaded,
      fmt::format("'{}' is at its limit of {} calls at once (max_concurrency): not processed", slot.method, limit), {},
      ServerHost::Answer::server);
  return false;
}

bool Admission::admit_under_limit(ReplySlot& slot) {
  if (limiter_.try_acquire()) {
    slot.limited = true;  // given back by finish()
    return true;
  }
  refused_overloaded_.fetch_add(1, std::memory_order_relaxed);
  host_.finish(slot, Status::overloaded,
               fmt::format("the server is at its concurrency limit of {} requests at once ({}, "
                           "ServerOptions::overload.max_concurrency): '{}' not processed",
                           limiter_.limit(), limit_kind(options_.overload.max_concurrency), slot.method),
               {}, ServerHost::Answer::server);
  return false;
}

std::vector<std::string> Admission::method_names() const {
  std::vector<std::string> out;
  out.reserve(handlers_.size());
  for (const auto& [name, m] : handlers_) out.push_back(name);
  return out;
}

std::optional<std::string> Admission::stream_overloaded(const std::string& method) {
  if (!limiter_.enabled() || limiter_.in_flight() < limiter_.limit()) return std::nullopt;
  refused_overloaded_.fetch_add(1, std::memory_order_relaxed);
  return fmt::format(
      "the server is at its concurrency limit of {} requests at once ({}, "
      "ServerOptions::overload.max_concurrency): stream '{}' not opened",
      limiter_.limit(), limit_kind(options_.overload.max_concurrency), method);
}

void Admission::release_limit(const ReplySlot& slot) {
  const auto t = server_now(options_);
  const auto latency = t - slot.received;
  const auto queued = slot.queued_ns.load(std::memory_order_relaxed);
  limiter_.release(latency, queued < 0 ? latency : std::chrono::nanoseconds(queued), queued >= 0, t);
}

bool Admission::dispatch(const ServerMethod& method, Request& req, ReplySlotPtr& slot, std::uint64_t conn_id) {
  // Interceptors run where the handler would (ServerHost::run_handler).
  if (!options_.interceptors.empty()) [[unlikely]] {
    slot->interception = std::make_shared<ServerInterception>(host_.shared_host());
  }
  if (options_.handler_executor) {
    queue_handler(method, std::move(req), std::move(slot), conn_id);
    return true;
  }
  // Run by the caller, inline: no call through the host on the request path.
  slot->queued_ns.store(0, std::memory_order_relaxed);
  return false;
}

void Admission::queue_handler(const ServerMethod& method, Request&& req, ReplySlotPtr&& slot, std::uint64_t conn_id) {
  // `method` lives in handlers_, fixed once listening; the slot's connection
  // context keeps the server (and this) alive until the job has run.
  if (queued_.fetch_add(1, std::memory_order_relaxed) == 0) queue_emptied(server_now(options_));
  boost::asio::post(
      options_.handler_executor, [this, &method, req = std::move(req), slot = std::move(slot), conn_id]() mutable {
        const auto t = server_now(options_);
        if (queued_.fetch_sub(1, std::memory_order_relaxed) == 1) queue_emptied(t);
        if (options_.overload.deadline_admission) {
          if (slot->answered()) {
            count_shed(*slot);  // its deadline answered it while it waited
            return;
          }
          if (auto why = shed_reason(method, *slot, t)) {
            count_shed(*slot);
            host_.finish(*slot, Status::server_timeout, std::move(*why), {}, ServerHost::Answer::server);
            return;
          }
        }
        slot->queued_ns.store(std::chrono::nanoseconds(t - slot->received).count(), std::memory_order_relaxed);
        if (options_.load_reports.enabled)  // what the load reports read as the queue's wait
          last_wait_ns_.store(slot->queued_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
        slot->service_ns = method.service_ns.get();  // the handler's answer adds to it (finish)
        host_.run_handler(method, std::move(req), std::move(slot), conn_id);
        // Nothing of the server is touched past here: once the reply is out,
        // the server may be gone.
      });
}

std::optional<std::string> Admission::shed_reason(const ServerMethod& method, const ReplySlot& slot,
                                                  std::chrono::steady_clock::time_point t) const {
  const auto waited = t - slot.received;
  if (slot.deadline && t >= *slot.deadline) {
    return fmt::format("'{}' waited {} us for a handler thread, past its deadline: not processed", slot.method,
                       micros(waited));
  }
  // Too little left for what the handler has been taking: it would answer
  // after the caller stopped waiting.
  const std::chrono::nanoseconds needs(method.service_ns->load(std::memory_order_relaxed));
  if (slot.deadline && t + needs > *slot.deadline) {
    return fmt::format(
        "'{}' waited {} us for a handler thread; {} us of its budget left, less than the {} us "
        "its handler has recently taken: not processed",
        slot.method, micros(waited), micros(*slot.deadline - t), micros(needs));
  }
  // A queue a couple of handler runs deep is no standing queue: the target
  // is at least twice what the method's handler has recently taken.
  const auto target = std::max<std::chrono::nanoseconds>(options_.overload.queue_target, 2 * needs);
  if (options_.overload.queue_target.count() > 0 && waited > target) {
    const std::chrono::steady_clock::time_point emptied{
        std::chrono::nanoseconds(queue_emptied_ns_.load(std::memory_order_relaxed))};
    if (t - emptied > options_.overload.queue_interval) {
      return fmt::format(
          "'{}' waited {} us for a handler thread in a queue not empty for {} ms, over its "
          "target of {} us (ServerOptions::overload.queue_target, or twice its handler's recent "
          "time): not processed",
          slot.method, micros(waited), std::chrono::duration_cast<std::chrono::milliseconds>(t - emptied).count(),
          micros(target));
    }
  }
  return std::nullopt;
}

void Admission::queue_emptied(std::chrono::steady_clock::time_point t) {
  queue_emptied_ns_.store(std::chrono::nanoseconds(t.time_since_epoch()).count(), std::memory_order_relaxed);
}

// A moving average over about the last eight requests (each weighs 1/8),
// kept by plain loads and stores: two handlers answering at once may lose
// one sample, never tear one.
void Admission::record_service_time(std::atomic<std::int64_t>& avg, std::chrono::nanoseconds took) {
  const std::int64_t sample = std::max<std::int64_t>(took.count(), 0);
  const std::int64_t before = avg.load(std::memory_order_relaxed);
  avg.store(before == 0 ? sample : before + (sample - before) / 8, std::memory_order_relaxed);
}

void Admission::add_stats(ServerStats& s) const {
  s.method_not_found = method_not_found_.load(std::memory_order_relaxed);
  s.undecodable = undecodable_.load(std::memory_order_relaxed);
  s.refused_shutting_down = refused_shutting_down_.load(std::memory_order_relaxed);
  s.refused_offline = refused_offline_.load(std::memory_order_relaxed);
  s.refused_overloaded = refused_overloaded_.load(std::memory_order_relaxed);
  s.shed = shed_.load(std::memory_order_relaxed);
  s.queued = static_cast<std::uint64_t>(std::max<std::int64_t>(queued_.load(std::memory_order_relaxed), 0));
  s.concurrency_limit = limiter_.limit();
}

}  // namespace wheelrpc::rpc::detail
