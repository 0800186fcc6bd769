// libFuzzer target for the admin HTTP request parser (RequestParser, on
// Beast's request_parser with the session's limits). Bytes arrive as a session
// receives them: in pieces of 1..64 bytes (chosen by the input's size), fed
// again from the first unconsumed byte, requests back to back. Beyond "no
// crash, no sanitizer report" it checks:
//   - consumed never exceeds what was offered; "100 Continue" is asked for
//     only while the body is still to come;
//   - a refusal is 400, 413 or 431 with a reason, and is sticky;
//   - a request has a token method, a path without '?', lower-case header
//     names, a body within the limit, version 1.0 or 1.1;
//   - the first request comes out the same whether the bytes arrive in pieces
//     or at once (parse_http_request). Only a complete request must: Beast
//     finds some errors in an incomplete header when it has the bytes at once,
//     but waits for the header's end when they arrive in pieces (it resumes
//     its search for the blank line where it stopped), so the same bytes can
//     be refused at once or still need more.
// Run it with scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "http_request_parser.h"

namespace {

using wheelrpc::admin::detail::HttpRequest;
using wheelrpc::admin::detail::HttpServerOptions;
using wheelrpc::admin::detail::parse_http_request;
using wheelrpc::admin::detail::ParseResult;
using wheelrpc::admin::detail::ParseStatus;
using wheelrpc::admin::detail::RequestParser;

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

// Smaller than the defaults so that both limits are reachable from inputs
// libFuzzer actually produces.
HttpServerOptions limits() {
  HttpServerOptions o;
  o.max_header_bytes = 2048;
  o.max_body_bytes = 4096;
  return o;
}

bool is_tchar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= '0' && u <= '9') return true;
  if ((u | 0x20) >= 'a' && (u | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void check_request(const HttpRequest& r, const HttpServerOptions& o) {
  FUZZ_CHECK(!r.method.empty());
  for (char c : r.method) FUZZ_CHECK(is_tchar(c));
  FUZZ_CHECK(r.path.find('?') == std::string::npos);
  for (const auto& [name, value] : r.headers) {
    FUZZ_CHECK(!name.empty());
    for (char c : name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
    FUZZ_CHECK(r.header(name).data() != nullptr);
  }
  FUZZ_CHECK(r.body.size() <= o.max_body_bytes);
  FUZZ_CHECK(r.version == 10 || r.version == 11);
}

void check_refusal(const ParseResult& r) {
  FUZZ_CHECK(r.http_status == 400 || r.http_status == 413 || r.http_status == 431);
  FUZZ_CHECK(!r.reason.empty());
}

bool same_request(const HttpRequest& a, const HttpRequest& b) {
  return a.method == b.method && a.path == b.path && a.query == b.query && a.headers == b.headers && a.body == b.body &&
         a.version == b.version && a.keep_alive == b.keep_alive;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const HttpServerOptions o = limits();
  const std::size_t step = 1 + size % 64;

  // All at once, and in two pieces (what the one-shot entry point offers).
  const ParseResult once = parse_http_request(bytes, o);
  const ParseResult split = parse_http_request(bytes, o, step);
  FUZZ_CHECK(once.consumed <= size && split.consumed <= size);
  FUZZ_CHECK((once.status == ParseStatus::complete) == (split.status == ParseStatus::complete));
  if (once.status == ParseStatus::complete) {
    check_request(once.request, o);
    FUZZ_CHECK(same_request(once.request, split.request));
    FUZZ_CHECK(once.consumed == split.consumed);
  }
  if (once.status == ParseStatus::error) check_refusal(once);
  if (split.status == ParseStatus::error) check_refusal(split);

  // As a session: pieces of `step` bytes, unconsumed bytes offered again,
  // requests back to back until the bytes run out or one is refused.
  RequestParser parser(o);
  std::string in;
  std::size_t offset = 0;
  std::size_t requests = 0;
  for (;;) {
    if (offset < size) {
      in.append(bytes.substr(offset, step));
      offset += step;
    }
    const ParseResult r = parser.feed(in);
    FUZZ_CHECK(r.consumed <= in.size());
    FUZZ_CHECK(!r.expect_continue || r.status == ParseStatus::need_more);
    in.erase(0, r.consumed);
    if (r.status == ParseStatus::complete) {
      check_request(r.request, o);
      if (requests == 0) {
        FUZZ_CHECK(once.status == ParseStatus::complete);
        FUZZ_CHECK(same_request(r.request, once.request));
      }
      ++requests;
      parser.reset();
      continue;
    }
    if (r.status == ParseStatus::error) {
      check_refusal(r);
      if (requests == 0) FUZZ_CHECK(once.status != ParseStatus::complete);
      const ParseResult again = parser.feed("GET / HTTP/1.1\r\n\r\n");
      FUZZ_CHECK(again.status == ParseStatus::error && again.http_status == r.http_status);
      break;
    }
    if (offset >= size) {
      if (requests == 0) FUZZ_CHECK(once.status != ParseStatus::complete);
      break;
    }
  }
  return 0;
}
