#pragma once
// One call in flight, shared by the code paths that may complete it: the reply
// (connection strand), the deadline (timer worker), the cancellation slot (the
// user's thread), a lost connection and close(). `done` is the exactly-once
// gate: whoever flips it first completes the call; everyone else backs off.
//
// References (intrusive, `refs`): one for the call's place in the client's
// books (the pending table or the waiting list), one for the timer while the
// deadline task may still run, one for an installed cancellation handler, and
// short-lived ones for code that uses the call outside the client's lock.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/any_completion_handler.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/timeout.h>

namespace wheelrpc::rpc::detail {

class ClientConnection;

struct Call {
  using Clock = std::chrono::steady_clock;

  std::atomic<int> refs{1};
  std::atomic<bool> done{false};
  std::shared_ptr<ClientCore> core;
  std::string method;
  std::string payload;
  transport::Attachments attachments;
  Clock::time_point start;
  bool has_deadline = true;
  bool waited = false;  // went through the waiting list before being sent
  std::chrono::milliseconds budget{0};
  Clock::time_point deadline;
  timer::Timeout timeout;
  boost::asio::any_completion_handler<Client::Signature> handler;

  // Guarded by the core's mutex.
  std::uint64_t id = 0;                // non-zero once in the pending table
  ClientConnection* conn = nullptr;    // where it was sent
  bool waiting = false;                // in the waiting list
};

inline void add_ref(Call* c) noexcept { c->refs.fetch_add(1, std::memory_order_relaxed); }
inline void release(Call* c) noexcept {
  if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::unique_ptr<Call> owned(c);  // last reference: created by ClientCore::start_call
  }
}

}  // namespace wheelrpc::rpc::detail
