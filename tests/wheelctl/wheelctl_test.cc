// wheelctl's pure parts: method names, the JSON request feed, -H headers,
// base64, .proto files through the compiler front end, describe's text,
// the JSON codec's errors and the exit status of a failed call.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <wheelrpc/rpc/errc.h>
#include <wheelrpc/rpc/status_code.h>

#include "connection_flags.h"
#include "descriptor_source.h"
#include "etcd_scan.h"
#include "json_splitter.h"
#include "message_codec.h"
#include "method_path.h"
#include "proto_file_source.h"
#include "proto_printer.h"
#include "request_feed.h"
#include "status_text.h"

namespace wheelrpc::wheelctl {
namespace {

const std::string kSource = WHEELCTL_TEST_SOURCE_DIR;

TEST(WheelctlMethodPathTest, AcceptsGrpcurlsThreeForms) {
  for (const char* text :
       {"/helloworld.Greeter/SayHello", "helloworld.Greeter/SayHello", "helloworld.Greeter.SayHello"}) {
    const auto p = MethodPath::parse(text);
    ASSERT_TRUE(p) << text;
    EXPECT_EQ(p->service, "helloworld.Greeter");
    EXPECT_EQ(p->method, "SayHello");
    EXPECT_EQ(p->path(), "/helloworld.Greeter/SayHello");
  }
}

TEST(WheelctlMethodPathTest, RejectsWhatNamesNoMethod) {
  for (const char* text : {"", "/", "SayHello", "/a/b/c", "a.b/", "/x y/Z", "a./b", "pkg.S/M.N"}) {
    EXPECT_FALSE(MethodPath::parse(text)) << text;
  }
}

TEST(WheelctlJsonSplitterTest, CutsObjectsAcrossLinesAndWithinOne) {
  JsonSplitter s;
  auto a = s.feed("{\"name\": \"a}\\\"{\"}  {\"x\": [1, {\"y\": 2}]");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], "{\"name\": \"a}\\\"{\"}");
  auto b = s.feed("\n}\n{}");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0], "{\"x\": [1, {\"y\": 2}]\n}");
  EXPECT_EQ(b[1], "{}");
  EXPECT_FALSE(s.finish());
}

TEST(WheelctlJsonSplitterTest, ReportsTextThatIsNoObjectAndUnfinishedObjects) {
  JsonSplitter bad;
  EXPECT_TRUE(bad.feed("[1]").empty());
  ASSERT_TRUE(bad.finish());
  EXPECT_NE(bad.finish()->find("expected a JSON object"), std::string::npos);
  JsonSplitter open;
  (void)open.feed("{\"a\": 1");
  ASSERT_TRUE(open.finish());
}

TEST(WheelctlRequestFeedTest, ReadsObjectsFromAStreamAsLinesArrive) {
  std::istringstream in("{\"name\": \"a\"}\n{\"name\":\n \"b\"}\n");
  RequestFeed feed(in);
  std::optional<std::string> m;
  ASSERT_FALSE(feed.next(m));
  EXPECT_EQ(*m, "{\"name\": \"a\"}");
  ASSERT_FALSE(feed.next(m));
  EXPECT_EQ(*m, "{\"name\":\n \"b\"}");
  ASSERT_FALSE(feed.next(m));
  EXPECT_FALSE(m);
  RequestFeed broken(std::string("{\"a\": 1} nope"));
  ASSERT_FALSE(broken.next(m));
  const auto f = broken.next(m);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->exit_code, kExitUsage);
}

TEST(WheelctlHeaderTest, LowerCasesKeysAndTrimsBlanks) {
  transport::Attachments h;
  EXPECT_FALSE(parse_header("X-User:  ada ", h));
  EXPECT_FALSE(parse_header("authorization: Bearer a:b", h));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"x-user", "ada"}));
  EXPECT_EQ(h[1].second, "Bearer a:b");
  EXPECT_TRUE(parse_header("no colon", h));
  EXPECT_TRUE(parse_header(": v", h));
}

TEST(WheelctlBase64Test, RoundTripsEtcdKeys) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "/wheelrpc/echo/providers/127.0.0.1:7001",
                                                       std::string("\xff\0z", 3)}) {
    const auto e = base64_encode(s);
    EXPECT_EQ(e.size() % 4, 0u);
    EXPECT_EQ(base64_decode(e), s);
  }
  EXPECT_EQ(base64_encode("/wheelrpc/"), "L3doZWVscnBjLw==");
  EXPECT_FALSE(base64_decode("abc"));
  EXPECT_FALSE(base64_decode("a=bc"));
}

std::unique_ptr<ProtoFileSource> greeter_protos(Failure& f) {
  return ProtoFileSource::load(
      {kSource + "/examples/greeter/greeter.proto", kSource + "/examples/greeter/greeter_streams.proto"}, {}, f);
}

TEST(WheelctlProtoFileSourceTest, CompilesFilesWithTheirImportsAndListsTheirServices) {
  Failure f;
  auto source = greeter_protos(f);  // imports wheelrpc/options.proto, compiled into the tool
  ASSERT_TRUE(source) << f.message;
  std::vector<std::string> services;
  ASSERT_FALSE(source->list_services(services));
  EXPECT_EQ(services, (std::vector<std::string>{"greetings.Greetings", "helloworld.Greeter"}));
}

TEST(WheelctlProtoFileSourceTest, AFileThatDoesNotCompileIsAUsageErrorWithItsLine) {
  Failure f;
  EXPECT_FALSE(ProtoFileSource::load({kSource + "/tests/wheelctl/protos/broken.proto"}, {}, f));
  EXPECT_EQ(f.exit_code, kExitUsage);
  EXPECT_NE(f.message.find("broken.proto:5:"), std::string::npos) << f.message;
  EXPECT_FALSE(ProtoFileSource::load({kSource + "/no/such.proto"}, {}, f));
  EXPECT_EQ(f.exit_code, kExitUsage);
}

TEST(WheelctlDescribeTextTest, PrintsServicesMethodsAndMessagesAsGrpcurlDoes) {
  Failure f;
  auto source = greeter_protos(f);
  ASSERT_TRUE(source);
  Symbol s;
  ASSERT_FALSE(find_symbol(*source, "greetings.Greetings", s));
  ASSERT_TRUE(s.service);
  EXPECT_EQ(describe_text(*s.service),
            "greetings.Greetings is a service:\n"
            "service Greetings {\n"
            "  // Server streaming: one request, `times` greetings. A stream that carries\n"
            "  // nothing for 5 s ends (errc::message_timeout) unless the call says otherwise.\n"
            "  rpc GreetMany ( .greetings.GreetRequest ) returns ( stream .greetings.Greeting );\n"
            "  // Client streaming: many names, one greeting for them all.\n"
            "  rpc GreetAll ( stream .greetings.GreetRequest ) returns ( .greetings.Greeting );\n"
            "  // Bidi streaming: a greeting for each name as it comes.\n"
            "  rpc Chat ( stream .greetings.GreetRequest ) returns ( stream .greetings.Greeting );\n"
            "}\n")
      << describe_text(*s.service);
  ASSERT_FALSE(find_symbol(*source, ".helloworld.Greeter.SayHello", s));
  ASSERT_TRUE(s.method);
  EXPECT_EQ(describe_text(*s.method),
            "helloworld.Greeter.SayHello is a method:\n"
            "// Idempotent: its timeouts may be retried, and it may be hedged.\n"
            "rpc SayHello ( .helloworld.HelloRequest ) returns ( .helloworld.HelloReply );\n");
  ASSERT_FALSE(find_symbol(*source, "helloworld.HelloRequest", s));
  ASSERT_TRUE(s.message);
  EXPECT_EQ(describe_text(*s.message),
            "helloworld.HelloRequest is a message:\nmessage HelloRequest {\n  string name = 1;\n}\n");
  const auto missing = find_symbol(*source, "helloworld.Nope", s);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exit_code, kExitUnknownSymbol);
}

TEST(WheelctlFindMethodTest, NamesTheServicesMethodsWhenOneIsMissing) {
  Failure f;
  auto source = greeter_protos(f);
  ASSERT_TRUE(source);
  const google::protobuf::MethodDescriptor* m = nullptr;
  auto missing = find_method(*source, {"greetings.Greetings", "Nope"}, m);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exit_code, kExitUnknownSymbol);
  EXPECT_NE(missing->message.find("its methods: GreetMany, GreetAll, Chat"), std::string::npos) << missing->message;
  missing = find_method(*source, {"nope.Service", "X"}, m);
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->message.find("service 'nope.Service' not found in the --proto files"), std::string::npos);
}

TEST(WheelctlMessageCodecTest, JsonToBytesAndBackAndAMalformedRequestNamesTheField) {
  Failure f;
  auto source = greeter_protos(f);
  ASSERT_TRUE(source);
  const google::protobuf::MethodDescriptor* m = nullptr;
  ASSERT_FALSE(find_method(*source, {"greetings.Greetings", "GreetMany"}, m));
  MessageCodec codec(*m);
  std::string bytes;
  ASSERT_FALSE(codec.request_bytes(R"({"name": "ada", "times": 2})", 1, bytes));
  EXPECT_EQ(bytes, std::string("\x0a\x03"
                               "ada\x10\x02"));
  auto bad = codec.request_bytes(R"({"nmae": "ada"})", 3, bytes);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->exit_code, kExitUsage);
  EXPECT_NE(bad->message.find("request #3 is not a valid greetings.GreetRequest"), std::string::npos);
  EXPECT_NE(bad->message.find("nmae"), std::string::npos) << bad->message;
  bad = codec.request_bytes(R"({"times": "many"})", 1, bytes);
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->message.find("times"), std::string::npos) << bad->message;
  std::string json;
  ASSERT_FALSE(codec.reply_json(std::string("\x0a\x02hi", 4), 1, json));
  EXPECT_EQ(json, R"({"message":"hi"})");
  EXPECT_TRUE(codec.reply_json("\xff\xff", 1, json));
}

TEST(WheelctlStatusTextTest, AFailedCallPrintsItsStatusNameAndTheLibrarysMessage) {
  const auto f = call_failure(rpc::make_error_code(rpc::StatusCode::unimplemented), "no method 'X'", true);
  EXPECT_EQ(f.message, "UNIMPLEMENTED: no method 'X'");
  EXPECT_EQ(f.exit_code, kExitFailed);
  EXPECT_TRUE(f.status_line);
  EXPECT_EQ(call_failure(rpc::errc::unavailable, "connect refused", false).exit_code, kExitUnreachable);
  EXPECT_EQ(call_failure(rpc::errc::unavailable, "draining", true).exit_code, kExitFailed);
  EXPECT_EQ(call_failure(rpc::errc::timeout, "t", false).message, "DEADLINE_EXCEEDED: t");
}

}  // namespace
}  // namespace wheelrpc::wheelctl
