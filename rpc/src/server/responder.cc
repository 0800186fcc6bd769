// Responder, the handler's end of a ReplySlot: every answer goes through
// ServerCore::finish.
#include <exception>

#include <fmt/format.h>

#include <wheelrpc/rpc/server.h>

#include "server/reply_slot.h"
#include "server/server_core.h"

namespace wheelrpc::rpc {

namespace detail {
void intrusive_ptr_add_ref(ReplySlot* s) noexcept { s->refs.fetch_add(1, std::memory_order_relaxed); }
void intrusive_ptr_release(ReplySlot* s) noexcept {
  if (common::drop_reference(s->refs)) delete s;
}
}  // namespace detail

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
                        fmt::format("the handler of '{}' {}", slot_->method,
                                    threw ? "threw" : "dropped its Responder without replying"),
                        {}, detail::ServerCore::Answer::handler);
  }
}

bool Responder::reply(std::string payload, transport::Attachments attachments) {
  return slot_ && slot_->core->finish(*slot_, Status::ok, std::move(payload), std::move(attachments),
                                      detail::ServerCore::Answer::handler);
}

bool Responder::fail(errc code, std::string message, transport::Attachments metadata) {
  return slot_ && slot_->core->finish(*slot_, error_status(code), std::move(message), std::move(metadata),
                                      detail::ServerCore::Answer::handler);
}

bool Responder::fail(StatusCode code, std::string message, transport::Attachments metadata) {
  return fail(make_error_code(code), std::move(message), std::move(metadata));
}

bool Responder::fail(const boost::system::error_code& ec, std::string message, transport::Attachments metadata) {
  return slot_ && slot_->core->finish(*slot_, error_status(ec), std::move(message), std::move(metadata),
                                      detail::ServerCore::Answer::handler);
}

void Responder::set_compression(transport::Compression compression) noexcept {
  if (slot_) slot_->reply_compression.store(compression, std::memory_order_relaxed);
}

bool Responder::request_compressed() const noexcept { return slot_ && slot_->request_compressed; }

boost::asio::any_io_executor Responder::executor() const {
  if (!slot_) return {};
  return slot_->core->handler_executor();
}

std::optional<std::chrono::steady_clock::time_point> Responder::deadline() const noexcept {
  return slot_ ? slot_->deadline : std::nullopt;
}

bool Responder::expired() const noexcept { return slot_ && slot_->deadline && slot_->core->now() >= *slot_->deadline; }

std::chrono::nanoseconds Responder::remaining() const noexcept {
  if (!slot_ || !slot_->deadline) return std::chrono::nanoseconds::max();
  const auto left = *slot_->deadline - slot_->core->now();
  return left.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(left) : std::chrono::nanoseconds(0);
}

bool Responder::pending() const noexcept { return slot_ && !slot_->answered(); }

bool Responder::cancelled() const noexcept {
  try {
    return slot_ && slot_->conn->cancels.check(slot_->request_id, /*forget=*/false);
  } catch (...) {  // std::mutex::lock may throw system_error in theory
    return false;
  }
}

}  // namespace wheelrpc::rpc
