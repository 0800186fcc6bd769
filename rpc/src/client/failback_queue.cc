#include "client/failback_queue.h"

#include <vector>

#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/errc.h>

#include "base/log.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;

FailbackQueue::FailbackQueue(asio::any_io_executor ex, timer::Timer& timer, FailbackOptions options, Send send)
    : ex_(std::move(ex)), timer_(timer), options_(options), send_(std::move(send)) {}

bool FailbackQueue::fixable(error_code ec) noexcept {
  return ec == errc::unavailable || ec == errc::connection_lost || ec == errc::timeout || ec == errc::server_timeout ||
         ec == errc::too_many_pending || ec == errc::resource_exhausted;
}

void FailbackQueue::on_result(Delivery delivery, error_code ec, const std::string& message) {
  if (!ec) {
    delivered_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (ec == errc::cancelled) return;  // the client closed
  if (!fixable(ec)) {
    given_up_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("failback '{}': giving up, retrying cannot fix this: {}", delivery.method, message);
    return;
  }
  if (delivery.tries > options_.retries) {
    given_up_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("failback '{}': giving up after {} tries: {}", delivery.method, delivery.tries, message);
    return;
  }
  common::LockGuard lock(mu_);
  if (closed_) return;
  if (waiting_.size() >= options_.max_pending) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    logger()->warn("failback '{}': dropped, {} retries already waiting (max_pending): {}", delivery.method,
                   waiting_.size(), message);
    return;
  }
  logger()->info("failback '{}': try {} failed, retrying in {} ms: {}", delivery.method, delivery.tries,
                 options_.interval.count(), message);
  // The task runs on the timer's worker: it only posts the resend.
  auto task = std::make_shared<RetryTimerTask>(std::move(delivery),
                                               [weak = weak_from_this()](std::shared_ptr<RetryTimerTask> t) {
                                                 auto self = weak.lock();
                                                 if (!self) return;
                                                 common::WorkGate::Scope in(self->gate_);
                                                 if (!in) return;  // closed
                                                 asio::post(self->ex_, [self, t = std::move(t)] { self->resend(t); });
                                               });
  RetryTimerTask* key = task.get();
  std::error_code tec;
  auto timeout = timer_.new_timeout(std::shared_ptr<timer::TimerTask>(task), options_.interval, tec);
  if (tec) {
    given_up_.fetch_add(1, std::memory_order_relaxed);
    logger()->error("failback '{}': cannot schedule a retry: {}", key->delivery().method, tec.message());
    return;
  }
  waiting_.emplace(key, std::make_pair(std::move(task), timeout));
}

void FailbackQueue::resend(const std::shared_ptr<RetryTimerTask>& task) {
  {
    common::LockGuard lock(mu_);
    if (closed_ || waiting_.erase(task.get()) == 0) return;
  }
  retries_.fetch_add(1, std::memory_order_relaxed);
  auto delivery = task->take();
  ++delivery.tries;
  send_(std::move(delivery));
}

void FailbackQueue::close() {
  std::vector<timer::Timeout> timeouts;
  {
    common::LockGuard lock(mu_);
    if (closed_) return;
    closed_ = true;
    for (auto& [key, entry] : waiting_) timeouts.push_back(entry.second);
    waiting_.clear();
  }
  for (auto& t : timeouts) t.cancel();
  gate_.close_and_wait();
}

std::uint64_t FailbackQueue::pending() const {
  common::LockGuard lock(mu_);
  return waiting_.size();
}

}  // namespace wheelrpc::rpc::detail
