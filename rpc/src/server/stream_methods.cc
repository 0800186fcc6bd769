#include "server/stream_methods.h"

#include <fmt/format.h>

namespace wheelrpc::rpc::detail {

const char* kind_name(std::optional<MethodKind> kind) noexcept {
  if (!kind) return "stream";
  switch (*kind) {
    case MethodKind::unary: return "unary";
    case MethodKind::client_streaming: return "client-streaming";
    case MethodKind::server_streaming: return "server-streaming";
    case MethodKind::bidi_streaming: return "bidi-streaming";
  }
  return "stream";
}

std::string called_as_call(const std::string& method, std::optional<MethodKind> kind) {
  return fmt::format("'{}' is a {} method: open it as a stream (Client::async_open_stream)", method, kind_name(kind));
}

std::string opened_as_stream(const std::string& method) {
  return fmt::format("'{}' is a unary method: call it (Client::async_call), do not open it as a stream", method);
}

void StreamMethods::add(std::string name, StreamHandler handler, const MethodOptions& options,
                        std::optional<MethodKind> kind) {
  StreamMethod m{std::move(handler), kind, options.max_concurrency, options.timeout, nullptr, {}};
  if (m.max_concurrency > 0) m.open = std::make_unique<std::atomic<std::size_t>>(0);
  methods_[std::move(name)] = std::move(m);
}

void StreamMethods::add(std::string name, CoreStreamHandler handler, MethodKind kind) {
  StreamMethod m{{}, kind, 0, std::chrono::milliseconds(0), nullptr, std::move(handler)};
  methods_[std::move(name)] = std::move(m);
}

std::vector<std::string> StreamMethods::names() const {
  std::vector<std::string> out;
  out.reserve(methods_.size());
  for (const auto& [name, m] : methods_) out.push_back(name);
  return out;
}

const StreamMethod* StreamMethods::find(const std::string& name) const {
  const auto it = methods_.find(name);
  return it == methods_.end() ? nullptr : &it->second;
}

std::optional<std::string> StreamMethods::take(const StreamMethod& m, const std::string& name) {
  if (max_open_ != 0 && open_.fetch_add(1, std::memory_order_relaxed) >= max_open_) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    return fmt::format("stream '{}' refused: {} streams open on this server (ServerStreamOptions::max_open)", name,
                       max_open_);
  }
  if (m.open && m.open->fetch_add(1, std::memory_order_relaxed) >= m.max_concurrency) {
    m.open->fetch_sub(1, std::memory_order_relaxed);
    if (max_open_ != 0) open_.fetch_sub(1, std::memory_order_relaxed);
    return fmt::format("'{}' is at its limit of {} streams open at once (max_concurrency): stream not opened", name,
                       m.max_concurrency);
  }
  return std::nullopt;
}

void StreamMethods::give_back(const StreamMethod& m) noexcept {
  if (max_open_ != 0) open_.fetch_sub(1, std::memory_order_relaxed);
  if (m.open) m.open->fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace wheelrpc::rpc::detail
