#include "http_request_parser.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
// GCC 12 at -O2 with the sanitizers takes the boost::none Beast's parser
// returns for a missing Content-Length as maybe-uninitialized (a false
// positive in Beast's header, not in this file).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/beast/http/parser.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/core/string.hpp>

namespace wheelrpc::admin::detail {
namespace http = boost::beast::http;

namespace {

/// The answer to a parse error: 413 and 431 for the two limits, 400 for the rest.
std::pair<unsigned, std::string> refusal(const boost::system::error_code& ec) {
  if (ec == http::error::body_limit) return {413, "request body too large"};
  if (ec == http::error::header_limit) return {431, "request header too large"};
  return {400, "malformed HTTP request: " + ec.message()};
}

HttpRequest to_request(http::request<http::string_body>&& msg) {
  HttpRequest r;
  r.method = std::string(msg.method_string());
  const std::string_view target = msg.target();
  const auto q = target.find('?');
  r.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
  r.headers.reserve(static_cast<std::size_t>(std::distance(msg.begin(), msg.end())));
  for (const auto& field : msg) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    r.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  r.version = msg.version();
  r.keep_alive = msg.keep_alive();
  r.body = std::move(msg.body());
  return r;
}

}  // namespace

struct RequestParser::Impl {
  std::uint32_t header_limit;
  std::size_t header_consumed = 0;  // bytes of this request's header consumed so far
  bool continue_reported = false;
  std::uint64_t body_limit;
  std::optional<http::request_parser<http::string_body>> parser;
  // Set once the current request failed: the parser's state is then
  // unspecified, so it is not fed again until reset().
  std::optional<std::pair<unsigned, std::string>> failed;

  void emplace() {
    failed.reset();
    header_consumed = 0;
    continue_reported = false;
    parser.emplace();
    // One more than ours: the limit is enforced by feed() (see there), so
    // Beast's own check, which counts differently, never decides.
    parser->header_limit(header_limit + 1);
    parser->body_limit(body_limit);
    // Parse into the body in the same put() as the header: the session keeps
    // no body bytes of its own, only an incomplete header.
    parser->eager(true);
  }
};

RequestParser::RequestParser(const HttpServerOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->header_limit = static_cast<std::uint32_t>(
      std::min<std::size_t>(options.max_header_bytes, std::numeric_limits<std::uint32_t>::max() - 1));
  impl_->body_limit = options.max_body_bytes;
  impl_->emplace();
}

RequestParser::~RequestParser() = default;

void RequestParser::reset() { impl_->emplace(); }

ParseResult RequestParser::feed(std::string_view bytes) {
  ParseResult r;
  auto fail = [&](unsigned status, std::string reason) {
    impl_->failed.emplace(status, reason);
    r.status = ParseStatus::error;
    r.http_status = status;
    r.reason = std::move(reason);
    return std::move(r);
  };
  if (impl_->failed) return fail(impl_->failed->first, impl_->failed->second);
  auto& p = *impl_->parser;
  if (p.is_done()) return fail(400, "request parser reused without reset");

  auto need_more = [&] {
    if (p.is_header_done() && !impl_->continue_reported && p.get().version() == 11 &&
        boost::beast::iequals(p.get()[http::field::expect], "100-continue")) {
      impl_->continue_reported = true;
      r.expect_continue = true;
    }
    return std::move(r);
  };

  std::size_t off = 0;
  while (!p.is_done()) {
    // Beast applies its header limit to the request line and to the fields
    // each from where it starts, and differently when a header arrives in
    // pieces. The limit is ours instead: Beast sees at most what is left of
    // max_header_bytes until the header is done, so the blank line must come
    // within it wherever the reads split the bytes.
    const bool in_header = !p.is_header_done();
    std::size_t window = bytes.size() - off;
    if (in_header) window = std::min<std::size_t>(window, impl_->header_limit - impl_->header_consumed);
    boost::system::error_code ec;
    const std::size_t n = p.put(boost::asio::const_buffer(bytes.data() + off, window), ec);
    off += n;
    r.consumed = off;
    if (in_header) impl_->header_consumed += n;
    if (ec == http::error::need_more) {
      const bool cut = window - n < bytes.size() - off;  // bytes Beast was not shown
      if (!cut) return need_more();
      if (!p.is_header_done()) return fail(431, "request header too large");
      continue;  // the header ended within the window: the body is in the rest
    }
    if (ec) {
      auto [status, reason] = refusal(ec);
      return fail(status, std::move(reason));
    }
    if (n == 0) return need_more();
  }
  // Beast refuses every version but 1.0 and 1.1 as a bad version (400).
  r.status = ParseStatus::complete;
  r.request = to_request(p.release());
  return r;
}

ParseResult parse_http_request(std::string_view bytes, const HttpServerOptions& options, std::size_t split) {
  RequestParser parser(options);
  split = std::min(split, bytes.size());
  // As a session does: offer the first piece, keep what was not consumed, and
  // offer it again with the rest.
  ParseResult first = parser.feed(bytes.substr(0, split));
  if (first.status != ParseStatus::need_more || split == bytes.size()) return first;
  ParseResult second = parser.feed(bytes.substr(first.consumed));
  second.consumed += first.consumed;
  return second;
}

}  // namespace wheelrpc::admin::detail
