#include "client/resolved_providers.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <exception>
#include <stdexcept>
#include <utility>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include "base/log.h"

namespace wheelrpc::rpc {
namespace detail {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

[[noreturn]] void bad_target(const std::string& text, const char* what) {
  throw std::invalid_argument("resolved_providers: target '" + text + "': " + what +
                              " (expected host:port or [v6]:port)");
}

bool valid_port(const std::string& port) {
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  auto [end, err] = std::from_chars(port.data(), port.data() + port.size(), value);
  return err == std::errc{} && end == port.data() + port.size() && value >= 1 && value <= 65535;
}

std::string describe_targets(const std::vector<ResolveTarget>& targets) {
  std::string out = "dns:";
  for (std::size_t i = 0; i < targets.size(); ++i) out += (i ? "," : "") + targets[i].text;
  return out;
}

}  // namespace

ResolveTarget parse_resolve_target(const std::string& text) {
  ResolveTarget t;
  t.text = text;
  std::string rest;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) bad_target(text, "no ']' after an IPv6 address");
    t.host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') bad_target(text, "missing port");
    t.port = rest.substr(1);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) bad_target(text, "missing port");
    t.host = text.substr(0, colon);
    t.port = text.substr(colon + 1);
    if (t.host.find(':') != std::string::npos) bad_target(text, "an IPv6 address needs brackets");
  }
  if (t.host.empty()) bad_target(text, "empty host");
  if (t.port.empty()) bad_target(text, "missing port");
  if (!valid_port(t.port)) bad_target(text, "port not in 1..65535");
  return t;
}

ResolvedProviders::ResolvedProviders(asio::any_io_executor ex, timer::Timer& timer, std::vector<ResolveTarget> targets,
                                     ResolveOptions options, ResolveFunction resolve)
    : strand_(asio::make_strand(std::move(ex))),
      timer_(timer),
      options_(options),
      resolve_(std::move(resolve)),
      description_(describe_targets(targets)) {
  if (!resolve_) resolver_.emplace(strand_);
  targets_.reserve(targets.size());
  for (auto& t : targets) {
    TargetState state;
    state.target = std::move(t);
    targets_.push_back(std::move(state));
  }
}

void ResolvedProviders::start(Listener listener) {
  listener_ = std::move(listener);
  // The post publishes listener_ to the strand.
  asio::post(strand_, [self = shared_from_this()] { self->start_round(); });
}

void ResolvedProviders::stop() {
  {
    common::LockGuard lock(mu_);
    if (stopped_.exchange(true, std::memory_order_acq_rel)) return;
    refresh_timeout_.cancel();
    quiet_timeout_.cancel();
  }
  // Once mu_ is released nothing schedules on the timer any more (schedule()
  // checks stopped_ under mu_), and once the gate is closed no timer task of
  // ours posts: the timer and the executor may go right after this returns.
  gate_.close_and_wait();
  asio::post(strand_, [self = shared_from_this()] {
    if (self->resolver_) self->resolver_->cancel();  // its handlers complete with operation_aborted
  });
}

void ResolvedProviders::connect_failed(const tcp::endpoint& endpoint) {
  if (stopped()) return;
  logger()->debug("{}: connect to {}:{} failed, re-resolving soon", description_, endpoint.address().to_string(),
                  endpoint.port());
  asio::post(strand_, [self = shared_from_this()] { self->on_hint(); });
}

void ResolvedProviders::start_round() {
  assert(strand_.running_in_this_thread());
  if (stopped() || outstanding_ != 0) return;
  ++round_;
  outstanding_ = targets_.size();
  quiet_ = true;
  schedule(Wake::quiet_end, options_.min_interval);
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& t = targets_[i].target;
    if (resolve_) {
      // The seam may complete inline: post so the round's loop finishes first.
      ResolveDone done = [self = shared_from_this(), round = round_, i](error_code ec, Endpoints eps) {
        asio::post(self->strand_, [self, round, i, ec, eps = std::move(eps)]() mutable {
          self->on_resolved(round, i, ec, std::move(eps));
        });
      };
      try {
        resolve_(t.host, t.port, std::move(done));
      } catch (const std::exception& e) {
        logger()->error("{}: resolving '{}' threw: {}", description_, t.text, e.what());
        asio::post(strand_, [self = shared_from_this(), round = round_, i] {
          self->on_resolved(round, i, make_error_code(boost::system::errc::io_error), {});
        });
      }
    } else {
      resolver_->async_resolve(
          t.host, t.port, tcp::resolver::numeric_service,
          asio::bind_executor(strand_, [self = shared_from_this(), round = round_, i](
                                           error_code ec, const tcp::resolver::results_type& results) {
            Endpoints eps;
            if (!ec)
              for (const auto& entry : results) eps.push_back(entry.endpoint());
            self->on_resolved(round, i, ec, std::move(eps));
          }));
    }
  }
  if (targets_.empty()) finish_round();
}

void ResolvedProviders::on_resolved(std::uint64_t round, std::size_t index, error_code ec, Endpoints endpoints) {
  assert(strand_.running_in_this_thread());
  if (round != round_ || outstanding_ == 0) return;
  auto& t = targets_[index];
  if (!ec) {
    std::sort(endpoints.begin(), endpoints.end());
    endpoints.erase(std::unique(endpoints.begin(), endpoints.end()), endpoints.end());
    if (!t.resolved || endpoints != t.endpoints)
      logger()->info("{}: '{}' resolved to {} address(es)", description_, t.target.text, endpoints.size());
    t.resolved = true;
    t.endpoints = std::move(endpoints);
    t.last_ec = {};
    t.last_error.clear();
  } else if (!stopped()) {
    t.last_ec = ec;
    t.last_error = "host name '" + t.target.host + "' does not resolve: " + ec.message();
    logger()->warn("{}: {}{}", description_, t.last_error, t.resolved ? "; keeping its last addresses" : "");
  }
  if (--outstanding_ == 0) finish_round();
}

void ResolvedProviders::finish_round() {
  assert(strand_.running_in_this_thread());
  if (stopped()) return;
  // Before the report, so whoever sees the report finds the refresh scheduled.
  schedule(Wake::refresh, options_.refresh);
  Endpoints all;
  const TargetState* failed = nullptr;
  bool any_resolved = false;
  for (const auto& t : targets_) {
    if (t.resolved) {
      any_resolved = true;
      all.insert(all.end(), t.endpoints.begin(), t.endpoints.end());
    } else if (failed == nullptr) {
      failed = &t;
    }
  }
  if (any_resolved || failed == nullptr) {
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    if (!reported_ || last_was_error_ || all != last_endpoints_) report({}, std::move(all), {});
  } else {
    std::string why = failed->last_error;
    for (const auto& t : targets_)
      if (&t != failed) why += "; " + t.last_error;
    if (!reported_ || !last_was_error_ || why != last_why_) report(failed->last_ec, {}, std::move(why));
  }
  if (hint_pending_ && !quiet_) {
    hint_pending_ = false;
    start_round();
  }
}

void ResolvedProviders::on_hint() {
  assert(strand_.running_in_this_thread());
  if (stopped()) return;
  if (quiet_ || outstanding_ != 0) {
    hint_pending_ = true;  // one round when the interval ends (or the round in flight does)
    return;
  }
  start_round();
}

void ResolvedProviders::on_wake(Wake which, std::uint64_t generation) {
  assert(strand_.running_in_this_thread());
  if (stopped()) return;
  {
    common::LockGuard lock(mu_);
    if (generation != (which == Wake::refresh ? refresh_gen_ : quiet_gen_)) return;  // replaced
  }
  if (which == Wake::refresh) {
    start_round();  // a round in flight reschedules the refresh when it ends
    return;
  }
  quiet_ = false;
  if (hint_pending_ && outstanding_ == 0) {
    hint_pending_ = false;
    start_round();
  }
}

void ResolvedProviders::report(error_code ec, Endpoints endpoints, std::string why) {
  reported_ = true;
  last_was_error_ = static_cast<bool>(ec);
  last_endpoints_ = endpoints;
  last_why_ = why;
  if (stopped() || !listener_) return;
  try {
    listener_(ec, std::move(endpoints), std::move(why));
  } catch (const std::exception& e) {
    logger()->error("{}: the listener threw: {}", description_, e.what());
  }
}

void ResolvedProviders::schedule(Wake which, std::chrono::milliseconds delay) {
  common::LockGuard lock(mu_);
  if (stopped()) return;
  auto& timeout = which == Wake::refresh ? refresh_timeout_ : quiet_timeout_;
  auto& gen = which == Wake::refresh ? refresh_gen_ : quiet_gen_;
  timeout.cancel();
  const auto generation = ++gen;
  // Runs on the timer's worker: it only posts.
  std::error_code tec;
  timeout = timer_.new_timeout(
      [weak = weak_from_this(), which, generation] {
        auto self = weak.lock();
        if (!self) return;
        common::WorkGate::Scope in(self->gate_);
        if (!in) return;  // stopped
        asio::post(self->strand_, [self, which, generation] { self->on_wake(which, generation); });
      },
      delay, tec);
  if (tec)
    logger()->error("{}: cannot schedule the next {} on the timer: {}", description_,
                    which == Wake::refresh ? "refresh" : "re-resolve after a failed connect", tec.message());
}

std::shared_ptr<ProviderSource> resolved_providers(asio::any_io_executor ex, timer::Timer& timer,
                                                   std::vector<std::string> targets, ResolveOptions options,
                                                   ResolveFunction resolve) {
  if (targets.empty()) throw std::invalid_argument("resolved_providers: no targets");
  if (options.refresh.count() <= 0)
    throw std::invalid_argument("resolved_providers: ResolveOptions::refresh must be > 0");
  if (options.min_interval.count() <= 0)
    throw std::invalid_argument("resolved_providers: ResolveOptions::min_interval must be > 0");
  std::vector<ResolveTarget> parsed;
  parsed.reserve(targets.size());
  for (const auto& t : targets) parsed.push_back(parse_resolve_target(t));
  return std::make_shared<ResolvedProviders>(std::move(ex), timer, std::move(parsed), options, std::move(resolve));
}

}  // namespace detail

std::shared_ptr<ProviderSource> resolved_providers(boost::asio::any_io_executor ex, timer::Timer& timer,
                                                   std::vector<std::string> targets, ResolveOptions options) {
  return detail::resolved_providers(std::move(ex), timer, std::move(targets), options, {});
}

}  // namespace wheelrpc::rpc
