#pragma once
// A server's interceptor chain at work on one stream's opening
// (ServerOptions::interceptors; docs/interceptors.md). Made by
// ServerCore::on_stream_open once the stream was admitted and bound (its
// messages wait in its inbox, its deadline runs); its interceptors see the
// opening's metadata, deadline and peer. Every one went on: the opening is
// answered accepted and the handler starts. One rejected: the opening is
// refused with that status, no handler runs. on_complete() runs once the
// stream ended (StreamCore::wait_end), with its final status.

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/server_call.h>

#include "interceptors/interceptor_chain.h"

namespace wheelrpc::rpc::detail {

class ServerHost;
class StreamCore;
struct StreamMethod;

class StreamInterception final : public InterceptorChain {
 public:
  /// What runs the stream once its interceptors went on: answers its
  /// opening and starts its handler (on this thread).
  using Accept = void (*)(ServerHost& host, const std::shared_ptr<StreamCore>& stream, const StreamMethod& method);

  /// `method`: the stream method's entry (fixed once listening), handed back to `accept`.
  StreamInterception(std::shared_ptr<ServerHost> host, std::shared_ptr<StreamCore> stream, const StreamMethod& method,
                     Accept accept);

  /// Runs the interceptors (on the stream's executor: where its handler
  /// would start), with the opening's metadata (moved from), deadline and peer.
  void start(transport::Attachments metadata, std::string peer);

 private:
  std::size_t size() const noexcept override;
  std::string_view name(std::size_t index) const noexcept override;
  const char* side() const noexcept override { return "server"; }
  void intercept(std::size_t index, InterceptorNext next) override;
  void complete(std::size_t index) override;
  void proceeded() override;
  void rejected(StatusCode code, std::string message) override;
  void resume_later(std::function<void()> fn) override;
  /// The stream ended with `ec`: on_complete, now or once the interceptor at work lets go.
  void ended(const boost::system::error_code& ec);

  const std::shared_ptr<ServerHost> host_;
  // Held until the chain goes: the stream holds the chain only until it
  // ended (its end waiter), so they make no lasting cycle.
  const std::shared_ptr<StreamCore> stream_;
  const StreamMethod& method_;
  const Accept accept_;
  ServerCall info_;
  boost::system::error_code ec_;  // the stream's end, for on_complete
};

}  // namespace wheelrpc::rpc::detail
