#pragma once
/// Internal to ClientStream and ServerStream: the non-template entry points
/// of a stream's operations, and the completion-token glue (the tokens whose
/// failures throw get a CallError with the stream's full message). Not an API.

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <wheelrpc/rpc/call_error.h>
#include <wheelrpc/rpc/detail/throwing_handler.h>
#include <wheelrpc/rpc/stream_info.h>
#include <wheelrpc/rpc/write_options.h>
#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/frame.h>

namespace wheelrpc::rpc::detail {

class StreamCore;

using StreamReadSignature = void(boost::system::error_code, std::optional<std::string>);
using StreamDoneSignature = void(boost::system::error_code);
using StreamReadHandler = boost::asio::any_completion_handler<StreamReadSignature>;
using StreamDoneHandler = boost::asio::any_completion_handler<StreamDoneSignature>;

/// A user's handle on a stream (ClientStream, ServerStream share one per
/// stream): when the last copy goes without the stream having ended, the
/// stream is ended for them (a client's cancelled, a server's answered
/// server_error), so nothing is left open on either side.
class StreamHandle {
 public:
  explicit StreamHandle(std::shared_ptr<StreamCore> core) noexcept : core_(std::move(core)) {}
  ~StreamHandle();
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  StreamCore& core() const noexcept { return *core_; }
  const std::shared_ptr<StreamCore>& shared() const noexcept { return core_; }

 private:
  std::shared_ptr<StreamCore> core_;
};

void stream_read(const std::shared_ptr<StreamCore>& core, StreamReadHandler handler);
void stream_write(const std::shared_ptr<StreamCore>& core, std::string message, StreamDoneHandler handler,
                  WriteOptions options = {});
void stream_writes_done(const std::shared_ptr<StreamCore>& core, StreamDoneHandler handler);
void stream_finish(const std::shared_ptr<StreamCore>& core, StreamDoneHandler handler);
void stream_cancel(StreamCore& core);
std::string stream_error_message(const StreamCore& core);
StreamInfo stream_info(const StreamCore& core);
boost::asio::any_io_executor stream_executor(const StreamCore& core);
transport::Attachments stream_initial_metadata(const StreamCore& core);
transport::Attachments stream_trailers(const StreamCore& core);
void stream_set_compression(StreamCore& core, transport::Compression compression, int level);
bool stream_last_read_compressed(const StreamCore& core);

/// Turns (error_code, T...) into (exception_ptr, T...) with a CallError
/// holding the stream's message; keeps the handler's associated executor,
/// allocator and cancellation slot.
template <class Handler, class Signature>
struct StreamThrowingHandler;
template <class Handler, class... T>
struct StreamThrowingHandler<Handler, void(boost::system::error_code, T...)> {
  Handler handler;
  std::shared_ptr<StreamCore> core;
  void operator()(boost::system::error_code ec, T... v) {
    std::exception_ptr e;
    if (ec) e = std::make_exception_ptr(CallError(ec, core ? stream_error_message(*core) : ec.message()));
    std::move(handler)(std::move(e), std::move(v)...);
  }
};

template <class Signature>
struct ThrowingSignature;
template <class... T>
struct ThrowingSignature<void(boost::system::error_code, T...)> {
  using type = void(std::exception_ptr, T...);
};

/// async_initiate for a stream operation of signature `Signature`; `start`
/// takes the type-erased handler.
template <class Signature, class Token, class Start>
auto initiate_stream_op(const std::shared_ptr<StreamCore>& core, Token&& token, Start start) {
  if constexpr (throws_on_error<std::decay_t<Token>>::value) {
    return boost::asio::async_initiate<Token, typename ThrowingSignature<Signature>::type>(
        [core, start = std::move(start)](auto handler) mutable {
          start(boost::asio::any_completion_handler<Signature>(
              StreamThrowingHandler<decltype(handler), Signature>{std::move(handler), core}));
        },
        token);
  } else {
    return boost::asio::async_initiate<Token, Signature>(
        [start = std::move(start)](auto handler) mutable {
          start(boost::asio::any_completion_handler<Signature>(std::move(handler)));
        },
        token);
  }
}

}  // namespace wheelrpc::rpc::detail

template <template <typename, typename> class Associator, typename Handler, typename Signature,
          typename DefaultCandidate>
struct boost::asio::associator<Associator, wheelrpc::rpc::detail::StreamThrowingHandler<Handler, Signature>,
                               DefaultCandidate> : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const wheelrpc::rpc::detail::StreamThrowingHandler<Handler, Signature>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const wheelrpc::rpc::detail::StreamThrowingHandler<Handler, Signature>& h,
                  const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};
