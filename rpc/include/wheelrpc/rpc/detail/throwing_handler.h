#pragma once
/// Internal to Client::async_call: the completion tokens whose failures throw
/// (use_awaitable, use_future) get their handler wrapped so that the error
/// arrives as an exception_ptr holding a CallError with the call's full
/// message. Not an API: included by client.h only.

#include <exception>
#include <type_traits>
#include <utility>

#include <boost/asio/associator.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/call_error.h>
#include <wheelrpc/rpc/response.h>

namespace boost::asio {
// The tokens whose failures throw (see Client::async_call); declared here so
// that this header does not pull in coroutine or future support.
template <typename Executor>
struct use_awaitable_t;
template <typename Allocator>
class use_future_t;
}  // namespace boost::asio

namespace wheelrpc::rpc {

namespace detail {
/// Completion tokens whose completion with an error throws: for them a call
/// completes with an exception_ptr holding a CallError instead of a bare
/// error_code, so the precise message reaches the catch site.
template <class Token>
struct throws_on_error : std::false_type {};
template <class Executor>
struct throws_on_error<boost::asio::use_awaitable_t<Executor>> : std::true_type {};
template <class Allocator>
struct throws_on_error<boost::asio::use_future_t<Allocator>> : std::true_type {};

/// Turns (error_code, Response) into (exception_ptr, Response); keeps the
/// wrapped handler's executor, allocator and cancellation slot.
template <class Handler>
struct ThrowingHandler {
  Handler handler;
  void operator()(boost::system::error_code ec, Response r) {
    std::exception_ptr e;
    if (ec) e = std::make_exception_ptr(CallError(ec, r.error_message));
    std::move(handler)(std::move(e), std::move(r));
  }
};
}  // namespace detail

}  // namespace wheelrpc::rpc

template <template <typename, typename> class Associator, typename Handler, typename DefaultCandidate>
struct boost::asio::associator<Associator, wheelrpc::rpc::detail::ThrowingHandler<Handler>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const wheelrpc::rpc::detail::ThrowingHandler<Handler>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const wheelrpc::rpc::detail::ThrowingHandler<Handler>& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};
