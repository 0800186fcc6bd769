#pragma once
/// The runtime of typed services: what the headers protoc-gen-wheelrpc
/// generates call. A client stub's `async_<Method>` is async_typed_call; a
/// generated service base registers its methods with Service::
/// add_coroutine_method / add_callback_method, defined here; streaming
/// methods are <wheelrpc/protobuf/typed_stream.h>'s, included here. Messages
/// are protobuf's (any generated message class). docs/typed_services.md.

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/system/error_code.hpp>
#include <google/protobuf/util/json_util.h>

#include <wheelrpc/protobuf/detail/typed_coroutine.h>
#include <wheelrpc/protobuf/typed_stream.h>
#include <wheelrpc/rpc/call_error.h>
#include <wheelrpc/rpc/client.h>
#include <wheelrpc/rpc/detail/call_scope_executor.h>
#include <wheelrpc/rpc/detail/recycled.h>
#include <wheelrpc/rpc/method_policy.h>
#include <wheelrpc/rpc/options.h>
#include <wheelrpc/rpc/server_context.h>
#include <wheelrpc/rpc/service.h>
#include <wheelrpc/rpc/status_code.h>

namespace wheelrpc::rpc {

namespace detail {

/// A request body at most this large keeps its buffer after it was parsed,
/// for the reply to be serialized into (no allocation); a larger one is
/// freed at once, not held beside its message while the handler runs.
inline constexpr std::size_t kReusedBodyCapacity = 4096;

/// Sends `reply` with the context's reply metadata and trailing metadata,
/// serialized into the request's buffer when parse_request kept it. False if
/// the reply was dropped.
template <class Reply>
bool reply_with(ServerContext& context, const Reply& reply) {
  std::string body = std::move(context.request().payload);
  reply.SerializePartialToString(&body);  // clears it first, keeping its capacity
  return context.responder().reply(std::move(body), context.take_reply_attachments());
}

}  // namespace detail

/// Answers one call of a typed method with a `Reply` message, exactly once,
/// from any thread, now or later: the callback form's responder. Owns the
/// call's ServerContext (the reference the handler got stays valid while
/// the responder lives). Dropped without an answer: the caller gets
/// StatusCode::unknown (as Responder). Move-only.
template <class Reply>
class TypedResponder {
 public:
  explicit TypedResponder(std::unique_ptr<ServerContext> context) noexcept : context_(std::move(context)) {}

  /// Sends `reply` with the context's reply metadata and trailing metadata. False if it was
  /// dropped (deadline passed, caller gone, already answered).
  bool reply(const Reply& reply) { return context_ && detail::reply_with(*context_, reply); }
  /// Fails the call with `code` and `message`, with the context's reply
  /// metadata and trailing metadata (as gRPC sends trailers with an error).
  /// False if it was dropped.
  bool fail(StatusCode code, std::string message) {
    return context_ && context_->responder().fail(code, std::move(message), context_->take_reply_attachments());
  }
  /// The call's context; valid while this responder lives.
  ServerContext& context() noexcept { return *context_; }
  /// True until answered.
  bool pending() const noexcept { return context_ && context_->responder().pending(); }

 private:
  std::unique_ptr<ServerContext> context_;
};

namespace detail {

/// True for a unary method's traits (`kind` is MethodKind::unary; traits
/// without a `kind`, generated before streams, are unary too).
template <class Method>
constexpr bool is_unary() {
  if constexpr (requires { Method::kind; }) {
    return Method::kind == MethodKind::unary;
  } else {
    return true;
  }
}

/// The completion of a typed call: parses the reply (a body that is not a
/// valid Reply fails the call with StatusCode::internal), fills
/// CallOptions::reply_info, then completes the caller's handler with
/// (error_code, Reply), or (exception_ptr, Reply) for the tokens that throw.
template <class Handler, class Reply, bool Throws>
struct TypedHandler {
  Handler handler;
  std::shared_ptr<ReplyInfo> info;
  std::string_view path;

  void operator()(boost::system::error_code ec, Response response) {
    Reply reply;
    if (!ec && !reply.ParseFromString(response.payload)) {
      ec = make_error_code(StatusCode::internal);
      response.error_message =
          "the reply of '" + std::string(path) + "' is not a valid " + reply.GetTypeName() + " message";
      reply.Clear();
    }
    if (info) {
      info->metadata = std::move(response.attachments);
      info->trailers = std::move(response.trailers);
      info->compressed = response.compressed;
      info->error_message = response.error_message;
    }
    if constexpr (Throws) {
      std::exception_ptr e;
      if (ec) e = std::make_exception_ptr(CallError(ec, std::move(response.error_message)));
      std::move(handler)(std::move(e), std::move(reply));
    } else {
      std::move(handler)(ec, std::move(reply));
    }
  }
};

/// "'<path>' failed: ..." replies for the typed handlers' errors, with the
/// metadata the handler added to its context before it threw.
inline void fail_from(ServerContext& context, const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const CallError& e) {  // StatusError, or a nested call's failure rethrown
    context.responder().fail(status_code_of(e.code()), e.what(), context.take_reply_attachments());
  } catch (const std::exception& e) {
    context.responder().fail(StatusCode::unknown, "the handler of '" + context.method() + "' threw: " + e.what(),
                             context.take_reply_attachments());
  } catch (...) {
    context.responder().fail(StatusCode::unknown, "the handler of '" + context.method() + "' threw",
                             context.take_reply_attachments());
  }
}

/// Parses the request's body into `request`; fails the call with
/// invalid_argument naming the method when it is not a valid message. The
/// body's buffer is kept for the reply when it is small
/// (kReusedBodyCapacity), else freed.
template <class Message>
bool parse_request(ServerContext& context, Message& request) {
  std::string& body = context.request().payload;
  const bool ok = request.ParseFromString(body);
  if (body.capacity() > kReusedBodyCapacity) {
    std::string().swap(body);  // the message holds it now
  } else {
    body.clear();
  }
  if (!ok) {
    context.responder().fail(
        StatusCode::invalid_argument,
        "the request body of '" + context.method() + "' is not a valid " + request.GetTypeName() + " message");
  }
  return ok;
}

/// One call of a coroutine-form typed method, in one allocation (recycled
/// per thread): its context and request (the handler gets references to
/// them) and the deadline and trace its executor puts in force. Alive while
/// the coroutine runs or a copy of its executor is held.
template <class Method>
class CoroutineCall final : public CallScope, public Recycled<CoroutineCall<Method>> {
 public:
  CoroutineCall(Request req, Responder responder) : context_(std::move(req), std::move(responder)) {
    set(context_.deadline(), context_.find_metadata(kTraceparentKey), context_.find_metadata(kBaggageKey));
  }
  ServerContext& context() noexcept { return context_; }
  typename Method::Request& request() noexcept { return request_; }

 private:
  ServerContext context_;
  typename Method::Request request_;
};

/// The bottom frame of a coroutine-form call: awaits the handler, then
/// answers with its reply or with what it threw.
template <class Method, class Fn>
EntryAwaitable run_coroutine(boost::intrusive_ptr<CoroutineCall<Method>> call, Fn fn) {
  std::exception_ptr error;
  try {
    const typename Method::Reply reply = co_await fn(call->context(), call->request());
    reply_with(call->context(), reply);
  } catch (...) {
    error = std::current_exception();
  }
  if (error) fail_from(call->context(), error);
}

/// A ServiceMethod for `Method`, without its handler: path, names, and the
/// gateway's JSON transcoding (protobuf's JSON mapping).
template <class Method>
ServiceMethod make_service_method() {
  using Request = typename Method::Request;
  using Reply = typename Method::Reply;
  ServiceMethod m;
  m.path = std::string(Method::path);
  m.name = m.path.substr(m.path.rfind('/') + 1);
  m.request_type = Request::default_instance().GetTypeName();
  m.reply_type = Reply::default_instance().GetTypeName();
  // The IDL's timeout binds the server too, for a caller that sets none (MethodOptions::timeout).
  if (Method::policy.timeout) m.options.timeout = *Method::policy.timeout;
  m.request_from_json = [](std::string_view json, std::string& body, std::string& error) {
    Request request;
    const auto status =
        google::protobuf::util::JsonStringToMessage(google::protobuf::StringPiece(json.data(), json.size()), &request);
    if (!status.ok()) {
      error = std::string(status.message());
      return false;
    }
    request.SerializePartialToString(&body);
    return true;
  };
  m.reply_to_json = [](std::string_view body, std::string& json, std::string& error) {
    Reply reply;
    if (!reply.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      error = "the reply is not a valid " + reply.GetTypeName() + " message";
      return false;
    }
    google::protobuf::util::JsonPrintOptions options;
    options.always_print_primitive_fields = true;
    const auto status = google::protobuf::util::MessageToJsonString(reply, &json, options);
    if (!status.ok()) {
      error = std::string(status.message());
      return false;
    }
    return true;
  };
  return m;
}

}  // namespace detail

/// Calls the typed method `Method` (a generated `Greeter::Methods::SayHello`)
/// on `client`: `request` serialized, the method's IDL policy (Method::
/// policy) filling the policy fields `options` leaves alone, then as
/// Client::async_call. Completes once with (error_code, Reply): the
/// error is an rpc::errc (timeouts, connection errors: the table of
/// docs/timeouts.md), a StatusCode the handler failed with, StatusCode::
/// internal for a reply that is not a valid Reply, or operation_aborted for
/// a cancellation through the token's slot. With use_awaitable and
/// use_future a failure throws CallError with the full message; for other
/// tokens the message is in CallOptions::reply_info when set. `client` must
/// outlive the call's start (a deferred operation starts when launched).
template <class Method, class Token>
auto async_typed_call(Client& client, const typename Method::Request& request, CallOptions options, Token&& token) {
  static_assert(detail::is_unary<Method>(), "a streaming method opens with async_open_typed_stream");
  using Reply = typename Method::Reply;
  fill_policy(options, Method::policy);
  std::string body;
  request.SerializePartialToString(&body);
  constexpr bool throws = detail::throws_on_error<std::decay_t<Token>>::value;
  auto initiate = [&client](auto handler, std::string b, CallOptions o) {
    std::shared_ptr<ReplyInfo> info = o.reply_info;
    client.async_call(
        std::string(Method::path), std::move(b), std::move(o),
        detail::TypedHandler<decltype(handler), Reply, throws>{std::move(handler), std::move(info), Method::path});
  };
  if constexpr (throws) {
    return boost::asio::async_initiate<Token, void(std::exception_ptr, Reply)>(std::move(initiate), token,
                                                                               std::move(body), std::move(options));
  } else {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, Reply)>(
        std::move(initiate), token, std::move(body), std::move(options));
  }
}

template <class Method, class Fn>
void Service::add_coroutine_method(Fn fn) {
  static_assert(detail::is_unary<Method>(), "a streaming method registers with add_stream_coroutine_method");
  ServiceMethod m = detail::make_service_method<Method>();
  m.handler = [fn = std::move(fn)](Request req, Responder responder) {
    boost::intrusive_ptr<detail::CoroutineCall<Method>> call(
        new detail::CoroutineCall<Method>(std::move(req), std::move(responder)));
    if (!detail::parse_request(call->context(), call->request())) return;
    // The coroutine runs on the handler executor with the request's
    // deadline and trace in force at every step, so calls it makes inherit
    // them after a co_await as before one.
    const boost::asio::any_io_executor inner = call->context().get_executor();
    const boost::asio::any_io_executor ex = detail::scoped_executor(inner, detail::CallScopeRef(call.get()));
    detail::start_on(inner, ex, [call = std::move(call), fn]() mutable {
      return detail::run_coroutine<Method>(std::move(call), fn);
    });
  };
  methods_.push_back(std::move(m));
}

template <class Method, class Fn>
void Service::add_callback_method(Fn fn) {
  static_assert(detail::is_unary<Method>(), "a streaming method registers with add_stream_callback_method");
  ServiceMethod m = detail::make_service_method<Method>();
  m.handler = [fn = std::move(fn)](Request req, Responder responder) {
    auto context = std::make_unique<ServerContext>(std::move(req), std::move(responder));
    typename Method::Request request;
    if (!detail::parse_request(*context, request)) return;
    ServerContext& c = *context;
    fn(c, request, TypedResponder<typename Method::Reply>(std::move(context)));
  };
  methods_.push_back(std::move(m));
}

/// The coroutine form's default for a method the service does not
/// override: fails the call with StatusCode::unimplemented.
template <class Method>
boost::asio::awaitable<typename Method::Reply> unimplemented(ServerContext& context,
                                                             const typename Method::Request& /*request*/) {
  throw StatusError(StatusCode::unimplemented, "'" + context.method() + "' is not implemented by this server");
  co_return typename Method::Reply{};
}

/// The callback form's default: fails the call with StatusCode::unimplemented.
template <class Reply>
void unimplemented(ServerContext& context, TypedResponder<Reply> responder) {
  responder.fail(StatusCode::unimplemented, "'" + context.method() + "' is not implemented by this server");
}

}  // namespace wheelrpc::rpc

template <template <typename, typename> class Associator, typename Handler, typename Reply, bool Throws,
          typename DefaultCandidate>
struct boost::asio::associator<Associator, wheelrpc::rpc::detail::TypedHandler<Handler, Reply, Throws>,
                               DefaultCandidate> : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const wheelrpc::rpc::detail::TypedHandler<Handler, Reply, Throws>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const wheelrpc::rpc::detail::TypedHandler<Handler, Reply, Throws>& h,
                  const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};
