#include "server/stream_interception.h"

#include <boost/asio/post.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/server_interceptor.h>

#include "server/server_host.h"
#include "stream/stream_core.h"

namespace wheelrpc::rpc::detail {

StreamInterception::StreamInterception(std::shared_ptr<ServerHost> host, std::shared_ptr<StreamCore> stream,
                                       const StreamMethod& method, Accept accept)
    : host_(std::move(host)), stream_(std::move(stream)), method_(method), accept_(accept) {}

std::size_t StreamInterception::size() const noexcept { return host_->options().interceptors.size(); }

std::string_view StreamInterception::name(std::size_t index) const noexcept {
  return host_->options().interceptors[index]->name();
}

void StreamInterception::start(transport::Attachments metadata, std::string peer) {
  info_.method_ = stream_->method();
  info_.peer_ = std::move(peer);
  info_.metadata_ = std::move(metadata);
  info_.deadline_ = stream_->deadline();
  info_.executor_ = host_->handler_executor();
  info_.clock_ = host_->options().clock;
  info_.received_ = stream_->now();
  info_.stream_ = true;
  // on_complete once the stream ended, whoever ends it (the handler, a
  // rejection, a timer, the client, the connection).
  stream_->wait_end([self = std::static_pointer_cast<StreamInterception>(shared_from_this())](
                        const boost::system::error_code& ec) { self->ended(ec); });
  run();
}

void StreamInterception::intercept(std::size_t index, InterceptorNext next) {
  host_->options().interceptors[index]->intercept(info_, std::move(next));
}

void StreamInterception::proceeded() {
  // What the interceptors made of the metadata is what the handler sees;
  // what they added to the reply goes as initial metadata, before the handler's.
  stream_->replace_metadata(std::move(info_.metadata_));
  for (auto& [key, value] : info_.reply_metadata_) stream_->add_initial_metadata(std::move(key), std::move(value));
  info_.reply_metadata_.clear();
  accept_(*host_, stream_, method_);
}

void StreamInterception::rejected(StatusCode code, std::string message) {
  stream_->refuse_open(make_error_code(code), std::move(message));
}

void StreamInterception::resume_later(std::function<void()> fn) {
  boost::asio::post(stream_->executor(), std::move(fn));
}

void StreamInterception::ended(const boost::system::error_code& ec) {
  ec_ = ec;
  end();
}

void StreamInterception::complete(std::size_t index) { host_->options().interceptors[index]->on_complete(info_, ec_); }

}  // namespace wheelrpc::rpc::detail
