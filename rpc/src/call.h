#pragma once
// One call in flight, shared by the code paths that may complete it: a reply
// (connection strand), the deadline (timer worker), the cancellation slot (the
// user's thread), a lost connection, a retry or hedge timer, and close().
// `done` is the exactly-once gate, flipped under the client's lock: whoever
// flips it completes the call; everyone else backs off.
//
// A call makes one or more attempts (retries, hedges); each sent attempt has
// its own request id in the pending table. The call keeps one deadline on the
// wheel for its whole life, plus at most one "aux" timeout for the nearest of:
// an attempt's own timeout, the next hedge, the end of a retry backoff.
//
// References (intrusive, `refs`): one per place in the client's books (each
// pending-table entry, the waiting list, the backoff set), one for each
// scheduled timeout (deadline, aux), one for an installed cancellation
// handler, and short-lived ones for code that uses the call outside the lock.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/container/small_vector.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/timer/timeout.h>

namespace wheelrpc::rpc::detail {

class ClientConnection;

struct Call {
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::time_point kNever = Clock::time_point::max();

  /// One attempt that was sent and awaits its reply.
  struct Attempt {
    std::uint64_t id = 0;              // its pending-table key
    ClientConnection* conn = nullptr;  // where it went
    Clock::time_point sent;
    Clock::time_point expires = kNever;  // its own timeout, when earlier than the call's deadline
    int number = 0;                      // 1-based
  };
  enum class Phase : std::uint8_t { idle, waiting, sent, backoff };

  std::atomic<int> refs{1};
  std::atomic<bool> done{false};
  std::shared_ptr<ClientCore> core;
  std::string method;
  std::string payload;  // kept for retries; lent to a sender under send_mu
  transport::Attachments attachments;
  std::mutex send_mu;   // serialises attempts borrowing payload/attachments
  Clock::time_point start;
  bool has_deadline = true;
  bool inherited = false;  // the deadline is that of the request being served
  // The deadline in force where the call started (the request being served),
  // put back in force while the completion runs.
  std::optional<Clock::time_point> context;
  std::chrono::milliseconds budget{0};
  Clock::time_point deadline;
  timer::Timeout timeout;  // the deadline's
  boost::asio::any_completion_handler<Client::Signature> handler;

  // The call's retry policy (fixed at start).
  int max_attempts = 3;
  bool idempotent = false;
  bool wait_for_ready = true;
  std::chrono::milliseconds attempt_timeout{0};
  std::chrono::milliseconds hedge_delay{0};

  // Guarded by the core's mutex.
  Phase phase = Phase::idle;
  bool waited = false;                // went through the waiting list
  int attempts = 0;                   // started so far
  boost::container::small_vector<Attempt, 1> live;          // sent, awaiting a reply
  boost::container::small_vector<ClientConnection*, 2> tried;  // providers tried
  ClientConnection* conn = nullptr;       // of the latest attempt (for messages)
  ClientConnection* last_failed = nullptr;
  boost::system::error_code last_ec;      // of the latest failed attempt
  std::string last_error;
  Clock::time_point retry_at = kNever;    // phase backoff: when the next attempt starts
  Clock::time_point hedge_at = kNever;    // phase sent: when the next hedge starts
  timer::Timeout aux;
  Clock::time_point aux_at = kNever;
};

inline void add_ref(Call* c, int n = 1) noexcept { c->refs.fetch_add(n, std::memory_order_relaxed); }
inline void release(Call* c) noexcept {
  if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::unique_ptr<Call> owned(c);  // last reference: created by ClientCore::start_call
  }
}

}  // namespace wheelrpc::rpc::detail
