#pragma once
// The engine behind Client: a facade over its parts.
//
//   ClientContext   options, executor, timer, clock, TLS, counters (shared)
//   ProviderPool    the published provider set, retire/revive, providers that left
//   Subchannel      one provider's connection: connect/HELLO/backoff/reconnect,
//                   heartbeats, its table of sent attempts (subchannel.h)
//   CallDriver      dispatch, attempts, retries, the waiting list and backoff books,
//                   replies, losses, completion, interceptors (call_driver.h)
//   CallTimeouts    the deadline cover, attempt timeouts and hedges on the wheel
//   CallTimeoutEvents  what those timeouts do when they fire
//   FailbackQueue   failed calls retried in the background (failback_queue.h)
//
// The parts reach the core through CallHost (call_host.h), never this header;
// the connections' wires come from the factory it is given (wires.h).
//
// Concurrency model (who owns what, which thread runs what):
// - A call (Call, shared through CallPtr) has its own lock, `Call::mu`: its
//   attempts, phase and handler change only under it. Completing it flips
//   `Call::done` under that lock, exactly once.
// - Each Subchannel has its own leaf lock for its channel, connect state and
//   table of sent attempts; the load balancer reads only atomics. Lock order:
//   a call's lock, then a subchannel's, or the driver's books lock (the
//   waiting list and the calls in retry backoff); never the other way. No
//   lock is held across a user handler.
// - So a new call, a reply and a timeout on different calls or subchannels
//   share no lock; counters are relaxed atomics or per-thread slots.
// - The provider set is immutable once published; changes are serialized by
//   the pool's lock, taken before a subchannel's, never after one, and never
//   with a call's lock held. An attempt holds its subchannel, so a provider
//   that leaves the set lives on until its attempts are done.
// - Channel events run on the channel's strand (replies complete calls there,
//   and a retry may send from there). The deadline and aux timeouts, the
//   sweeps and the failback tasks run on the timer's worker and only pin the
//   call and post to the client's executor, where the work runs. The
//   per-subchannel HeartbeatTimerTask and ReconnectTimerTask check atomics
//   on the worker and post what touches a channel.
// - The core outlives every call that is not done: close() completes them
//   all before it returns. Posted work holds a shared_ptr to the core.
// - Completion handlers run on their associated executor (default: the
//   client's): inline from a reply, posted otherwise.

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/provider_source.h>

#include "stream/stream_side.h"
#include "client/call_driver.h"
#include "client/call_host.h"
#include "client/call_timeout_events.h"
#include "client/call_timeouts.h"
#include "client/client_context.h"
#include "client/failback_queue.h"
#include "client/provider_pool.h"
#include "client/subchannel_listener.h"

namespace wheelrpc::rpc::detail {

class ClientCore final : public SubchannelListener, public CallHost, public std::enable_shared_from_this<ClientCore> {
 public:
  /// `make_transport`: the wire factory (wires.h).
  ClientCore(boost::asio::any_io_executor ex, timer::Timer& timer, ClientOptions options,
             ClientWireFactory make_transport);
  ~ClientCore();
  /// Creates the subchannels (needs weak_from_this, so not in the constructor).
  void init(const std::vector<boost::asio::ip::tcp::endpoint>& servers);
  /// Follows `source`: its reports replace the provider set.
  void init(std::shared_ptr<ProviderSource> source);

  void start_call(std::string method, std::string payload, CallOptions options,
                  boost::asio::any_completion_handler<Client::Signature> handler,
                  std::shared_ptr<StreamCore> stream = nullptr);
  void send_failback(RetryTimerTask::Delivery delivery);
  /// A stream for `method` with `options` (ClientOptions::call_defaults
  /// filled in), not started yet.
  std::shared_ptr<StreamCore> make_stream(const std::string& method, CallOptions& options);
  /// Opens `stream`: its OPEN goes as a call (a provider picked, retried
  /// on refusal), and `handler` gets the stream once the server accepted it.
  void start_stream(std::shared_ptr<StreamCore> stream, std::string method, CallOptions options,
                    boost::asio::any_completion_handler<Client::StreamSignature> handler);
  void connect_all();
  /// Completes every call not done, closes every channel; once (others wait).
  void close();
  ClientStats stats() const;
  std::vector<ProviderStats> providers() const;
  SourceState source_state() const { return pool_.source_state(); }
  std::vector<MethodStats> method_stats() const { return ctx_->metrics.methods.snapshot(); }
  std::vector<TimeoutRecord> recent_timeouts() const { return ctx_->metrics.timeout_log.snapshot(); }
  std::vector<ConnectionInfo> connections() const;
  MethodExplanation explain(std::string_view method) const;
  const boost::asio::any_io_executor& executor() const noexcept { return ctx_->ex; }

  // CallHost
  std::shared_ptr<CallHost> share_host() override { return shared_from_this(); }
  void on_call_deadline(const CallPtr& call, TimePoint fired) override { timeout_events_.on_deadline(call, fired); }
  void on_call_aux(const CallPtr& call, TimePoint fired) override { timeout_events_.on_aux(call, fired); }
  void resume_intercepted(const CallPtr& call, const std::shared_ptr<ClientInterception>& chain, bool proceed,
                          StatusCode code, std::string message) override {
    driver_.gate().after(call, chain, proceed, code, std::move(message));
  }

  // SubchannelListener
  void on_subchannel_ready() override { driver_.dispatch_waiting(); }
  void on_connect_failed(Subchannel& sub, bool refused) override;
  void on_reply(Subchannel& sub, IncomingReply& reply, TimePoint received) override {
    driver_.on_reply(sub, reply, received);
  }
  void on_attempts_lost(Subchannel& sub, LostAttempts& lost, const std::string& what) override {
    driver_.on_lost(sub, lost, what);
  }
  void on_deadlines_due(std::vector<CallPtr>& due, TimePoint fired) override {
    timeout_events_.on_deadlines_due(due, fired);
  }
  void on_slot_freed() override { driver_.dispatch_waiting(); }
  void on_retired_closed(Subchannel& sub) override { pool_.forget_retired(sub); }
  bool calls_waiting() override { return driver_.calls_waiting(); }

 private:
  /// A report of the provider source (any thread, never concurrently with itself).
  void on_source_report(boost::system::error_code ec, std::vector<ProviderInfo> providers, std::string why);
  explicit ClientCore(std::shared_ptr<ClientContext> ctx);
  /// Creates failback_ (needs weak_from_this: called by init()), and starts
  /// following ClientOptions::rules.
  void make_failback();
  /// A report of the rule source (any thread, never concurrently with itself).
  void on_rules(boost::system::error_code ec, std::shared_ptr<const CallRules> rules, std::string why);

  const std::shared_ptr<ClientContext> ctx_;
  ProviderPool pool_;
  CallTimeouts timeouts_;
  CallDriver driver_;
  CallTimeoutEvents timeout_events_;
  std::shared_ptr<FailbackQueue> failback_;
  boost::asio::executor_work_guard<boost::asio::any_io_executor> work_;
  std::mutex close_mu_;  // close() runs once, others wait for it
  // What its streams share (their executor, timer, counters...), made again
  // once none holds it: the cache keeps no cycle through ctx_.
  SharedCache<const StreamSide> stream_side_;
};

}  // namespace wheelrpc::rpc::detail
