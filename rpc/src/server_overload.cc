// Overload control of a server: deadline-aware admission (shed what nobody
// waits for), the server-wide concurrency limit, and the optional handler
// executor whose queue makes a backlog visible.
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
  queued_.fetch_add(1, std::memory_order_relaxed);
  boost::asio::post(options_.handler_executor,
                    [this, &method, req = std::move(req), slot = std::move(slot), conn_id]() mutable {
                      queued_.fetch_sub(1, std::memory_order_relaxed);
                      const auto t = now();
                      if (options_.deadline_admission) {
                        if (slot->answered()) {
                          count_shed(*slot);  // its deadline answered it while it waited
                          return;
                        }
                        if (slot->deadline && t >= *slot->deadline) {
                          count_shed(*slot);
                          finish(*slot, Status::server_timeout,
                                 fmt::format("'{}' waited {} us for a handler thread, past its deadline: "
                                             "not processed",
                                             slot->method, micros(t - slot->received)),
                                 {});
                          return;
                        }
                      }
                      slot->queued_ns.store(std::chrono::nanoseconds(t - slot->received).count(), std::memory_order_relaxed);
                      run_handler(method, std::move(req), std::move(slot), conn_id);
                    });
}

}  // namespace wheelrpc::rpc::detail
