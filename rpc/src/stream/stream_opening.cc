// StreamCore's opening: bound to the connection's wire that carries it,
// the client's metadata and deadline (server), and the server's answer to
// the opening, accepted or refused once its interceptors decided.

#include <string>
#include <utility>

#include "stream/stream_core.h"
#include "stream/stream_pending.h"

namespace wheelrpc::rpc::detail {
using boost::system::error_code;

void StreamCore::set_request(transport::Attachments metadata, std::optional<TimePoint> deadline) {
  metadata_ = std::move(metadata);
  if (deadline) {
    common::LockGuard lock(mu_);
    deadline_at_ = deadline;
    arm(StreamTimer::deadline, *deadline);
  }
}

bool StreamCore::accept_open() {
  common::LockGuard lock(mu_);
  if (ended_ || !wire_) return false;
  std::string none;
  wire_->send_open_answer(id(), {}, none);
  return true;
}

bool StreamCore::refuse_open(const error_code& ec, std::string message) {
  Pending p;
  {
    common::LockGuard lock(mu_);
    if (ended_) return false;
    if (wire_) {
      std::string said = message;
      wire_->send_open_answer(id(), ec, said);
    }
    end_locked(ec, std::move(message), StreamEnd::refused, Wire::none, p, /*raw=*/true);
  }
  run(p);
  return true;
}

bool StreamCore::bind(std::shared_ptr<StreamWire> wire, std::weak_ptr<StreamTable> table, std::uint64_t id,
                      std::uint32_t peer_window, std::uint32_t peer_max_body, std::string peer,
                      transport::CompressionSet peer_accept, std::uint32_t receive_window) {
  peer_accept_.store(peer_accept.bits(), std::memory_order_relaxed);
  common::LockGuard lock(mu_);
  if (ended_) return false;
  if (receive_window != 0) window_ = receive_window;
  wire_ = std::move(wire);
  table_ = std::move(table);
  id_.store(id, std::memory_order_relaxed);
  peer_window_ = peer_window;
  peer_max_body_ = peer_max_body;
  if (s_.message_timeout.count() > 0) {  // counted from when messages can flow
    last_message_ = now();
    arm(StreamTimer::message_idle, last_message_ + s_.message_timeout);
  }
  send_credit_ = peer_window;
  peer_ = std::move(peer);
  bound_ = true;
  return true;
}

}  // namespace wheelrpc::rpc::detail
