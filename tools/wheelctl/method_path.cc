#include "method_path.h"

#include <algorithm>

namespace wheelrpc::wheelctl {

namespace {

bool is_name(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

}  // namespace

std::optional<MethodPath> MethodPath::parse(std::string_view text) {
  if (!text.empty() && text.front() == '/') text.remove_prefix(1);
  std::string_view service, method;
  if (const auto slash = text.find('/'); slash != std::string_view::npos) {
    service = text.substr(0, slash);
    method = text.substr(slash + 1);
  } else {
    const auto dot = text.rfind('.');
    if (dot == std::string_view::npos) return std::nullopt;
    service = text.substr(0, dot);
    method = text.substr(dot + 1);
  }
  if (!is_name(service) || !is_name(method) || method.find('.') != std::string_view::npos) return std::nullopt;
  return MethodPath{std::string(service), std::string(method)};
}

}  // namespace wheelrpc::wheelctl
