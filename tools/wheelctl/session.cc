#include "session.h"

#include <future>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/connector.h>

#include "status_text.h"

namespace wheelrpc::wheelctl {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

/// The outcome of a stream operation: its error and the stream's message.
Session::Outcome stream_outcome(const error_code& ec, const rpc::ClientStream& stream) {
  if (!ec) return {};
  std::string message = stream.error_message();
  return {ec, message.empty() ? ec.message() : std::move(message)};
}

}  // namespace

Session::Session(const ConnectionFlags& flags) : flags_(flags), work_(io_.get_executor()) {}

std::unique_ptr<Session> Session::open(const ConnectionFlags& flags, Failure& failure) {
  std::vector<asio::ip::tcp::endpoint> endpoints;
  asio::ip::tcp::endpoint literal;
  if (transport::parse_endpoint(flags.target, literal)) {
    endpoints.push_back(literal);
  } else {
    const auto colon = flags.target.rfind(':');
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    error_code ec;
    const auto results = resolver.resolve(flags.target.substr(0, colon), flags.target.substr(colon + 1),
                                          asio::ip::tcp::resolver::numeric_service, ec);
    if (!ec) {
      for (const auto& r : results) endpoints.push_back(r.endpoint());
    }
    if (ec || endpoints.empty()) {
      failure = {kExitUnreachable, "cannot resolve '" + flags.target.substr(0, colon) +
                                       "': " + (ec ? ec.message() : std::string("no address"))};
      return nullptr;
    }
  }
  std::unique_ptr<Session> s(new Session(flags));
  rpc::ClientOptions options;
  options.protocol = flags.protocol;
  options.tls = flags.tls;
  s->client_ = std::make_unique<rpc::Client>(s->io_.get_executor(), s->timer_, endpoints, options);
  s->thread_ = std::thread([raw = s.get()] { raw->io_.run(); });
  return s;
}

Session::~Session() {
  if (client_) client_->close();
  work_.reset();
  if (thread_.joinable()) thread_.join();
  client_.reset();
}

rpc::CallOptions Session::call_options() const {
  rpc::CallOptions o;
  o.timeout = flags_.timeout.count() == 0 ? rpc::CallOptions::kNoDeadline : flags_.timeout;
  o.retries = 0;
  o.wait_for_ready = false;
  o.attachments = flags_.metadata;
  return o;
}

rpc::CallOptions Session::stream_options(bool whole_stream) const {
  rpc::CallOptions o = call_options();
  // Opening is bounded by `timeout`, which an open stream no longer obeys;
  // with no deadline asked for, opening still gets the default bound.
  if (flags_.timeout.count() == 0) o.timeout = ConnectionFlags::kDefaultTimeout;
  if (whole_stream && flags_.timeout.count() > 0) o.stream_timeout = flags_.timeout;
  return o;
}

Session::Outcome Session::call(const std::string& path, std::string payload, rpc::Response& response) {
  std::promise<std::pair<error_code, rpc::Response>> done;
  auto result = done.get_future();
  client_->async_call(path, std::move(payload), call_options(), [&done](error_code ec, rpc::Response r) {
    done.set_value({ec, std::move(r)});
  });
  auto [ec, r] = result.get();
  response = std::move(r);
  if (!ec) return {};
  return {ec, response.error_message.empty() ? ec.message() : response.error_message};
}

Session::Outcome Session::open_stream(const std::string& path, rpc::CallOptions options, rpc::ClientStream& stream) {
  std::promise<std::pair<error_code, rpc::ClientStream>> done;
  auto result = done.get_future();
  client_->async_open_stream(path, std::move(options), [&done](error_code ec, rpc::ClientStream s) {
    done.set_value({ec, std::move(s)});
  });
  auto [ec, s] = result.get();
  stream = std::move(s);
  return stream_outcome(ec, stream);
}

Session::Outcome Session::read(rpc::ClientStream& stream, std::optional<std::string>& message) {
  std::promise<std::pair<error_code, std::optional<std::string>>> done;
  auto result = done.get_future();
  stream.async_read([&done](error_code ec, std::optional<std::string> m) { done.set_value({ec, std::move(m)}); });
  auto [ec, m] = result.get();
  message = std::move(m);
  return stream_outcome(ec, stream);
}

Session::Outcome Session::write(rpc::ClientStream& stream, std::string message) {
  std::promise<error_code> done;
  auto result = done.get_future();
  stream.async_write(std::move(message), [&done](error_code ec) { done.set_value(ec); });
  return stream_outcome(result.get(), stream);
}

Session::Outcome Session::writes_done(rpc::ClientStream& stream) {
  std::promise<error_code> done;
  auto result = done.get_future();
  stream.async_writes_done([&done](error_code ec) { done.set_value(ec); });
  return stream_outcome(result.get(), stream);
}

Session::Outcome Session::finish(rpc::ClientStream& stream) {
  std::promise<error_code> done;
  auto result = done.get_future();
  stream.async_finish([&done](error_code ec) { done.set_value(ec); });
  return stream_outcome(result.get(), stream);
}

Failure Session::failure(const Outcome& outcome) const {
  return call_failure(outcome.ec, outcome.message, connected());
}

}  // namespace wheelrpc::wheelctl
