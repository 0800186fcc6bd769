#pragma once
// A protocol-speaking server whose behaviour each test scripts: whether it
// answers HELLO, and what it does with each request (reply later, never, ...).
// Built on the transport layer directly, so it can misbehave in ways the real
// Server never does.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <wheelrpc/transport/acceptor.h>
#include <wheelrpc/transport/channel.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::test {

class ScriptedServer {
 public:
  /// Called for each request, on the connection's strand.
  using OnRequest = std::function<void(transport::Channel&, transport::Frame&)>;

  ScriptedServer(boost::asio::any_io_executor ex, bool answer_hello, OnRequest on_request)
      : state_(std::make_shared<State>()) {
    state_->answer_hello = answer_hello;
    state_->on_request = std::move(on_request);
    acceptor_ = transport::Acceptor::create(ex, [s = state_](boost::asio::ip::tcp::socket sock) {
      auto ch = transport::Channel::create(std::move(sock), std::make_shared<Conn>(s));
      {
        std::lock_guard lock(s->mu);
        s->channels.push_back(ch);
      }
      s->accepted.fetch_add(1);
      ch->start();
    });
    acceptor_->listen({boost::asio::ip::make_address("127.0.0.1"), 0});
  }
  ~ScriptedServer() { stop(); }

  boost::asio::ip::tcp::endpoint endpoint() const { return acceptor_->local_endpoint(); }
  int accepted() const { return state_->accepted.load(); }
  int requests() const { return state_->requests.load(); }
  int heartbeats() const { return state_->heartbeats.load(); }
  /// How long the HELLO answer waits (default none): a slow handshake.
  void hello_delay(std::chrono::milliseconds d) { state_->hello_delay_ms.store(d.count()); }
  /// Edits the HELLO reply's attachments (a copy of the client's) before
  /// it goes, e.g. to leave out what an older server would not say. Set
  /// before the first connection.
  void edit_hello(std::function<void(transport::Attachments&)> edit) { state_->edit_hello = std::move(edit); }
  /// Whether heartbeats are answered (default yes). No: a half-open peer.
  void answer_heartbeats(bool yes) { state_->answer_heartbeats.store(yes); }
  /// When the last heartbeat answer was sent (steady clock; its epoch if
  /// none): the client read it later than this.
  std::chrono::steady_clock::time_point last_heartbeat_answer() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(state_->answered_at.load()));
  }

  /// Closes the listener and every connection.
  void stop() {
    acceptor_->close();
    std::lock_guard lock(state_->mu);
    for (auto& ch : state_->channels) ch->close({}, "scripted server stopped");
    state_->channels.clear();
  }

  /// A response frame for `request` with `payload`.
  static transport::Frame reply_to(const transport::Frame& request, std::string payload,
                                   rpc::Status status = rpc::Status::ok) {
    transport::Frame f;
    f.header.request_id = request.header.request_id;
    f.header.status = static_cast<std::uint8_t>(status);
    f.payload = std::move(payload);
    return f;
  }

 private:
  struct State {
    bool answer_hello = true;
    OnRequest on_request;
    std::function<void(transport::Attachments&)> edit_hello;
    std::mutex mu;
    std::vector<std::shared_ptr<transport::Channel>> channels;
    std::atomic<int> accepted{0}, requests{0}, heartbeats{0};
    std::atomic<bool> answer_heartbeats{true};
    std::atomic<std::int64_t> hello_delay_ms{0};
    std::atomic<std::chrono::steady_clock::rep> answered_at{0};
  };
  struct Conn : transport::ChannelHandler {
    explicit Conn(std::shared_ptr<State> s) : state(std::move(s)) {}
    void on_frame(transport::Channel& ch, transport::Frame& f) override {
      if (f.header.is_event()) {
        if (f.header.is_request() && f.method == "hello" && state->answer_hello) {
          transport::Frame r;
          r.header.flags = transport::kFlagEvent;
          r.header.request_id = f.header.request_id;
          r.attachments = f.attachments;
          if (state->edit_hello) state->edit_hello(r.attachments);
          const std::chrono::milliseconds delay(state->hello_delay_ms.load());
          if (delay.count() > 0) {
            auto t = std::make_shared<boost::asio::steady_timer>(ch.strand(), delay);
            t->async_wait([t, c = ch.shared_from_this(), r](const boost::system::error_code&) { c->send(r); });
          } else {
            ch.send(r);
          }
        } else if (f.header.is_request() && f.method.empty()) {
          state->heartbeats.fetch_add(1);
          if (!state->answer_heartbeats.load()) return;
          state->answered_at.store(std::chrono::steady_clock::now().time_since_epoch().count());
          transport::Frame r;
          r.header.flags = transport::kFlagEvent;
          r.header.request_id = f.header.request_id;
          ch.send(r);
        }
        return;
      }
      state->requests.fetch_add(1);
      if (state->on_request) state->on_request(ch, f);
    }
    void on_close(transport::Channel&, const boost::system::error_code&, const std::string&) override {}
    std::shared_ptr<State> state;
  };

  std::shared_ptr<State> state_;
  std::shared_ptr<transport::Acceptor> acceptor_;
};

}  // namespace wheelrpc::test
