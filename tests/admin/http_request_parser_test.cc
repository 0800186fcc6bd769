// RequestParser and parse_http_request on their own (what the sessions and the
// fuzz target share): fields, resuming at any split, the limits and the
// status of each refusal.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "http_request_parser.h"

namespace {
using namespace wheelrpc::admin::detail;

TEST(HttpRequestParser, ParsesARequestWithQueryHeadersAndBody) {
  const auto r = parse_http_request(
      "PATCH /a/b?x=1&y HTTP/1.1\r\nHost: h\r\nX-Thing: V\r\nContent-Length: 3\r\n\r\nabcGET", HttpServerOptions{});
  ASSERT_EQ(r.status, ParseStatus::complete);
  EXPECT_EQ(r.request.method, "PATCH");
  EXPECT_EQ(r.request.path, "/a/b");
  EXPECT_EQ(r.request.query, "x=1&y");
  EXPECT_EQ(r.request.query_param("x"), "1");
  EXPECT_EQ(r.request.query_param("y"), "");
  EXPECT_EQ(r.request.query_param("z"), "");
  EXPECT_EQ(r.request.header("x-thing"), "V");
  EXPECT_EQ(r.request.header("absent"), "");
  EXPECT_EQ(r.request.body, "abc");
  EXPECT_TRUE(r.request.keep_alive);
  EXPECT_EQ(
      r.consumed,
      std::string_view("PATCH /a/b?x=1&y HTTP/1.1\r\nHost: h\r\nX-Thing: V\r\nContent-Length: 3\r\n\r\nabc").size());
}

TEST(HttpRequestParser, ResumesAtEverySplitPoint) {
  const std::string req = "POST /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  for (std::size_t split = 0; split <= req.size(); ++split) {
    const auto r = parse_http_request(req, HttpServerOptions{}, split);
    ASSERT_EQ(r.status, ParseStatus::complete) << split;
    EXPECT_EQ(r.request.body, "abc") << split;
    EXPECT_EQ(r.consumed, req.size()) << split;
  }
}

TEST(HttpRequestParser, TheHeaderLimitCountsFromTheRequestLineWhereverTheBytesSplit) {
  HttpServerOptions o;
  o.max_header_bytes = 100;
  const std::string start = "GET /a-rather-long-request-target-to-count HTTP/1.1\r\nX: ";
  const std::string fits = start + std::string(o.max_header_bytes - start.size() - 4, 'v') + "\r\n\r\n";
  ASSERT_EQ(fits.size(), o.max_header_bytes);
  const std::string over = start + std::string(o.max_header_bytes - start.size() - 3, 'v') + "\r\n\r\n";
  for (std::size_t split = 0; split <= over.size(); ++split) {
    EXPECT_EQ(parse_http_request(fits, o, split).status, ParseStatus::complete) << split;
    const auto r = parse_http_request(over, o, split);
    EXPECT_EQ(r.status, ParseStatus::error) << split;
    EXPECT_EQ(r.http_status, 431u) << split;
  }
}

TEST(HttpRequestParser, ReportsNeedMoreAndTheStatusOfEachRefusal) {
  HttpServerOptions o;
  o.max_header_bytes = 64;
  o.max_body_bytes = 4;
  EXPECT_EQ(parse_http_request("GET / HTTP/1.1\r\nHost:", o).status, ParseStatus::need_more);
  EXPECT_EQ(parse_http_request("", o).status, ParseStatus::need_more);
  EXPECT_EQ(parse_http_request("\x01\x02 / HTTP/1.1\r\n\r\n", o).http_status, 400u);
  EXPECT_EQ(parse_http_request("GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n", o).http_status, 431u);
  EXPECT_EQ(parse_http_request("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", o).http_status, 413u);
  EXPECT_EQ(parse_http_request("GET / HTTP/2.0\r\n\r\n", o).http_status, 400u);
  const auto bad = parse_http_request("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", o);
  EXPECT_EQ(bad.status, ParseStatus::error);
  EXPECT_EQ(bad.http_status, 400u);
  EXPECT_FALSE(bad.reason.empty());
}

TEST(HttpRequestParser, AsksFor100ContinueOnceWhenTheBodyIsAwaited) {
  RequestParser p(HttpServerOptions{});
  std::string in = "PUT /x HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n";
  auto r = p.feed(in);
  EXPECT_EQ(r.status, ParseStatus::need_more);
  EXPECT_TRUE(r.expect_continue);
  in.erase(0, r.consumed);
  in += "ab";
  r = p.feed(in);
  EXPECT_EQ(r.status, ParseStatus::need_more);
  EXPECT_FALSE(r.expect_continue);
  in.erase(0, r.consumed);
  in += "cd";
  r = p.feed(in);
  ASSERT_EQ(r.status, ParseStatus::complete);
  EXPECT_EQ(r.request.body, "abcd");
  // Not with the body already there, nor for HTTP/1.0.
  EXPECT_FALSE(
      parse_http_request("PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz", HttpServerOptions{})
          .expect_continue);
  EXPECT_FALSE(
      parse_http_request("PUT /x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n", HttpServerOptions{})
          .expect_continue);
}

TEST(HttpRequestParser, AnErrorIsStickyUntilReset) {
  RequestParser p(HttpServerOptions{});
  EXPECT_EQ(p.feed("BAD\x01 / HTTP/1.1\r\n\r\n").status, ParseStatus::error);
  EXPECT_EQ(p.feed("GET / HTTP/1.1\r\n\r\n").status, ParseStatus::error);
  p.reset();
  EXPECT_EQ(p.feed("GET / HTTP/1.1\r\n\r\n").status, ParseStatus::complete);
}

}  // namespace
