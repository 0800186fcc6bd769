#include "server/health_watch_stream.h"

#include <cassert>
#include <utility>

#include <boost/asio/post.hpp>

#include "base/health_codec.h"
#include "base/log.h"
#include "stream/stream_core.h"

namespace wheelrpc::rpc::detail {
using boost::system::error_code;

HealthWatchStream::HealthWatchStream(std::shared_ptr<StreamCore> core, Keeper keeper)
    : core_(std::move(core)), stream_(std::make_shared<StreamHandle>(core_)), keeper_(std::move(keeper)) {}

void HealthWatchStream::start() {
  // However the stream ends (the client's cancel, its connection, the
  // server's stop, our finish), its keeper forgets it: a client that
  // cancels an idle watch leaves nothing behind.
  core_->wait_end([weak = weak_from_this()](const error_code&) {
    if (auto self = weak.lock()) self->on_end();
  });
  stream_.async_read([self = shared_from_this()](const error_code& ec, std::optional<std::string> message) {
    self->on_request(ec, std::move(message));
  });
}

void HealthWatchStream::on_request(const error_code& ec, std::optional<std::string> message) {
  if (ec) return;  // the stream ended first
  std::string service;
  if (!message) {
    stream_.finish(StatusCode::invalid_argument, "no HealthCheckRequest: the client sent none before half-closing");
    return;
  }
  if (!decode_health_request(*message, service) || service.size() > kMaxHealthServiceName) {
    stream_.finish(StatusCode::invalid_argument, "could not parse request");
    return;
  }
  service_ = std::move(service);
  logger()->debug("health: watch of '{}' from {}", service_, stream_.peer());
  if (!keeper_.add(shared_from_this())) stream_.finish(StatusCode::unavailable, "the server stopped");
}

bool HealthWatchStream::offer(ServingStatus status) {
  common::LockGuard lock(mu_);
  if (ended_) return false;
  latest_ = status;
  if (busy_ || latest_ == sent_) return false;
  busy_ = true;
  return true;
}

bool HealthWatchStream::close() {
  common::LockGuard lock(mu_);
  if (ended_ || closing_) return false;
  closing_ = true;
  if (busy_) return false;  // the step in progress finishes once up to date
  busy_ = true;
  return true;
}

void HealthWatchStream::post_step() {
  boost::asio::post(stream_.get_executor(), [self = shared_from_this()] { self->step(); });
}

void HealthWatchStream::step() {
  std::optional<std::string> message;  // UNKNOWN encodes as no bytes: an empty message is one
  {
    common::LockGuard lock(mu_);
    assert(busy_);
    if (ended_) {
      busy_ = false;
      return;
    }
    if (latest_ && latest_ != sent_) {
      sent_ = latest_;
      message = encode_health_response(static_cast<std::uint32_t>(*latest_));
    } else if (closing_) {
      ended_ = true;  // busy_ stays: nothing follows the finish
    } else {
      busy_ = false;
      return;
    }
  }
  if (!message) {
    // Up to date and draining: the end follows the last status on the wire.
    stream_.finish();
    return;
  }
  stream_.async_write(std::move(*message), [self = shared_from_this()](const error_code& ec) { self->on_written(ec); });
}

void HealthWatchStream::on_written(const error_code& ec) {
  if (ec) {  // the stream ended: on_end forgets it
    common::LockGuard lock(mu_);
    ended_ = true;
    busy_ = false;
    return;
  }
  step();
}

void HealthWatchStream::on_end() {
  {
    common::LockGuard lock(mu_);
    ended_ = true;
  }
  keeper_.remove(this);
}

}  // namespace wheelrpc::rpc::detail
