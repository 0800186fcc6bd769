// The entry points of stream_ops.h, and ServerStream's out-of-line members.

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/server_stream.h>

#include "stream/stream_core.h"

namespace wheelrpc::rpc {
namespace detail {
namespace asio = boost::asio;

StreamHandle::~StreamHandle() {
  if (core_) core_->handle_dropped();
}

namespace {
/// Fails an operation on a handle without a stream: through the handler's
/// executor, never inside the call.
template <class Handler, class... Args>
void fail_unbound(Handler h, Args... args) {
  auto ex = asio::get_associated_executor(h, asio::system_executor());
  asio::post(asio::system_executor(), [ex, h = std::move(h), args...]() mutable {
    asio::dispatch(ex, [h = std::move(h), args...]() mutable { std::move(h)(args...); });
  });
}
}  // namespace

void stream_read(const std::shared_ptr<StreamCore>& core, StreamReadHandler handler) {
  if (!core)
    return fail_unbound(std::move(handler), make_error_code(errc::stream_closed), std::optional<std::string>());
  core->read(std::move(handler));
}
void stream_write(const std::shared_ptr<StreamCore>& core, std::string message, StreamDoneHandler handler,
                  WriteOptions options) {
  if (!core) return fail_unbound(std::move(handler), make_error_code(errc::stream_closed));
  core->write(std::move(message), std::move(handler), !options.no_compression);
}
void stream_writes_done(const std::shared_ptr<StreamCore>& core, StreamDoneHandler handler) {
  if (!core) return fail_unbound(std::move(handler), make_error_code(errc::stream_closed));
  core->writes_done(std::move(handler));
}
void stream_finish(const std::shared_ptr<StreamCore>& core, StreamDoneHandler handler) {
  if (!core) return fail_unbound(std::move(handler), make_error_code(errc::stream_closed));
  core->wait_end(std::move(handler));
}
void stream_cancel(StreamCore& core) {
  core.end_local(asio::error::operation_aborted, "cancelled by the application", StreamEnd::cancelled);
}
std::string stream_error_message(const StreamCore& core) { return core.error_message(); }
StreamInfo stream_info(const StreamCore& core) { return core.info(); }
boost::asio::any_io_executor stream_executor(const StreamCore& core) { return core.executor(); }
transport::Attachments stream_initial_metadata(const StreamCore& core) { return core.initial_metadata(); }
transport::Attachments stream_trailers(const StreamCore& core) { return core.trailers(); }
void stream_set_compression(StreamCore& core, transport::Compression compression, int level) {
  core.set_compression(compression, level);
}
bool stream_last_read_compressed(const StreamCore& core) { return core.last_read_compressed(); }

}  // namespace detail

// ---- ServerStream's out-of-line members -----------------------------------

void ServerStream::finish(boost::system::error_code ec, std::string message) {
  if (handle_) handle_->core().finish(ec, std::move(message));
}
void ServerStream::add_trailer(std::string key, std::string value) {
  if (handle_) handle_->core().add_trailer(std::move(key), std::move(value));
}
void ServerStream::add_initial_metadata(std::string key, std::string value) {
  if (handle_) handle_->core().add_initial_metadata(std::move(key), std::move(value));
}
void ServerStream::set_compression(transport::Compression compression, int level) {
  if (handle_) handle_->core().set_compression(compression, level);
}
bool ServerStream::last_read_compressed() const { return handle_ && handle_->core().last_read_compressed(); }
bool ServerStream::cancelled() const { return handle_ && handle_->core().cancelled(); }
const std::string& ServerStream::method() const {
  static const std::string none;
  return handle_ ? handle_->core().method() : none;
}
const transport::Attachments& ServerStream::metadata() const {
  static const transport::Attachments none;
  return handle_ ? handle_->core().metadata() : none;
}
std::optional<std::string_view> ServerStream::find_metadata(std::string_view key) const {
  for (const auto& [k, v] : metadata()) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}
std::optional<std::chrono::steady_clock::time_point> ServerStream::deadline() const {
  return handle_ ? handle_->core().deadline() : std::nullopt;
}
}  // namespace wheelrpc::rpc
