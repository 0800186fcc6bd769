// Pure encoding/decoding of etcd's JSON gateway messages: no etcd needed.

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <wheelrpc/registry/errc.h>

#include "etcd_json.h"

namespace {
using namespace wheelrpc::registry::detail;
using wheelrpc::registry::errc;
using boost::system::error_code;

std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

TEST(EtcdJson, Base64RoundTripsBinaryAndRejectsGarbage) {
  const std::string bin("a\0\xff/b", 5);
  EXPECT_EQ(base64_encode("a"), "YQ==");
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_decode(base64_encode(bin)), bin);
  EXPECT_EQ(base64_decode("YWJj"), "abc");
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_FALSE(base64_decode("YQ="));   // length not a multiple of 4
  EXPECT_FALSE(base64_decode("Y!=="));  // invalid character
  EXPECT_FALSE(base64_decode("Y==="));  // too much padding
}

TEST(EtcdJson, PrefixRangeEndIncrementsTheLastByte) {
  EXPECT_EQ(prefix_range_end("/a/"), "/a0");
  EXPECT_EQ(prefix_range_end("ab"), "ac");
  EXPECT_EQ(prefix_range_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_range_end(""), std::string(1, '\0'));
  EXPECT_EQ(prefix_range_end(std::string("\xff", 1)), std::string(1, '\0'));
}

TEST(EtcdJson, RequestsUseBase64AndInt64Strings) {
  auto put = boost::json::parse(encode_put("/k", "v", 7587)).as_object();
  EXPECT_EQ(str(put["key"]), "L2s=");
  EXPECT_EQ(str(put["value"]), "dg==");
  EXPECT_EQ(str(put["lease"]), "7587");
  EXPECT_FALSE(boost::json::parse(encode_put("/k", "v", 0)).as_object().contains("lease"));

  auto range = boost::json::parse(encode_range_prefix("/a/")).as_object();
  EXPECT_EQ(str(range["key"]), base64_encode("/a/"));
  EXPECT_EQ(str(range["range_end"]), base64_encode("/a0"));

  EXPECT_EQ(str(boost::json::parse(encode_lease_grant(std::chrono::seconds(5))).as_object()["TTL"]), "5");
  EXPECT_EQ(str(boost::json::parse(encode_lease_id(-3)).as_object()["ID"]), "-3");

  const std::string watch = encode_watch_create("/a/", 12);
  ASSERT_EQ(watch.back(), '\n');
  auto create = boost::json::parse(watch).as_object()["create_request"].as_object();
  EXPECT_EQ(str(create["start_revision"]), "12");
  EXPECT_EQ(str(create["range_end"]), base64_encode("/a0"));
  EXPECT_FALSE(boost::json::parse(encode_watch_create("/a/", 0))
                   .as_object()["create_request"]
                   .as_object()
                   .contains("start_revision"));
}

TEST(EtcdJson, RangeDecodesStringInt64sBase64AndOmittedFields) {
  // As etcd 3.4 answers: int64s as strings, lease and value omitted when zero/empty.
  const std::string body =
      R"({"header":{"cluster_id":"15118495548433857066","revision":"9","raft_term":"2"},)"
      R"("kvs":[{"key":"L2EvMQ==","create_revision":"2","mod_revision":"8","version":"3","value":"eA==","lease":"7587"},)"
      R"({"key":"L2EvMg==","create_revision":5,"mod_revision":"5","version":"1"}],"count":"2"})";
  RangeResult r;
  error_code ec;
  std::string why;
  decode_range(body, r, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(r.revision, 9);
  ASSERT_EQ(r.kvs.size(), 2u);
  EXPECT_EQ(r.kvs[0].key, "/a/1");
  EXPECT_EQ(r.kvs[0].value, "x");
  EXPECT_EQ(r.kvs[0].lease, 7587);
  EXPECT_EQ(r.kvs[0].mod_revision, 8);
  EXPECT_EQ(r.kvs[1].key, "/a/2");
  EXPECT_EQ(r.kvs[1].value, "");
  EXPECT_EQ(r.kvs[1].lease, 0);
  EXPECT_EQ(r.kvs[1].create_revision, 5);  // a JSON number is accepted too

  RangeResult empty;
  decode_range(R"({"header":{"revision":"3"}})", empty, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(empty.revision, 3);
  EXPECT_TRUE(empty.kvs.empty());
}

TEST(EtcdJson, BadAnswersGiveBadResponseWithAReason) {
  RangeResult r;
  error_code ec;
  std::string why;
  decode_range("{not json", r, ec, why);
  EXPECT_EQ(ec, errc::bad_response);
  EXPECT_NE(why.find("invalid JSON"), std::string::npos) << why;

  decode_range(R"({"header":{"revision":"x9"}})", r, ec, why);
  EXPECT_EQ(ec, errc::bad_response);
  EXPECT_NE(why.find("revision"), std::string::npos) << why;

  decode_range(R"({"kvs":[{"key":"***"}]})", r, ec, why);
  EXPECT_EQ(ec, errc::bad_response);
  EXPECT_NE(why.find("base64"), std::string::npos) << why;

  decode_range(R"([1,2])", r, ec, why);
  EXPECT_EQ(ec, errc::bad_response);
}

TEST(EtcdJson, EtcdErrorBodyIsEtcdError) {
  const std::string body =
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})";
  PutResult p;
  error_code ec;
  std::string why;
  decode_put(body, p, ec, why);
  EXPECT_EQ(ec, errc::etcd_error);
  EXPECT_NE(why.find("requested lease not found"), std::string::npos) << why;
  EXPECT_NE(decode_error_message(body)->find("code 5"), std::string::npos);
  EXPECT_FALSE(decode_error_message(R"({"header":{}})"));
  EXPECT_FALSE(decode_error_message("nope"));
}

TEST(EtcdJson, LeaseGrantAndKeepAlive) {
  LeaseGrantResult g;
  error_code ec;
  std::string why;
  decode_lease_grant(R"({"header":{"revision":"1"},"ID":"4111120176288501254","TTL":"5"})", g, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(g.id, 4111120176288501254);
  EXPECT_EQ(g.ttl, std::chrono::seconds(5));

  decode_lease_grant(R"({"header":{"revision":"1"},"TTL":"5"})", g, ec, why);
  EXPECT_EQ(ec, errc::bad_response);  // no ID

  KeepAliveResult k;
  decode_keepalive(R"({"result":{"header":{"revision":"2"},"ID":"123","TTL":"10"}})", k, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(k.id, 123);
  EXPECT_EQ(k.ttl, std::chrono::seconds(10));

  // A gone lease: etcd answers without TTL (its zero value), not with an error.
  decode_keepalive(R"({"result":{"header":{"revision":"2"},"ID":"123"}})", k, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(k.ttl, std::chrono::seconds(0));

  decode_keepalive(R"({"header":{}})", k, ec, why);
  EXPECT_EQ(ec, errc::bad_response);
}

TEST(EtcdJson, WatchPutWithoutTypeAndDelete) {
  const std::string line =
      R"({"result":{"header":{"revision":"3"},"events":[)"
      R"({"kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"Yg=="}},)"
      R"({"type":"DELETE","kv":{"key":"YQ==","mod_revision":"3"}}]}})";
  WatchResponse w;
  error_code ec;
  std::string why;
  decode_watch_response(line, w, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_EQ(w.revision, 3);
  EXPECT_FALSE(w.created);
  EXPECT_EQ(w.watch_id, 0);  // omitted zero
  ASSERT_EQ(w.events.size(), 2u);
  EXPECT_EQ(w.events[0].type, EventType::put);
  EXPECT_EQ(w.events[0].kv.key, "a");
  EXPECT_EQ(w.events[0].kv.value, "b");
  EXPECT_EQ(w.events[1].type, EventType::del);
  EXPECT_EQ(w.events[1].kv.mod_revision, 3);

  decode_watch_response(R"({"result":{"header":{"revision":"3"},"created":true}})", w, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_TRUE(w.created);
  EXPECT_TRUE(w.events.empty());

  decode_watch_response(R"({"result":{"events":[{"type":"BOGUS","kv":{"key":"YQ=="}}]}})", w, ec, why);
  EXPECT_EQ(ec, errc::bad_response);
}

TEST(EtcdJson, WatchCompactedAndCanceled) {
  WatchResponse w;
  error_code ec;
  std::string why;
  decode_watch_response(R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"3"}})", w, ec,
                        why);
  ASSERT_FALSE(ec) << why;
  EXPECT_TRUE(w.canceled);
  EXPECT_EQ(w.compact_revision, 3);

  decode_watch_response(R"({"result":{"canceled":true,"cancel_reason":"permission denied"}})", w, ec, why);
  ASSERT_FALSE(ec) << why;
  EXPECT_TRUE(w.canceled);
  EXPECT_EQ(w.compact_revision, 0);
  EXPECT_EQ(w.cancel_reason, "permission denied");

  // A stream-level gateway error.
  decode_watch_response(R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader"}})", w, ec, why);
  EXPECT_EQ(ec, errc::etcd_error);
  EXPECT_EQ(why, "etcdserver: no leader");
}

TEST(WatchStreamSplitter, PartialChunksAreJoined) {
  WatchStreamSplitter s;
  bool overflow = false;
  EXPECT_TRUE(s.feed(R"({"result":{"crea)", overflow).empty());
  EXPECT_GT(s.pending(), 0u);
  EXPECT_TRUE(s.feed("ted\":true}", overflow).empty());
  auto out = s.feed("}\n", overflow);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], R"({"result":{"created":true}})");
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_FALSE(overflow);
}

TEST(WatchStreamSplitter, SeveralMessagesInOneChunkComeOutInOrder) {
  WatchStreamSplitter s;
  bool overflow = false;
  auto out = s.feed("{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":", overflow);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], "{\"a\":1}");
  EXPECT_EQ(out[1], "{\"b\":2}");  // CR dropped, empty line skipped
  EXPECT_EQ(s.pending(), 5u);
  out = s.feed("3}\n", overflow);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], "{\"c\":3}");
}

TEST(WatchStreamSplitter, OverlongMessageIsFlagged) {
  WatchStreamSplitter s(8);
  bool overflow = false;
  s.feed("12345678", overflow);
  EXPECT_FALSE(overflow);
  s.feed("9", overflow);
  EXPECT_TRUE(overflow);
}

}  // namespace
