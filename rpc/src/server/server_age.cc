// ServerCore's part of the maximum connection age (ConnectionAge,
// connection_age.h): each connection's retirement (its age, the drain's
// checks, the grace) as timeouts on the server's wheel whose task only
// posts the step to the executor; the wire asked to retire on its strand.
#include <algorithm>
#include <string>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/transport/errc.h>

#include "base/log.h"
#include "server/server_core.h"
#include "stream/stream_core.h"

namespace wheelrpc::rpc::detail {
namespace asio = boost::asio;

namespace {
// A step of one connection's retirement. On the timer's worker it only
// decides and posts: everything that touches the connection runs on the
// executor (ServerCore::on_age_step) and, from there, on its strand.
struct ConnectionAgeTask {
  std::weak_ptr<ServerCore> core;
  std::uint64_t id;
  AgeStep step;
  void operator()() const {
    auto self = core.lock();
    if (!self) return;
    common::WorkGate::Scope in(self->timer_work());
    if (!in) return;  // stopped: the connection is closed already
    asio::post(self->executor(), [self, conn = id, at = step] { self->on_age_step(conn, at); });
  }
};

// Asks the connection's wire to retire (again), on its strand.
void retire_on_strand(const ConnContextPtr& context) {
  auto t = context ? context->transport.lock() : nullptr;
  if (!t) return;
  const auto ex = t->executor();
  if (!ex) return;  // gone meanwhile
  asio::post(ex, [t = std::move(t)] { t->retire(); });
}
}  // namespace

timer::Timeout ServerCore::arm_age_step(std::uint64_t id, AgeStep step, std::chrono::milliseconds delay) {
  std::error_code tec;
  auto t = timer_.new_timeout(ConnectionAgeTask{weak_from_this(), id, step}, delay, tec);
  return tec ? timer::Timeout() : t;  // the timer stopped: the server is going away
}

void ServerCore::on_age_step(std::uint64_t id, AgeStep step) {
  std::shared_ptr<transport::Channel> channel;
  ConnContextPtr context;
  std::chrono::milliseconds age{0};
  timer::Timeout stale;  // cancelled after the lock
  {
    common::LockGuard lock(mu_);
    if (stopped_) return;
    const auto it = channels_.find(id);
    if (it == channels_.end()) return;  // closed meanwhile
    Conn& c = it->second;
    channel = c.channel.lock();
    if (!channel) return;
    context = c.context;
    age = c.age;
    switch (step) {
      case AgeStep::age:
        if (c.aged) return;
        c.aged = true;
        c.age_timeout = arm_age_step(id, AgeStep::grace, age_.grace());
        c.check_timeout = arm_age_step(id, AgeStep::check, ConnectionAge::kCheckInterval);
        break;
      case AgeStep::check: c.check_timeout = arm_age_step(id, AgeStep::check, ConnectionAge::kCheckInterval); break;
      case AgeStep::grace:
        stale = c.check_timeout;
        c.check_timeout = {};
        break;
    }
  }
  if (step == AgeStep::age) {
    age_.count_aged();
    logger()->info("conn={} reached its maximum age ({} ms): draining", id, age.count());
  }
  if (step != AgeStep::grace) {
    retire_on_strand(context);
    return;
  }
  stale.cancel();
  // The grace ran out: what is still open ends with a clear status, and the
  // connection closes after what is queued (its client fails over the calls
  // still in flight as connection_lost).
  const std::int64_t calls = std::max<std::int64_t>(context ? context->in_flight.load() : 0, 0);
  const std::size_t streams = context && context->streams ? context->streams->size() : 0;
  std::string why;
  if (calls == 0 && streams == 0) {
    // Its wire is closing it (or will at its next check): this only makes sure.
    why = "the connection reached its maximum age";
  } else {
    age_.count_grace_close();
    logger()->info(
        "conn={} peer={}: the grace of its maximum age ({} ms) ran out with {} calls in flight and {} streams "
        "open: closing",
        id, channel->remote(), age_.grace().count(), calls, streams);
    why = fmt::format("the connection reached its maximum age ({} ms) and its grace ({} ms) ran out", age.count(),
                      age_.grace().count());
  }
  asio::post(channel->strand(), [channel, context, why = std::move(why)] {
    if (context && context->streams) {
      for (auto& s : context->streams->all())
        s->end_local(make_error_code(errc::unavailable), why, StreamEnd::shutdown);
    }
    channel->pause_reading();  // nothing more is read: what the client sends now it retries elsewhere
    channel->close_after_flush(transport::make_error_code(transport::errc::closed), why, kFlushLimit);
  });
}

}  // namespace wheelrpc::rpc::detail
