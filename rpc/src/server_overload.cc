// Overload control of a server: deadline-aware admission (shed what nobody
// waits for), the server-wide concurrency limit, and the optional handler
// executor whose queue makes a backlog visible.
#include <algorithm>
#include <optional>
#include <string>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "server_core.h"

namespace wheelrpc::rpc::detail {
namespace {
std::int64_t micros(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}
const char* limit_kind(const ConcurrencyLimit& limit) {
  return limit.kind() == ConcurrencyLimit::Kind::automatic ? "auto" : "fixed";
}
}  // namespace

void ServerCore::count_shed(const ReplySlot& slot) {
  shed_.fetch_add(1, std::memory_order_relaxed);
  if (slot.cells) slot.cells->shed();
}

// A frame handled after others of the same read counts from when it arrived
// (receipt_time): its budget may be spent by the handlers before it.
bool ServerCore::shed_if_spent(ReplySlot& slot) {
  const auto t = now();
  if (t < *slot.deadline) return false;
  count_shed(slot);
  finish(slot, Status::server_timeout,
         fmt::format("the deadline of '{}' had passed when the server got to it ({} us after it was read): "
                     "not processed",
                     slot.method, micros(t - slot.received)),
         {});
  return true;
}

bool ServerCore::admit_under_limit(ReplySlot& slot) {
  if (limiter_.try_acquire()) {
    slot.limited = true;  // given back by finish()
    return true;
  }
  refused_overloaded_.fetch_add(1, std::memory_order_relaxed);
  finish(slot, Status::overloaded,
         fmt::format("the server is at its concurrency limit of {} requests at once ({}, "
                     "ServerOptions::max_concurrency): '{}' not processed",
                     limiter_.limit(), limit_kind(options_.max_concurrency), slot.method),
         {});
  return false;
}

void ServerCore::release_limit(const ReplySlot& slot) {
  const auto t = now();
  const auto latency = t - slot.received;
  const auto queued = slot.queued_ns.load(std::memory_order_relaxed);
  limiter_.release(latency, queued < 0 ? latency : std::chrono::nanoseconds(queued), queued >= 0, t);
}

void ServerCore::queue_handler(const Method& method, Request&& req, ReplySlotPtr&& slot, std::uint64_t conn_id) {
  // `method` lives in handlers_, fixed once listening; the slot's connection
  // context keeps this core alive until the job has run.
  if (queued_.fetch_add(1, std::memory_order_relaxed) == 0) queue_emptied(now());
  boost::asio::post(options_.handler_executor,
                    [this, &method, req = std::move(req), slot = std::move(slot), conn_id]() mutable {
                      const auto t = now();
                      if (queued_.fetch_sub(1, std::memory_order_relaxed) == 1) queue_emptied(t);
                      if (options_.deadline_admission) {
                        if (slot->answered()) {
                          count_shed(*slot);  // its deadline answered it while it waited
                          return;
                        }
                        if (auto why = shed_reason(method, *slot, t)) {
                          count_shed(*slot);
                          finish(*slot, Status::server_timeout, std::move(*why), {});
                          return;
                        }
                      }
                      slot->queued_ns.store(std::chrono::nanoseconds(t - slot->received).count(), std::memory_order_relaxed);
                      slot->service_ns = method.service_ns.get();  // the handler's answer adds to it (finish)
                      run_handler(method, std::move(req), std::move(slot), conn_id);
                      // Nothing of this core is touched past here: once the reply is out,
                      // the server may be gone.
                    });
}

std::optional<std::string> ServerCore::shed_reason(const Method& method, const ReplySlot& slot,
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
    return fmt::format("'{}' waited {} us for a handler thread; {} us of its budget left, less than the {} us "
                       "its handler has recently taken: not processed",
                       slot.method, micros(waited), micros(*slot.deadline - t), micros(needs));
  }
  // A queue a couple of handler runs deep is no standing queue: the target
  // is at least twice what the method's handler has recently taken.
  const auto target = std::max<std::chrono::nanoseconds>(options_.queue_target, 2 * needs);
  if (options_.queue_target.count() > 0 && waited > target) {
    const std::chrono::steady_clock::time_point emptied{
        std::chrono::nanoseconds(queue_emptied_ns_.load(std::memory_order_relaxed))};
    if (t - emptied > options_.queue_interval) {
      return fmt::format("'{}' waited {} us for a handler thread in a queue not empty for {} ms, over its "
                         "target of {} us (ServerOptions::queue_target, or twice its handler's recent time): "
                         "not processed",
                         slot.method, micros(waited),
                         std::chrono::duration_cast<std::chrono::milliseconds>(t - emptied).count(),
                         micros(target));
    }
  }
  return std::nullopt;
}

void ServerCore::queue_emptied(std::chrono::steady_clock::time_point t) {
  queue_emptied_ns_.store(std::chrono::nanoseconds(t.time_since_epoch()).count(), std::memory_order_relaxed);
}

// A moving average over about the last eight requests (each weighs 1/8),
// kept by plain loads and stores: two handlers answering at once may lose
// one sample, never tear one.
void ServerCore::record_service_time(std::atomic<std::int64_t>& avg, std::chrono::nanoseconds took) {
  const std::int64_t sample = std::max<std::int64_t>(took.count(), 0);
  const std::int64_t before = avg.load(std::memory_order_relaxed);
  avg.store(before == 0 ? sample : before + (sample - before) / 8, std::memory_order_relaxed);
}

}  // namespace wheelrpc::rpc::detail
