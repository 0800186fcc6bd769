#include "wheelrpc_generator.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/compiler/cpp/names.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <wheelrpc/options.pb.h>

#include "client_proto.h"
#include "embedded_descriptors.h"
#include "policy_check.h"

namespace wheelrpc::protobuf::compiler {
namespace {

namespace pb = google::protobuf;

using Vars = std::map<std::string, std::string>;

/// Where the generated code is wrapped (the `.clang-format`'s column limit).
constexpr std::size_t kColumnLimit = 120;

/// C++20's keywords and alternative tokens, and NULL (a macro everywhere).
bool is_cpp_keyword(const std::string& name) {
  static const std::set<std::string> keywords = {
      "alignas",     "alignof",   "and",        "and_eq",    "asm",      "auto",         "bitand",
      "bitor",       "bool",      "break",      "case",      "catch",    "char",         "char8_t",
      "char16_t",    "char32_t",  "class",      "compl",     "concept",  "const",        "consteval",
      "constexpr",   "constinit", "const_cast", "continue",  "co_await", "co_return",    "co_yield",
      "decltype",    "default",   "delete",     "do",        "double",   "dynamic_cast", "else",
      "enum",        "explicit",  "export",     "extern",    "false",    "float",        "for",
      "friend",      "goto",      "if",         "inline",    "int",      "long",         "mutable",
      "namespace",   "new",       "noexcept",   "not",       "not_eq",   "nullptr",      "operator",
      "or",          "or_eq",     "private",    "protected", "public",   "register",     "reinterpret_cast",
      "requires",    "return",    "short",      "signed",    "sizeof",   "static",       "static_assert",
      "static_cast", "struct",    "switch",     "template",  "this",     "thread_local", "throw",
      "true",        "try",       "typedef",    "typeid",    "typename", "union",        "unsigned",
      "using",       "virtual",   "void",       "volatile",  "wchar_t",  "while",        "xor",
      "xor_eq",      "NULL"};
  return keywords.contains(name);
}

/// `name` as a C++ identifier: a trailing `_` while it is a keyword, a
/// reserved name or one already taken.
std::string cpp_identifier(const std::string& name, const std::set<std::string>& taken) {
  std::string id = name;
  if (is_cpp_keyword(id)) id += '_';
  while (taken.contains(id)) id += '_';
  return id;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string::size_type begin = 0;
  while (begin <= text.size()) {
    const auto end = std::min(text.find(separator, begin), text.size());
    parts.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

/// The package `a.b.c` as the namespace `a::b::c` (empty without a package).
std::string package_namespace(const pb::FileDescriptor* file) {
  if (file->package().empty()) return {};
  std::string ns;
  for (const std::string& part : split(file->package(), '.')) {
    if (!ns.empty()) ns += "::";
    ns += cpp_identifier(part, {});
  }
  return ns;
}

/// `dir/name.proto` -> `dir/name` (protoc's rule for its outputs' names).
std::string strip_proto(const std::string& filename) {
  for (std::string_view suffix : {".protodevel", ".proto"}) {
    if (filename.ends_with(suffix)) return filename.substr(0, filename.size() - suffix.size());
  }
  return filename;
}

/// The MethodPolicy's designated initializers, in declaration order, for the
/// fields the option sets.
std::vector<std::string> policy_fields(const wheelrpc::MethodPolicy& policy) {
  std::vector<std::string> fields;
  const auto ms = [](std::uint32_t n) { return "std::chrono::milliseconds(" + std::to_string(n) + ")"; };
  const auto boolean = [](bool b) { return std::string(b ? "true" : "false"); };
  if (policy.has_timeout_ms()) fields.push_back(".timeout = " + ms(policy.timeout_ms()));
  if (policy.has_idempotent()) fields.push_back(".idempotent = " + boolean(policy.idempotent()));
  if (policy.has_retries()) fields.push_back(".retries = " + std::to_string(policy.retries()));
  if (policy.has_attempt_timeout_ms()) fields.push_back(".attempt_timeout = " + ms(policy.attempt_timeout_ms()));
  if (policy.has_hedge_delay_ms()) fields.push_back(".hedge_delay = " + ms(policy.hedge_delay_ms()));
  if (policy.has_wait_for_ready()) fields.push_back(".wait_for_ready = " + boolean(policy.wait_for_ready()));
  if (policy.has_stream_timeout_ms()) fields.push_back(".stream_timeout = " + ms(policy.stream_timeout_ms()));
  if (policy.has_message_timeout_ms()) fields.push_back(".message_timeout = " + ms(policy.message_timeout_ms()));
  if (policy.has_stall_timeout_ms()) fields.push_back(".stall_timeout = " + ms(policy.stall_timeout_ms()));
  if (policy.has_first_message_timeout_ms()) {
    fields.push_back(".first_message_timeout = " + ms(policy.first_message_timeout_ms()));
  }
  if (policy.has_compression()) {
    fields.push_back(".compression = ::wheelrpc::transport::Compression::" + policy.compression());
  }
  if (policy.has_compression_level()) {
    fields.push_back(".compression_level = " + std::to_string(policy.compression_level()));
  }
  return fields;
}

/// The `policy` member's declaration (indented for Methods::<method>), the
/// initializers packed into lines within the column limit.
std::string policy_declaration(const wheelrpc::MethodPolicy& policy) {
  const std::string head = "      static constexpr ::wheelrpc::rpc::MethodPolicy policy{";
  const std::vector<std::string> fields = policy_fields(policy);
  if (fields.empty()) return head + "};\n";
  const std::string indent(10, ' ');
  std::string text = head + "\n";
  std::string line = indent;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string end = i + 1 == fields.size() ? "};" : ",";
    if (line != indent && line.size() + 1 + fields[i].size() + end.size() > kColumnLimit) {
      text += line + "\n";
      line = indent;
    }
    if (line != indent) line += ' ';
    line += fields[i] + end;
  }
  return text + line + "\n";
}

/// The method's kind, as the MethodKind enumerator the traits name.
std::string method_kind(const pb::MethodDescriptor* method) {
  if (method->client_streaming() && method->server_streaming()) return "bidi_streaming";
  if (method->client_streaming()) return "client_streaming";
  return method->server_streaming() ? "server_streaming" : "unary";
}

/// The C++ names of a file's services: a class per service, beside the
/// others and, without a package, beside the global namespaces the generated
/// code names.
std::vector<std::string> service_names(const pb::FileDescriptor* file) {
  // The nested classes' and members' names: a class may not share them.
  std::set<std::string> taken = {"Methods",
                                 "Stub",
                                 "Service",
                                 "CallbackService",
                                 "service_full_name",
                                 "file_descriptors",
                                 embedded_descriptors_identifier(file)};
  if (file->package().empty()) taken.insert({"wheelrpc", "boost", "std", "google"});
  std::vector<std::string> names;
  for (int s = 0; s < file->service_count(); ++s) {
    names.push_back(cpp_identifier(file->service(s)->name(), taken));
    taken.insert(names.back());
  }
  return names;
}

/// The C++ names of a service's methods (the struct in Methods and the
/// virtual functions of the service bases), one per method.
std::vector<std::string> method_names(const pb::ServiceDescriptor* service) {
  // The enclosing generated classes; the members of a method's struct; the
  // parameters the registering lambdas pass (a method named like one would
  // be hidden by it in the lambda); the base class's registration functions. The service's own name is free: a member
  // of a nested class may share the enclosing class's name (`service Echo { rpc Echo }` gives `Echo::Service::Echo`, as
  // gRPC's generator does).
  std::set<std::string> taken = {"Methods",
                                 "Stub",
                                 "Service",
                                 "CallbackService",
                                 "service_full_name",
                                 "Request",
                                 "Reply",
                                 "path",
                                 "kind",
                                 "policy",
                                 "context",
                                 "request",
                                 "responder",
                                 "stream",
                                 "add_coroutine_method",
                                 "add_callback_method",
                                 "add_stream_coroutine_method",
                                 "add_stream_callback_method"};
  std::vector<std::string> names;
  for (int m = 0; m < service->method_count(); ++m) {
    names.push_back(cpp_identifier(service->method(m)->name(), taken));
    taken.insert(names.back());
  }
  return names;
}

/// A method's stub functions: with and without CallOptions. A unary
/// method's call, a server streaming method's open (with the request), a
/// client or bidi streaming method's open (without).
void print_stub_method(pb::io::Printer& printer, const Vars& v) {
  const std::string& kind = v.at("kind");
  Vars stub = v;
  stub["align"] = std::string(v.at("stub").size() + 10, ' ');
  if (kind == "unary" || kind == "server_streaming") {
    stub["runtime"] = kind == "unary" ? "async_typed_call" : "async_open_typed_stream";
    printer.Print(stub,
                  "    template <class CompletionToken>\n"
                  "    auto $stub$(const $request$& request, ::wheelrpc::rpc::CallOptions options,\n"
                  "$align$CompletionToken&& token) {\n"
                  "      return ::wheelrpc::rpc::$runtime$<$qualified$::Methods::$method$>(\n"
                  "          client_, request, std::move(options), std::forward<CompletionToken>(token));\n"
                  "    }\n"
                  "    template <class CompletionToken>\n"
                  "    auto $stub$(const $request$& request, CompletionToken&& token) {\n"
                  "      return ::wheelrpc::rpc::$runtime$<$qualified$::Methods::$method$>(\n"
                  "          client_, request, ::wheelrpc::rpc::CallOptions{}, std::forward<CompletionToken>(token));\n"
                  "    }\n"
                  "\n");
    return;
  }
  printer.Print(stub,
                "    template <class CompletionToken>\n"
                "    auto $stub$(::wheelrpc::rpc::CallOptions options, CompletionToken&& token) {\n"
                "      return ::wheelrpc::rpc::async_open_typed_stream<$qualified$::Methods::$method$>(\n"
                "          client_, std::move(options), std::forward<CompletionToken>(token));\n"
                "    }\n"
                "    template <class CompletionToken>\n"
                "    auto $stub$(CompletionToken&& token) {\n"
                "      return ::wheelrpc::rpc::async_open_typed_stream<$qualified$::Methods::$method$>(\n"
                "          client_, ::wheelrpc::rpc::CallOptions{}, std::forward<CompletionToken>(token));\n"
                "    }\n"
                "\n");
}

/// The coroutine base's registration of a method (in its constructor).
void print_coroutine_registration(pb::io::Printer& printer, const Vars& v) {
  const std::string& kind = v.at("kind");
  if (kind == "unary") {
    printer.Print(v,
                  "      add_coroutine_method<$qualified$::Methods::$method$>(\n"
                  "          [this](::wheelrpc::rpc::ServerContext& context, const $request$& request) {\n"
                  "            return $method$(context, request);\n"
                  "          });\n");
  } else if (kind == "server_streaming") {
    printer.Print(v,
                  "      add_stream_coroutine_method<$qualified$::Methods::$method$>(\n"
                  "          [this](const $request$& request,\n"
                  "                 $server_stream$& stream) {\n"
                  "            return $method$(request, stream);\n"
                  "          });\n");
  } else {
    printer.Print(v,
                  "      add_stream_coroutine_method<$qualified$::Methods::$method$>(\n"
                  "          [this]($server_stream$& stream) {\n"
                  "            return $method$(stream);\n"
                  "          });\n");
  }
}

/// The coroutine base's virtual function of a method, answering
/// UNIMPLEMENTED.
void print_coroutine_method(pb::io::Printer& printer, const Vars& v) {
  const std::string& kind = v.at("kind");
  if (kind == "unary") {
    printer.Print(v,
                  "    virtual ::boost::asio::awaitable<$reply$> $method$(\n"
                  "        ::wheelrpc::rpc::ServerContext& context, const $request$& request) {\n"
                  "      return ::wheelrpc::rpc::unimplemented<$qualified$::Methods::$method$>(context, request);\n"
                  "    }\n");
    return;
  }
  Vars m = v;
  m["result"] = kind == "client_streaming" ? v.at("reply") : "void";
  m["params"] = kind == "server_streaming" ? "const " + v.at("request") + "& /*request*/,\n        " : "";
  printer.Print(m,
                "    virtual ::boost::asio::awaitable<$result$> $method$(\n"
                "        $params$$server_stream$& stream) {\n"
                "      return ::wheelrpc::rpc::unimplemented_stream<$qualified$::Methods::$method$>(stream);\n"
                "    }\n");
}

/// The callback base's registration of a method (in its constructor).
void print_callback_registration(pb::io::Printer& printer, const Vars& v) {
  if (v.at("kind") == "unary") {
    printer.Print(v,
                  "      add_callback_method<$qualified$::Methods::$method$>(\n"
                  "          [this](::wheelrpc::rpc::ServerContext& context, const $request$& request,\n"
                  "                 ::wheelrpc::rpc::TypedResponder<$reply$> responder) {\n"
                  "            $method$(context, request, std::move(responder));\n"
                  "          });\n");
    return;
  }
  printer.Print(v,
                "      add_stream_callback_method<$qualified$::Methods::$method$>(\n"
                "          [this]($server_stream$ stream) {\n"
                "            $method$(std::move(stream));\n"
                "          });\n");
}

/// The callback base's virtual function of a method, answering
/// UNIMPLEMENTED.
void print_callback_method(pb::io::Printer& printer, const Vars& v) {
  if (v.at("kind") == "unary") {
    Vars callback = v;
    callback["align"] = std::string(v.at("method").size() + 18, ' ');
    printer.Print(callback,
                  "    virtual void $method$(::wheelrpc::rpc::ServerContext& context, const $request$& request,\n"
                  "$align$::wheelrpc::rpc::TypedResponder<$reply$> responder) {\n"
                  "      ::wheelrpc::rpc::unimplemented(context, std::move(responder));\n"
                  "    }\n");
    return;
  }
  printer.Print(v,
                "    virtual void $method$($server_stream$ stream) {\n"
                "      ::wheelrpc::rpc::unimplemented_stream(std::move(stream));\n"
                "    }\n");
}

void print_service(pb::io::Printer& printer, const pb::ServiceDescriptor* service, const std::string& name,
                   const std::string& ns) {
  const std::vector<std::string> methods = method_names(service);
  Vars vars = {{"service", name},
               {"full_name", service->full_name()},
               {"qualified", (ns.empty() ? "::" : "::" + ns + "::") + name},
               {"proto", service->file()->name()},
               {"descriptors", embedded_descriptors_identifier(service->file())}};
  std::vector<Vars> method_vars;
  for (int m = 0; m < service->method_count(); ++m) {
    const pb::MethodDescriptor* method = service->method(m);
    Vars v = vars;
    v["method"] = methods[m];
    v["stub"] = "async_" + method->name();
    v["request"] = pb::compiler::cpp::QualifiedClassName(method->input_type());
    v["reply"] = pb::compiler::cpp::QualifiedClassName(method->output_type());
    v["server_stream"] = "::wheelrpc::rpc::TypedServerStream<" + v["request"] + ", " + v["reply"] + ">";
    v["path"] = "/" + service->full_name() + "/" + method->name();
    v["kind"] = method_kind(method);
    v["policy"] = policy_declaration(read_policy(method));
    method_vars.push_back(std::move(v));
  }

  printer.Print(vars,
                "/// Service $full_name$.\n"
                "class $service$ final {\n"
                " public:\n"
                "  static constexpr std::string_view service_full_name = \"$full_name$\";\n"
                "  /// The serialized FileDescriptorProtos of $proto$ (first) and of every file it imports,\n"
                "  /// transitively: what the service bases hand to ::wheelrpc::rpc::Service, for server reflection.\n"
                "  static constexpr std::span<const std::string_view> file_descriptors{$descriptors$};\n"
                "\n"
                "  /// One struct per method: its types, wire path, kind and IDL policy.\n"
                "  struct Methods {\n");
  for (const Vars& v : method_vars) {
    printer.Print(v,
                  "    struct $method$ {\n"
                  "      using Request = $request$;\n"
                  "      using Reply = $reply$;\n"
                  "      static constexpr std::string_view path = \"$path$\";\n"
                  "      static constexpr ::wheelrpc::rpc::MethodKind kind = ::wheelrpc::rpc::MethodKind::$kind$;\n");
    printer.PrintRaw(v.at("policy"));
    printer.Print("    };\n");
  }
  printer.Print(
      "  };\n"
      "\n"
      "  /// Client stub: cheap to construct; the Client must outlive it.\n"
      "  class Stub {\n"
      "   public:\n"
      "    explicit Stub(::wheelrpc::rpc::Client& client) noexcept : client_(client) {}\n"
      "\n");
  for (const Vars& v : method_vars) print_stub_method(printer, v);
  printer.Print(
      vars,
      "   private:\n"
      "    ::wheelrpc::rpc::Client& client_;\n"
      "  };\n"
      "\n"
      "  /// Coroutine service base: override the methods you serve; the others answer unimplemented.\n"
      "  class Service : public ::wheelrpc::rpc::Service {\n"
      "   public:\n"
      "    Service()\n"
      "        : ::wheelrpc::rpc::Service($qualified$::service_full_name, $qualified$::file_descriptors) {\n");
  for (const Vars& v : method_vars) print_coroutine_registration(printer, v);
  printer.Print("    }\n");
  for (const Vars& v : method_vars) print_coroutine_method(printer, v);
  printer.Print(
      vars,
      "  };\n"
      "\n"
      "  /// Callback service base: answer through the responder, or finish the stream, now or later,\n"
      "  /// from any thread.\n"
      "  class CallbackService : public ::wheelrpc::rpc::Service {\n"
      "   public:\n"
      "    CallbackService()\n"
      "        : ::wheelrpc::rpc::Service($qualified$::service_full_name, $qualified$::file_descriptors) {\n");
  for (const Vars& v : method_vars) print_callback_registration(printer, v);
  printer.Print("    }\n");
  for (const Vars& v : method_vars) print_callback_method(printer, v);
  printer.Print(
      "  };\n"
      "};\n");
}

}  // namespace

bool WheelrpcGenerator::Generate(const pb::FileDescriptor* file, const std::string& parameter,
                                 pb::compiler::GeneratorContext* context, std::string* error) const {
  bool client_proto = false;
  if (parameter == "client_proto") {
    client_proto = true;
  } else if (!parameter.empty()) {
    *error = "protoc-gen-wheelrpc takes no parameter but client_proto (got \"" + parameter + "\")";
    return false;
  }
  if (!check_policies(file, error)) return false;
  if (client_proto) return write_client_proto(file, context, error);
  if (file->service_count() == 0) return true;

  const std::string base = strip_proto(file->name());
  const std::string ns = package_namespace(file);
  const std::vector<std::string> services = service_names(file);
  std::unique_ptr<pb::io::ZeroCopyOutputStream> output(context->Open(base + ".wheelrpc.h"));
  pb::io::Printer printer(output.get(), '$');
  const Vars vars = {{"proto", file->name()}, {"pb_h", base + ".pb.h"}, {"ns", ns}};
  printer.Print(vars,
                "// Generated by protoc-gen-wheelrpc from $proto$. Do not edit.\n"
                "#pragma once\n"
                "\n"
                "#include <wheelrpc/protobuf/typed.h>\n"
                "\n"
                "#include \"$pb_h$\"\n"
                "\n");
  if (!ns.empty()) printer.Print(vars, "namespace $ns$ {\n\n");
  print_embedded_descriptors(printer, file);
  for (int s = 0; s < file->service_count(); ++s) {
    if (s > 0) printer.Print("\n");
    print_service(printer, file->service(s), services[s], ns);
  }
  if (!ns.empty()) printer.Print(vars, "\n}  // namespace $ns$\n");
  return !printer.failed();
}

}  // namespace wheelrpc::protobuf::compiler
