#include "proto_printer.h"

#include <sstream>

namespace wheelrpc::wheelctl {

namespace gpb = google::protobuf;

namespace {

/// The element's leading comments as "// " lines at `indent`.
template <class D>
std::string comments(const D& d, const std::string& indent) {
  gpb::SourceLocation where;
  if (!d.GetSourceLocation(&where) || where.leading_comments.empty()) return {};
  std::string out;
  std::istringstream lines(where.leading_comments);
  std::string line;
  while (std::getline(lines, line)) out += indent + "//" + line + "\n";
  return out;
}

}  // namespace

std::string method_text(const gpb::MethodDescriptor& method, const std::string& indent) {
  return comments(method, indent) + indent + "rpc " + method.name() + " ( " +
         (method.client_streaming() ? "stream " : "") + "." + method.input_type()->full_name() + " ) returns ( " +
         (method.server_streaming() ? "stream " : "") + "." + method.output_type()->full_name() + " );\n";
}

std::string service_text(const gpb::ServiceDescriptor& service) {
  std::string out = comments(service, "") + "service " + service.name() + " {\n";
  for (int i = 0; i < service.method_count(); ++i) out += method_text(*service.method(i), "  ");
  return out + "}\n";
}

std::string describe_text(const gpb::ServiceDescriptor& service) {
  return service.full_name() + " is a service:\n" + service_text(service);
}

std::string describe_text(const gpb::MethodDescriptor& method) {
  return method.full_name() + " is a method:\n" + method_text(method);
}

std::string describe_text(const gpb::Descriptor& message) {
  return message.full_name() + " is a message:\n" + comments(message, "") + message.DebugString();
}

std::string describe_text(const gpb::EnumDescriptor& enumeration) {
  return enumeration.full_name() + " is an enum:\n" + comments(enumeration, "") + enumeration.DebugString();
}

}  // namespace wheelrpc::wheelctl
