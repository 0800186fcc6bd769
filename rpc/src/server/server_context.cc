#include <wheelrpc/rpc/server_context.h>

#include <wheelrpc/rpc/options.h>

#include "base/metadata_split.h"

namespace wheelrpc::rpc {

ServerContext::ServerContext(Request request, Responder responder) noexcept
    : request_(std::move(request)), responder_(std::move(responder)) {}

ServerContext::~ServerContext() = default;

const std::string* ServerContext::find_metadata(std::string_view key) const noexcept {
  for (const auto& [k, v] : request_.attachments) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::chrono::milliseconds ServerContext::remaining() const noexcept {
  if (!request_.deadline) return CallOptions::kNoDeadline;
  return std::chrono::duration_cast<std::chrono::milliseconds>(responder_.remaining());
}

std::optional<TraceContext> ServerContext::trace() const noexcept {
  const std::string* tp = find_metadata(kTraceparentKey);
  return tp ? TraceContext::parse(*tp) : std::nullopt;
}

transport::Attachments ServerContext::take_reply_attachments() {
  transport::Attachments all = std::move(reply_metadata_);
  reply_metadata_.clear();
  detail::join_trailers(all, std::move(trailing_metadata_));
  return all;
}

bool ServerContext::cancelled() const noexcept { return responder_.expired() || responder_.cancelled(); }

}  // namespace wheelrpc::rpc
