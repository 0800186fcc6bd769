#pragma once
/// describe's text: services, methods, messages and enums as .proto-like
/// text, headed "NAME is a service:" as grpcurl prints them.

#include <string>

#include <google/protobuf/descriptor.h>

namespace wheelrpc::wheelctl {

/// "service Greeter {\n  rpc SayHello ( .helloworld.HelloRequest ) returns ( .helloworld.HelloReply );\n}\n",
/// each element after its leading comments when the descriptors carry them.
std::string service_text(const google::protobuf::ServiceDescriptor& service);
/// "rpc Chat ( stream .greetings.GreetRequest ) returns ( stream .greetings.Greeting );\n".
std::string method_text(const google::protobuf::MethodDescriptor& method, const std::string& indent = "");
/// The heading and the text: "helloworld.Greeter is a service:\n..." (also
/// "is a method:", "is a message:", "is an enum:").
std::string describe_text(const google::protobuf::ServiceDescriptor& service);
std::string describe_text(const google::protobuf::MethodDescriptor& method);
std::string describe_text(const google::protobuf::Descriptor& message);
std::string describe_text(const google::protobuf::EnumDescriptor& enumeration);

}  // namespace wheelrpc::wheelctl
