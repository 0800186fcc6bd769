#pragma once
/// Internal to TypedClientStream and TypedServerStream: the state a typed
/// stream's handles share, and the glue that turns an untyped stream
/// operation's completion into a typed one (parsing, the typed layer's own
/// error, the tokens that throw). Not an API.

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/call_error.h>
#include <wheelrpc/rpc/client_stream.h>
#include <wheelrpc/rpc/detail/throwing_handler.h>
#include <wheelrpc/rpc/server_stream.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc::detail {

/// `handler` completed through `fn(std::move(handler), args...)`: how a
/// typed operation hands an untyped one its completion. Keeps the handler's
/// associated executor, allocator and cancellation slot (the associator
/// below), so the untyped stream completes where the caller asked.
template <class Handler, class Fn>
struct TransformedHandler {
  Handler handler;
  Fn fn;
  template <class... Args>
  void operator()(Args&&... args) {
    std::move(fn)(std::move(handler), std::forward<Args>(args)...);
  }
};

template <class Handler, class Fn>
TransformedHandler<std::decay_t<Handler>, std::decay_t<Fn>> transform_handler(Handler&& handler, Fn&& fn) {
  return {std::forward<Handler>(handler), std::forward<Fn>(fn)};
}

/// What a typed stream's copies share: the untyped stream and the typed
/// layer's own failure (a message that is not a valid message of its type),
/// which, once recorded, is what the stream's operations report.
/// Thread-safe: any method from any thread.
template <class Stream>
class TypedStreamState {
 public:
  explicit TypedStreamState(Stream stream) noexcept : stream_(std::move(stream)) {}

  Stream& stream() noexcept { return stream_; }
  const Stream& stream() const noexcept { return stream_; }

  /// The typed layer's failure; empty while it has none.
  boost::system::error_code local_error() const {
    std::lock_guard lock(mu_);
    return local_ec_;
  }
  /// The typed layer's message if it failed, else the stream's.
  std::string error_message() const {
    {
      std::lock_guard lock(mu_);
      if (local_ec_) return local_message_;
    }
    return stream_.error_message();
  }

  /// A message received is not a valid `type_name`: records the failure
  /// (the first one stays), then ends the stream: a client's is cancelled
  /// (the server sees it cancelled) and fails with StatusCode::internal; a
  /// server's is finished with StatusCode::invalid_argument, which the
  /// client receives. Returns the failure to report.
  boost::system::error_code bad_message(const std::string& type_name) {
    constexpr bool client = std::is_same_v<Stream, ClientStream>;
    const auto code = make_error_code(client ? StatusCode::internal : StatusCode::invalid_argument);
    const StreamInfo info = stream_.info();
    std::string message =
        client ? "a message of '" + info.method + "' from " + info.peer + " is not a valid " + type_name +
                     " message; the stream is cancelled"
               : "a message of '" + info.method + "' from " + info.peer + " is not a valid " + type_name + " message";
    {
      std::lock_guard lock(mu_);
      if (local_ec_) return local_ec_;
      local_ec_ = code;
      local_message_ = message;
    }
    // Outside the lock: ending the stream completes its other operations,
    // whose completions read the failure recorded above.
    if constexpr (client) {
      stream_.cancel();
    } else {
      stream_.finish(code, std::move(message));
    }
    return code;
  }

 private:
  Stream stream_;
  mutable std::mutex mu_;
  boost::system::error_code local_ec_;
  std::string local_message_;
};

/// Completes `handler` with `ec` and `values`, or, for the tokens that
/// throw (`Throws`), with an exception_ptr holding a CallError whose
/// message is the stream's (`state` null: the stream's handles are gone).
template <bool Throws, class Handler, class State, class... T>
void complete_typed(Handler&& handler, boost::system::error_code ec, const std::shared_ptr<State>& state,
                    T&&... values) {
  if constexpr (Throws) {
    std::exception_ptr e;
    if (ec) e = std::make_exception_ptr(CallError(ec, state ? state->error_message() : ec.message()));
    std::forward<Handler>(handler)(std::move(e), std::forward<T>(values)...);
  } else {
    std::forward<Handler>(handler)(ec, std::forward<T>(values)...);
  }
}

template <bool Throws, class... T>
using TypedSignature =
    std::conditional_t<Throws, void(std::exception_ptr, T...), void(boost::system::error_code, T...)>;

/// A typed read: the untyped read's message parsed as `Message`. A message
/// that does not parse ends the stream (TypedStreamState::bad_message);
/// once the typed layer failed, every read reports that failure. The
/// completion holds the state weakly, so an outstanding read does not keep
/// a stream whose handles are all gone open.
template <class Message, class Stream, class Token>
auto initiate_typed_read(const std::shared_ptr<TypedStreamState<Stream>>& state, Token&& token) {
  constexpr bool throws = throws_on_error<std::decay_t<Token>>::value;
  using State = TypedStreamState<Stream>;
  return boost::asio::async_initiate<Token, TypedSignature<throws, std::optional<Message>>>(
      [](auto handler, std::shared_ptr<State> s) {
        std::weak_ptr<State> weak = s;
        s->stream().async_read(transform_handler(
            std::move(handler), [weak](auto&& h, boost::system::error_code ec, std::optional<std::string> body) {
              const std::shared_ptr<State> s = weak.lock();
              std::optional<Message> message;
              if (!ec && body) {
                message.emplace();
                if (!message->ParseFromString(*body)) {
                  message.reset();
                  ec = s ? s->bad_message(Message::default_instance().GetTypeName())
                         : make_error_code(StatusCode::internal);
                }
              }
              if (s) {
                if (auto local = s->local_error()) {
                  ec = local;
                  message.reset();
                }
              }
              complete_typed<throws>(std::move(h), ec, s, std::move(message));
            }));
      },
      token, state);
}

/// A typed operation completing with an error_code alone (write,
/// writes_done, finish): `start(stream, handler)` starts the untyped one.
/// The typed layer's failure replaces the operation's error, and, with
/// `always`, its success too (finish: a stream whose message did not parse
/// did not succeed).
template <class Stream, class Token, class Start>
auto initiate_typed_done(const std::shared_ptr<TypedStreamState<Stream>>& state, bool always, Token&& token,
                         Start start) {
  constexpr bool throws = throws_on_error<std::decay_t<Token>>::value;
  using State = TypedStreamState<Stream>;
  return boost::asio::async_initiate<Token, TypedSignature<throws>>(
      [always](auto handler, std::shared_ptr<State> s, Start start) {
        std::weak_ptr<State> weak = s;
        std::move(start)(s->stream(),
                         transform_handler(std::move(handler), [weak, always](auto&& h, boost::system::error_code ec) {
                           const std::shared_ptr<State> s = weak.lock();
                           if (s && (ec || always)) {
                             if (auto local = s->local_error()) ec = local;
                           }
                           complete_typed<throws>(std::move(h), ec, s);
                         }));
      },
      token, state, std::move(start));
}

}  // namespace wheelrpc::rpc::detail

template <template <typename, typename> class Associator, typename Handler, typename Fn, typename DefaultCandidate>
struct boost::asio::associator<Associator, wheelrpc::rpc::detail::TransformedHandler<Handler, Fn>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const wheelrpc::rpc::detail::TransformedHandler<Handler, Fn>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const wheelrpc::rpc::detail::TransformedHandler<Handler, Fn>& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};
