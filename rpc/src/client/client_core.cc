#include "client/client_core.h"

#include <wheelrpc/rpc/deadline.h>
#include <wheelrpc/transport/errc.h>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>

#include "base/log.h"
#include "client/new_call.h"
#include "stream/stream_core.h"
#include "client/provider_review.h"
#include "client/subchannel.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

ClientCore::ClientCore(asio::any_io_executor ex, timer::Timer& timer, ClientOptions options,
                       ClientWireFactory make_transport)
    : ClientCore(std::make_shared<ClientContext>(std::move(ex), timer, std::move(options), make_transport)) {}

ClientCore::ClientCore(std::shared_ptr<ClientContext> ctx)
    : CallHost(*ctx, driver_),
      ctx_(std::move(ctx)),
      pool_(ctx_),
      timeouts_(*ctx_),
      driver_(*ctx_, pool_, timeouts_),
      timeout_events_(*ctx_, pool_, driver_, timeouts_),
      work_(asio::make_work_guard(ctx_->ex)) {}

ClientCore::~ClientCore() = default;

void ClientCore::make_failback() {
  if (ctx_->review) ctx_->review->start();
  failback_ = std::make_shared<FailbackQueue>(ctx_->ex, ctx_->timer, ctx_->options.failback,
                                              [weak = weak_from_this()](RetryTimerTask::Delivery d) {
                                                if (auto self = weak.lock()) self->send_failback(std::move(d));
                                              });
  if (ctx_->options.rules) {
    ctx_->options.rules->start(
        [weak = weak_from_this()](error_code ec, std::shared_ptr<const CallRules> rules, std::string why) {
          if (auto self = weak.lock()) self->on_rules(ec, std::move(rules), std::move(why));
        });
  }
}

void ClientCore::on_rules(error_code ec, std::shared_ptr<const CallRules> rules, std::string why) {
  if (ctx_->closed.load(std::memory_order_acquire)) return;
  const auto& source = ctx_->options.rules;
  if (ec || !rules) {
    ClientMetrics::count(ctx_->metrics.rule_errors);
    const bool had = ctx_->has_rules.load(std::memory_order_acquire);
    logger()->warn("rules from {}: {}; {}", source->describe(), why.empty() ? ec.message() : why,
                   had ? "keeping the last good rules" : "no rules yet: the IDL and the defaults apply");
    ctx_->set_rules_error(why.empty() ? ec.message() : why);
    return;
  }
  ClientMetrics::count(ctx_->metrics.rule_updates);
  logger()->info("rules from {}: revision {} in force", source->describe(), rules->revision);
  ctx_->set_rules_error({});
  ctx_->rules.store(rules);
  ctx_->has_rules.store(true, std::memory_order_release);
  pool_.on_rules(rules);
  // A rule may let waiting calls go (weights) or fail them (wait_for_ready).
  driver_.dispatch_waiting();
}

void ClientCore::init(const std::vector<tcp::endpoint>& servers) {
  make_failback();
  pool_.init(weak_from_this(), servers);
}

void ClientCore::init(std::shared_ptr<ProviderSource> source) {
  make_failback();
  pool_.init(weak_from_this(), std::move(source),
             [weak = weak_from_this()](error_code ec, std::vector<ProviderInfo> providers, std::string why) {
               if (auto self = weak.lock()) self->on_source_report(ec, std::move(providers), std::move(why));
             });
}

void ClientCore::on_source_report(error_code ec, std::vector<ProviderInfo> providers, std::string why) {
  if (!pool_.on_source_report(ec, std::move(providers), std::move(why))) return;
  // A new set may hold a provider that is ready already (kept, or back
  // before its channel closed): no HELLO will come to send the calls that
  // waited while the set had none ready. The set is published before the
  // drain takes the books' lock, so a call that starts waiting after the
  // drain saw this set (dispatch reads it under that lock) and did not wait.
  if (driver_.any_slot(*pool_.current())) driver_.dispatch_waiting();
  driver_.fail_fast_waiting();
}

void ClientCore::on_connect_failed(Subchannel& sub, bool refused) {
  if (refused) pool_.connect_failed(sub.endpoint());  // a name may resolve elsewhere now
  driver_.fail_fast_waiting();
}

void ClientCore::start_call(std::string method, std::string payload, CallOptions options,
                            asio::any_completion_handler<Client::Signature> handler,
                            std::shared_ptr<StreamCore> stream) {
  // Every call ends counted ok or failed, and is pending meanwhile: stats()
  // derives the number of calls from those (one atomic fewer here).
  ClientMetrics& metrics = ctx_->metrics;
  MethodCells* cells = ctx_->options.metrics ? &metrics.methods.get(method) : nullptr;
  if (cells) cells->started();
  NewCall made = make_call(*ctx_, cells, method, payload, options);
  if (made.call) {
    made.call->host = this;
    made.call->stream = std::move(stream);
    driver_.start(std::move(made.call), std::move(payload), std::move(options.attachments), std::move(handler));
    return;
  }
  metrics.count_failed(made.ec);
  if (cells) {
    cells->completed(call_code(made.ec), std::chrono::nanoseconds(0));
    if (made.ec == errc::timeout) {
      TimeoutRecord r;
      r.time = std::chrono::system_clock::now();
      r.method = method;
      r.phase = TimeoutPhase::waiting_to_send;
      metrics.timeout_log.add(std::move(r));
    }
  }
  Completion done;
  done.armed = true;
  done.handler.swap(handler);
  done.ec = made.ec;
  done.response.error_message = std::move(made.error);
  done.context = current_deadline();
  done.tag = current_routing_tag();
  deliver(done, *ctx_);
}

std::shared_ptr<StreamCore> ClientCore::make_stream(const std::string& method, CallOptions& options) {
  if (ctx_->has_rules.load(std::memory_order_acquire)) [[unlikely]] {
    if (auto rules = ctx_->rules.load()) rules->apply(method, options);
  }
  fill_defaults(options, ctx_->options.call_defaults);
  StreamCore::Settings s;
  s.side = stream_side_.get([this] {
    auto side = make_stream_side(ctx_);
    side->counters = &ctx_->streams;
    side->timeout_log = &ctx_->metrics.timeout_log;
    return std::shared_ptr<const StreamSide>(std::move(side));
  });
  s.method = method;
  s.deadline = *options.stream_timeout;
  s.message_timeout = *options.message_timeout;
  s.stall_timeout = *options.stall_timeout;
  s.first_message_timeout = *options.first_message_timeout;
  s.window = ctx_->options.stream_window;
  s.compression = *options.compression;
  s.compression_level = *options.compression_level;
  if (ctx_->options.metrics) s.cells = &ctx_->metrics.methods.get(method);
  return std::make_shared<StreamCore>(std::move(s));
}

void ClientCore::start_stream(std::shared_ptr<StreamCore> stream, std::string method, CallOptions options,
                              asio::any_completion_handler<Client::StreamSignature> handler) {
  // The OPEN is a call: a provider picked, waited for, retried on a refusal
  // (nothing has reached the application yet), never hedged. Its deadline is
  // the opening's bound: `timeout`, or a stream timer that ends sooner.
  auto bound = *options.timeout;
  for (auto t : {*options.stream_timeout, *options.first_message_timeout}) {
    if (t.count() > 0 && t < bound) bound = t;
  }
  options.timeout = bound;
  options.hedge_delay = std::chrono::milliseconds(0);
  options.attempt_timeout = std::chrono::milliseconds(0);
  stream->start();
  auto on_open = [stream, h = std::move(handler)](error_code ec, Response r) mutable {
    if (ec) stream->fail_open(ec, std::move(r.error_message));
    ec = stream->open_result(ec);
    auto ex = asio::get_associated_executor(h, stream->executor());
    asio::dispatch(ex, [h = std::move(h), ec, s = std::move(stream)]() mutable {
      std::move(h)(ec, ClientStream(std::make_shared<StreamHandle>(std::move(s))));
    });
  };
  start_call(std::move(method), std::string(), std::move(options), std::move(on_open), std::move(stream));
}

void ClientCore::connect_all() {
  if (!ctx_->closed.load(std::memory_order_acquire)) pool_.wake_all(ctx_->now());
}

void ClientCore::close() {
  std::lock_guard once(close_mu_);
  if (ctx_->closed.exchange(true, std::memory_order_acq_rel)) return;
  std::vector<CallPtr> calls;
  std::vector<std::shared_ptr<ClientTransport>> transports;
  auto subchannels = pool_.close();
  driver_.take_books(calls);
  for (auto& sub : subchannels) sub->shut(calls, transports);
  ctx_->sweep_work.close_and_wait();  // a sweep firing now posts nothing after this
  failback_->close();
  if (ctx_->review) ctx_->review->close();
  if (ctx_->options.rules) ctx_->options.rules->stop();
  for (auto& c : calls) driver_.cancel(c, errc::cancelled, driver_.describe(*c, "client closed"), Origin::other);
  for (auto& t : transports) t->close(transport::make_error_code(transport::errc::closed), "client closed");
  work_.reset();
}

ClientStats ClientCore::stats() const {
  ClientStats s;
  ctx_->metrics.fill(s);
  fill(ctx_->streams, s.streams);
  s.failback_pending = failback_->pending();
  s.failback_delivered = failback_->delivered();
  s.failback_retries = failback_->retries();
  s.failback_given_up = failback_->given_up();
  s.failback_dropped = failback_->dropped();
  for (const auto& c : pool_.all()) {
    s.heartbeats_sent += c->heartbeats_sent();
    s.idle_closes += c->idle_closes();
  }
  if (ctx_->review) {
    s.ejections = ctx_->review->ejections();
    s.ejected_now = ctx_->review->ejected_now();
  }
  return s;
}

std::vector<ProviderStats> ClientCore::providers() const {
  std::vector<ProviderStats> out;
  const auto subs = pool_.all();
  out.reserve(subs.size());
  for (const auto& c : subs) {
    out.push_back(c->stats());
    c->fill_review(out.back());
  }
  pool_.fill_weights(out);
  pool_.add_left(out);
  return out;
}

std::vector<ConnectionInfo> ClientCore::connections() const {
  std::vector<ConnectionInfo> out;
  const auto subs = pool_.all();
  const auto t = ctx_->now();
  out.reserve(subs.size());
  for (const auto& c : subs) out.push_back(c->info(t));
  pool_.fill_weights(out);
  return out;
}

void ClientCore::send_failback(RetryTimerTask::Delivery delivery) {
  auto method = delivery.method;
  auto payload = delivery.payload;
  auto options = delivery.options;
  start_call(
      std::move(method), std::move(payload), std::move(options),
      [weak = std::weak_ptr<FailbackQueue>(failback_), d = std::move(delivery)](error_code ec, Response r) mutable {
        if (auto queue = weak.lock()) queue->on_result(std::move(d), ec, r.error_message);
      });
}

}  // namespace wheelrpc::rpc::detail
