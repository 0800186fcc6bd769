#include "server/server_interception.h"

#include <iterator>

#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/errc.h>

#include "base/metadata_split.h"
#include "server/server_host.h"
#include "server/server_method.h"

namespace wheelrpc::rpc::detail {

using SlotLock = common::LockGuard<common::SpinLock>;

ServerInterception::ServerInterception(std::shared_ptr<ServerHost> host)
    : host_(std::move(host)), list_(&host_->options().interceptors) {}

void ServerInterception::start(const ServerMethod& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id) {
  method_ = &method;
  conn_id_ = conn_id;
  payload_ = std::move(req.payload);
  info_.method_ = std::move(req.method);
  info_.peer_ = std::move(req.peer);
  info_.metadata_ = std::move(req.attachments);
  info_.deadline_ = req.deadline;
  info_.received_ = slot->received;
  info_.executor_ = host_->handler_executor();
  info_.clock_ = host_->options().clock;
  {
    SlotLock lock(slot_mu_);
    if (answered_) return;  // shed or timed out before its turn came
    slot_ = std::move(slot);
  }
  run();
}

ReplySlotPtr ServerInterception::take_slot() {
  SlotLock lock(slot_mu_);
  return std::move(slot_);
}

void ServerInterception::intercept(std::size_t index, InterceptorNext next) {
  (*list_)[index]->intercept(info_, std::move(next));
}

void ServerInterception::proceeded() {
  ReplySlotPtr slot = take_slot();
  if (!slot) return;  // answered meanwhile (its deadline)
  Request req{info_.method_, std::move(payload_), info_.metadata_, info_.deadline_, info_.peer_};
  passed_.store(true, std::memory_order_release);
  host_->run_handler(*method_, std::move(req), std::move(slot), conn_id_);
}

void ServerInterception::rejected(StatusCode code, std::string message) {
  ReplySlotPtr slot = take_slot();
  if (!slot) return;
  host_->finish(*slot, error_status(make_error_code(code)), std::move(message), {}, ServerHost::Answer::server);
}

void ServerInterception::resume_later(std::function<void()> fn) {
  // Where the handler would run: the handler executor, else the connection's
  // strand. Looked up only here (an interceptor went on later), not per call:
  // the strand's executor costs an allocation and the transport a locked count.
  boost::asio::any_io_executor ex = host_->options().handler_executor;
  if (!ex) {
    ReplySlotPtr slot;
    {
      SlotLock lock(slot_mu_);
      slot = slot_;
    }
    if (slot && slot->conn) {
      if (const auto transport = slot->conn->transport.lock()) ex = transport->executor();
    }
  }
  if (!ex) ex = host_->executor();  // in process, answered meanwhile, or the connection is gone
  boost::asio::post(ex, std::move(fn));
}

void ServerInterception::finish(boost::system::error_code ec, transport::Attachments& attachments) {
  ReplySlotPtr released;  // let go after the lock (finish's caller holds another reference)
  {
    SlotLock lock(slot_mu_);
    answered_ = true;
    released = std::move(slot_);
  }
  ec_ = ec;
  reply_ = &attachments;
  end();
}

void ServerInterception::complete(std::size_t index) { (*list_)[index]->on_complete(info_, ec_); }

void ServerInterception::completed(bool now) {
  if (!now || !reply_ || info_.reply_metadata_.empty()) return;
  // Initial metadata: before the trailers' marker, if the handler added trailers.
  reply_->insert(initial_end(*reply_), std::make_move_iterator(info_.reply_metadata_.begin()),
                 std::make_move_iterator(info_.reply_metadata_.end()));
  info_.reply_metadata_.clear();
}

}  // namespace wheelrpc::rpc::detail
