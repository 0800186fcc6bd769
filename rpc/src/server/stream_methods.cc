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
  StreamMethod m{std::move(handler),
                 kind,
                 std::make_unique<MethodLimits>(options),
                 std::make_unique<std::atomic<std::size_t>>(0),
                 {}};
  methods_[std::move(name)] = std::move(m);
}

void StreamMethods::add(std::string name, CoreStreamHandler handler, MethodKind kind) {
  StreamMethod m{{},
                 kind,
                 std::make_unique<MethodLimits>(MethodOptions{}),
                 std::make_unique<std::atomic<std::size_t>>(0),
                 std::move(handler)};
  methods_[std::move(name)] = std::move(m);
}

void StreamMethods::apply_rules(const ServerRules* rules) noexcept {
  for (auto& [name, m] : methods_) {
    if (m.core_handler || is_library_method(name)) continue;
    m.limits->apply(rules ? rules->for_method(name) : ServerMethodOverrides{});
  }
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

std::optional<std::string> StreamMethods::take(const StreamMethod& m, const std::string& name, bool& counted) {
  counted = false;
  if (max_open_ != 0 && open_.fetch_add(1, std::memory_order_relaxed) >= max_open_) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    return fmt::format("stream '{}' refused: {} streams open on this server (ServerStreamOptions::max_open)", name,
                       max_open_);
  }
  const std::size_t limit = m.limits->max_concurrency();
  if (limit == 0) return std::nullopt;
  if (m.open->fetch_add(1, std::memory_order_relaxed) >= limit) {
    m.open->fetch_sub(1, std::memory_order_relaxed);
    if (max_open_ != 0) open_.fetch_sub(1, std::memory_order_relaxed);
    return fmt::format("'{}' is at its limit of {} streams open at once (max_concurrency): stream not opened", name,
                       limit);
  }
  counted = true;
  return std::nullopt;
}

void StreamMethods::give_back(const StreamMethod& m, bool counted) noexcept {
  if (max_open_ != 0) open_.fetch_sub(1, std::memory_order_relaxed);
  if (counted) m.open->fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace wheelrpc::rpc::detail
