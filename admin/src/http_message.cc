#include "http_message.h"

namespace wheelrpc::admin::detail {

std::string_view HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

std::string HttpRequest::query_param(std::string_view name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == std::string_view::npos ? std::string{} : std::string(pair.substr(eq + 1));
    }
  }
  return {};
}

HttpResponse HttpResponse::text(unsigned status, std::string_view text, bool close) {
  HttpResponse r;
  r.status = status;
  r.body.assign(text).push_back('\n');
  r.close = close;
  return r;
}

}  // namespace wheelrpc::admin::detail
