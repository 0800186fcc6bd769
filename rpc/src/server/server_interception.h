#pragma once
// A server's interceptor chain at work on one request (ServerOptions::
// interceptors). Made by Admission::dispatch before the request's slot is
// shared (ReplySlot::interception, read-only after that); started by
// ServerHost::run_handler where the handler would run; ended by
// ServerHost::finish, whoever answers. It holds the slot only while its
// interceptors work (`slot_`): once they went on (the handler's Responder
// takes it), rejected, or the request was answered (finish takes it), it
// lets go, so the slot's reference to it makes no cycle.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/common/mutex.h>
#include <wheelrpc/common/spin_lock.h>
#include <wheelrpc/common/thread_annotations.h>
#include <wheelrpc/rpc/server.h>
#include <wheelrpc/rpc/server_call.h>
#include <wheelrpc/rpc/server_interceptor.h>

#include "interceptors/interceptor_chain.h"
#include "server/reply_slot.h"

namespace wheelrpc::rpc::detail {

class ServerHost;
struct ServerMethod;

class ServerInterception final : public InterceptorChain {
 public:
  /// Holds `host` while its interceptors work.
  explicit ServerInterception(std::shared_ptr<ServerHost> host);

  /// Instead of the handler (ServerHost::run_handler, where it would run):
  /// runs the interceptors, then the handler.
  void start(const ServerMethod& method, Request req, ReplySlotPtr slot, std::uint64_t conn_id);
  /// The interceptors went on: run_handler runs the handler now.
  bool passed() const noexcept { return passed_.load(std::memory_order_acquire); }
  /// The request was answered with `ec` (ServerHost::finish, once, before
  /// the reply is sent): on_complete now (adding reply_metadata() to
  /// `attachments`), or once the interceptor at work lets go.
  void finish(boost::system::error_code ec, transport::Attachments& attachments);

 private:
  std::size_t size() const noexcept override { return list_->size(); }
  std::string_view name(std::size_t index) const noexcept override { return (*list_)[index]->name(); }
  const char* side() const noexcept override { return "server"; }
  void intercept(std::size_t index, InterceptorNext next) override;
  void complete(std::size_t index) override;
  void completed(bool now) override;
  void keep_outcome() override { reply_ = nullptr; }
  void proceeded() override;
  void rejected(StatusCode code, std::string message) override;
  void resume_later(std::function<void()> fn) override;
  ReplySlotPtr take_slot();

  const std::shared_ptr<ServerHost> host_;
  const std::vector<std::shared_ptr<ServerInterceptor>>* const list_;  // the host's options: fixed once listening
  const ServerMethod* method_ = nullptr;
  std::uint64_t conn_id_ = 0;
  std::string payload_;
  ServerCall info_;
  std::atomic<bool> passed_{false};
  // Held for a few instructions (a pointer moved), by the thread running the
  // chain and by finish(): a spin lock costs less than a futex mutex here.
  common::SpinLock slot_mu_;
  ReplySlotPtr slot_ WHEELRPC_GUARDED_BY(slot_mu_);
  bool answered_ WHEELRPC_GUARDED_BY(slot_mu_) = false;  // finish() ran
  // The outcome on_complete sees; `reply_`: the reply's attachments while
  // finish() runs them (null once kept for later).
  boost::system::error_code ec_;
  transport::Attachments* reply_ = nullptr;
};

}  // namespace wheelrpc::rpc::detail
