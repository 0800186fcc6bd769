#pragma once
/// The runtime of typed streaming methods (the `stream` methods of a
/// .proto): what a generated stub's `async_<Method>` for them calls
/// (async_open_typed_stream), and what a generated service base registers
/// them with (Service::add_stream_coroutine_method, add_stream_callback_method,
/// defined here). docs/typed_services.md, "Streaming methods".

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/protobuf/detail/typed_coroutine.h>
#include <wheelrpc/protobuf/detail/typed_stream_ops.h>
#include <wheelrpc/protobuf/typed_client_stream.h>
#include <wheelrpc/protobuf/typed_server_stream.h>
#include <wheelrpc/rpc/call_error.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/detail/call_scope_executor.h>
#include <wheelrpc/rpc/method_policy.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/service.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc {

/// The client's end of the typed method `Method`.
template <class Method>
using TypedClientStreamFor = TypedClientStream<typename Method::Request, typename Method::Reply>;
/// The server's end of the typed method `Method`.
template <class Method>
using TypedServerStreamFor = TypedServerStream<typename Method::Request, typename Method::Reply>;

/// What a coroutine handler of `Method` returns: the reply for a client
/// streaming method, nothing for the other kinds (they write their replies).
template <class Method>
using StreamHandlerResult =
    std::conditional_t<Method::kind == MethodKind::client_streaming, typename Method::Reply, void>;

namespace detail {

/// The completion of an open: the untyped stream made typed; for the tokens
/// that throw, a failure is a CallError with the stream's message.
template <bool Throws, class Typed>
struct OpenCompletion {
  template <class Handler>
  void operator()(Handler&& handler, boost::system::error_code ec, ClientStream stream) {
    std::string message = ec ? stream.error_message() : std::string();
    Typed typed(std::move(stream));
    if constexpr (Throws) {
      std::exception_ptr e;
      if (ec) e = std::make_exception_ptr(CallError(ec, std::move(message)));
      std::forward<Handler>(handler)(std::move(e), std::move(typed));
    } else {
      std::forward<Handler>(handler)(ec, std::move(typed));
    }
  }
};

}  // namespace detail

/// Opens a stream of the client or bidi streaming method `Method` (a
/// generated `Greeter::Methods::Chat`) on `client`: the method's IDL policy
/// (Method::policy: timeout, wait_for_ready, retries of the opening, and
/// the stream timers stream_timeout, message_timeout, stall_timeout,
/// first_message_timeout) filling the fields `options` leaves alone, then
/// as Client::async_open_stream. Completes once with (error_code,
/// TypedClientStream<Request, Reply>); on failure the stream's
/// error_message() says why (use_awaitable and use_future throw CallError
/// with it). `client` must outlive the start of the operation.
template <class Method, class Token>
auto async_open_typed_stream(Client& client, CallOptions options, Token&& token) {
  static_assert(Method::kind == MethodKind::client_streaming || Method::kind == MethodKind::bidi_streaming,
                "a server streaming method opens with its request: async_open_typed_stream(client, request, ...)");
  using Typed = TypedClientStreamFor<Method>;
  constexpr bool throws = detail::throws_on_error<std::decay_t<Token>>::value;
  fill_policy(options, Method::policy);
  return boost::asio::async_initiate<Token, detail::TypedSignature<throws, Typed>>(
      [&client](auto handler, CallOptions o) {
        client.async_open_stream(
            std::string(Method::path), std::move(o),
            detail::transform_handler(std::move(handler), detail::OpenCompletion<throws, Typed>{}));
      },
      token, std::move(options));
}

/// Opens a stream of the server streaming method `Method`, writes `request`
/// (serialized now) and half-closes; completes once with (error_code,
/// TypedClientStream<Request, Reply>), the stream to read the replies from.
/// The error is the opening's (as the other overload); once the stream is
/// open, a failure to write the request (the server already ended the
/// stream) is not reported here but by the stream's reads and async_finish,
/// which say how it ended.
template <class Method, class Token>
auto async_open_typed_stream(Client& client, const typename Method::Request& request, CallOptions options,
                             Token&& token) {
  static_assert(Method::kind == MethodKind::server_streaming, "only a server streaming method opens with its request");
  using Typed = TypedClientStreamFor<Method>;
  constexpr bool throws = detail::throws_on_error<std::decay_t<Token>>::value;
  fill_policy(options, Method::policy);
  std::string body;
  request.SerializePartialToString(&body);
  return boost::asio::async_initiate<Token, detail::TypedSignature<throws, Typed>>(
      [&client](auto handler, std::string b, CallOptions o) {
        client.async_open_stream(
            std::string(Method::path), std::move(o),
            detail::transform_handler(
                std::move(handler), [b = std::move(b)](auto&& h, boost::system::error_code ec, ClientStream s) mutable {
                  if (ec) return detail::OpenCompletion<throws, Typed>{}(std::move(h), ec, std::move(s));
                  // The continuations hold the stream: dropping it here would cancel it.
                  ClientStream writer = s;
                  writer.async_write(
                      std::move(b),
                      detail::transform_handler(
                          std::move(h), [s = std::move(s)](auto&& h, boost::system::error_code) mutable {
                            ClientStream closer = s;
                            closer.async_writes_done(detail::transform_handler(
                                std::move(h), [s = std::move(s)](auto&& h, boost::system::error_code) mutable {
                                  detail::OpenCompletion<throws, Typed>{}(std::move(h), {}, std::move(s));
                                }));
                          }));
                }));
      },
      token, std::move(body), std::move(options));
}

namespace detail {

/// Ends `stream` for a handler that failed with `error`: a CallError
/// (StatusError, a nested call's failure) with its status code and message,
/// anything else with StatusCode::unknown naming the method. A no-op if the
/// stream already ended.
template <class Stream>
void finish_from(Stream& stream, const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const CallError& e) {
    stream.finish(make_error_code(status_code_of(e.code())), e.what());
  } catch (const std::exception& e) {
    stream.finish(make_error_code(StatusCode::unknown), "the handler of '" + stream.method() + "' threw: " + e.what());
  } catch (...) {
    stream.finish(make_error_code(StatusCode::unknown), "the handler of '" + stream.method() + "' threw");
  }
}

/// Runs a coroutine handler of `Method` on one stream and ends the stream
/// with what it did: success when it returns (a client streaming
/// method's reply written first), its status when it throws. A server
/// streaming method's request is read first: a stream without one is
/// answered INVALID_ARGUMENT, as is one whose request does not parse.
template <class Method, class Fn>
boost::asio::awaitable<void> run_stream_coroutine(TypedServerStreamFor<Method> stream, Fn fn) {
  std::exception_ptr error;
  try {
    if constexpr (Method::kind == MethodKind::bidi_streaming) {
      co_await fn(stream);
    } else if constexpr (Method::kind == MethodKind::server_streaming) {
      auto [ec, request] = co_await stream.async_read(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) co_return;  // it ended: cancelled, or a request that did not parse (answered)
      if (!request) {
        stream.finish(StatusCode::invalid_argument,
                      "the client half-closed '" + stream.method() + "' without sending its request");
        co_return;
      }
      co_await fn(*request, stream);
    } else {
      typename Method::Reply reply = co_await fn(stream);
      co_await stream.async_write(reply, boost::asio::use_awaitable);
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    finish_from(stream, error);
  } else {
    stream.finish();
  }
}

/// A ServiceStreamMethod for `Method`, without its handler.
template <class Method>
ServiceStreamMethod make_service_stream_method() {
  ServiceStreamMethod m;
  m.path = std::string(Method::path);
  m.name = m.path.substr(m.path.rfind('/') + 1);
  m.request_type = Method::Request::default_instance().GetTypeName();
  m.reply_type = Method::Reply::default_instance().GetTypeName();
  m.kind = Method::kind;
  // The whole stream's budget from the IDL binds the server too, for a
  // client that sets none (MethodOptions::timeout).
  if (Method::policy.stream_timeout) m.options.timeout = *Method::policy.stream_timeout;
  return m;
}

}  // namespace detail

template <class Method, class Fn>
void Service::add_stream_coroutine_method(Fn fn) {
  static_assert(Method::kind != MethodKind::unary, "a unary method registers with add_coroutine_method");
  ServiceStreamMethod m = detail::make_service_stream_method<Method>();
  m.handler = [fn = std::move(fn)](ServerStream s) {
    TypedServerStreamFor<Method> stream(std::move(s));
    // As a unary coroutine: on the stream's executor, with its deadline and
    // trace in force at every step, so calls the handler makes inherit them.
    boost::asio::any_io_executor ex = detail::scoped_executor(
        stream.get_executor(), detail::CallScopeRef(new detail::CallScope(stream.deadline(), stream.trace())));
    boost::asio::co_spawn(ex, detail::run_stream_coroutine<Method>(std::move(stream), fn), boost::asio::detached);
  };
  stream_methods_.push_back(std::move(m));
}

template <class Method, class Fn>
void Service::add_stream_callback_method(Fn fn) {
  static_assert(Method::kind != MethodKind::unary, "a unary method registers with add_callback_method");
  ServiceStreamMethod m = detail::make_service_stream_method<Method>();
  m.handler = [fn = std::move(fn)](ServerStream s) {
    TypedServerStreamFor<Method> stream(std::move(s));
    try {
      fn(stream);  // the handler's copy; ours goes when this returns
    } catch (...) {
      detail::finish_from(stream, std::current_exception());
    }
  };
  stream_methods_.push_back(std::move(m));
}

/// The coroutine form's default for a streaming method the service does not
/// override: ends the stream with StatusCode::unimplemented.
template <class Method>
boost::asio::awaitable<StreamHandlerResult<Method>> unimplemented_stream(TypedServerStreamFor<Method>& stream) {
  throw StatusError(StatusCode::unimplemented, "'" + stream.method() + "' is not implemented by this server");
  if constexpr (std::is_void_v<StreamHandlerResult<Method>>) {
    co_return;
  } else {
    co_return StreamHandlerResult<Method>{};
  }
}

/// The callback form's default: ends the stream with StatusCode::unimplemented.
template <class Read, class Write>
void unimplemented_stream(TypedServerStream<Read, Write> stream) {
  stream.finish(StatusCode::unimplemented, "'" + stream.method() + "' is not implemented by this server");
}

}  // namespace wheelrpc::rpc
