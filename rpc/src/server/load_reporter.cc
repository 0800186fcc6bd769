#include "server/load_reporter.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>

#include <boost/asio/post.hpp>

#include "base/log.h"
#include "base/metadata_split.h"
#include "server/server_host.h"

namespace wheelrpc::rpc::detail {

namespace {
double report_seconds(std::chrono::nanoseconds d) noexcept { return std::chrono::duration<double>(d).count(); }
}  // namespace

LoadReporter::LoadReporter(std::chrono::milliseconds interval, Sources sources)
    : interval_(interval), sources_(std::move(sources)), cpus_(cpu_count()) {
  report_.store(std::make_shared<const std::string>());
}

unsigned LoadReporter::cpu_count() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::chrono::nanoseconds LoadReporter::process_cpu_time() noexcept {
  struct rusage ru {};
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return std::chrono::nanoseconds(0);
  const auto of = [](const timeval& tv) {
    return std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
  };
  return std::chrono::duration_cast<std::chrono::nanoseconds>(of(ru.ru_utime) + of(ru.ru_stime));
}

void LoadReporter::start(ServerHost& host) {
  if (started_.exchange(true, std::memory_order_acq_rel)) return;  // a second listen()
  host_ = &host;
  sample();
  schedule_next();
}

void LoadReporter::schedule_next() {
  // The worker only decides: the sample is posted, holding the server (it
  // owns this) until it ran. A stopped server's gate is closed: the chain ends.
  auto due = [weak = host_->weak_host(), self = this] {
    const auto host = weak.lock();
    if (!host) return;
    common::WorkGate::Scope in(host->timer_work());
    if (!in) return;
    boost::asio::post(host->executor(), [host, self] {
      self->sample();
      self->schedule_next();
    });
  };
  std::error_code ec;
  host_->timer().new_timeout(std::move(due), interval_, ec);
  if (ec) logger()->debug("load reports stop: {}", ec.message());  // the timer stopped
}

void LoadReporter::set_application_utilization(double utilization) noexcept {
  if (!(utilization >= 0) || !std::isfinite(utilization)) utilization = -1.0;  // NaN too
  application_utilization_.store(utilization, std::memory_order_relaxed);
}

void LoadReporter::sample() {
  const auto wall = std::chrono::steady_clock::now();
  const auto cpu = process_cpu_time();
  const std::uint64_t answered = sources_.answered ? sources_.answered() : 0;
  const std::uint64_t failed = sources_.failed ? sources_.failed() : 0;
  LoadReport r;
  if (last_wall_ != std::chrono::steady_clock::time_point{}) {
    const double dt = report_seconds(wall - last_wall_);
    if (dt > 0) {
      // Clamped: getrusage's and the clock's granularity may put a fully
      // busy process a little over its CPUs, or a tick under zero.
      r.cpu_utilization = std::clamp(report_seconds(cpu - last_cpu_) / (dt * cpus_), 0.0, 1.0);
      r.rps_fractional = static_cast<double>(answered - last_answered_) / dt;
      r.eps = static_cast<double>(failed - last_failed_) / dt;
    }
  }
  last_wall_ = wall;
  last_cpu_ = cpu;
  last_answered_ = answered;
  last_failed_ = failed;
  const std::uint64_t in_flight = sources_.in_flight ? sources_.in_flight() : 0;
  const std::chrono::nanoseconds wait = sources_.queue_wait ? sources_.queue_wait() : std::chrono::nanoseconds(0);
  r.named_metrics.emplace_back("inflight", static_cast<double>(in_flight));
  r.named_metrics.emplace_back("queue_wait_ms", std::chrono::duration<double, std::milli>(wait).count());
  const double app = application_utilization_.load(std::memory_order_relaxed);
  if (app >= 0) r.application_utilization = app;
  report_.store(std::make_shared<const std::string>(encode(r)));
  common::LockGuard lock(mu_);
  last_ = std::move(r);
}

LoadReport LoadReporter::last() const {
  common::LockGuard lock(mu_);
  return last_;
}

void LoadReporter::attach_if_due(std::atomic<std::uint64_t>& seen, transport::Attachments& attachments) const {
  // Version 1 is the constructor's empty report: nothing to carry before the first sample.
  const std::uint64_t version = report_.version();
  if (version <= 1) return;
  std::uint64_t last = seen.load(std::memory_order_relaxed);
  if (last >= version) return;  // this connection carried this sample already: the common case
  // One reply of the connection wins the sample; the others go without.
  if (!seen.compare_exchange_strong(last, version, std::memory_order_relaxed)) return;
  const auto report = report_.load();  // the version's, or a later one
  if (!report || report->empty()) return;
  if (initial_end(attachments) == attachments.end())
    attachments.emplace_back(std::string(kTrailersMarker), std::string());
  attachments.emplace_back(std::string(kLoadReportKey), *report);
}

}  // namespace wheelrpc::rpc::detail
