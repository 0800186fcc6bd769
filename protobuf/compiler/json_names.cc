#include "json_names.h"

#include <string>

namespace wheelrpc::protobuf::compiler {
namespace {

namespace pb = google::protobuf;

/// protoc's JSON name for a field named `name`: `foo_bar` gives `fooBar`.
std::string default_json_name(const std::string& name) {
  std::string json;
  bool upper = false;
  for (const char c : name) {
    if (c == '_') {
      upper = true;
    } else {
      json += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
      upper = false;
    }
  }
  return json;
}

void drop_default(pb::FieldDescriptorProto& field) {
  if (field.has_json_name() && field.json_name() == default_json_name(field.name())) field.clear_json_name();
}

void drop_defaults(pb::DescriptorProto& type) {
  for (auto& field : *type.mutable_field()) drop_default(field);
  for (auto& field : *type.mutable_extension()) drop_default(field);
  for (auto& nested : *type.mutable_nested_type()) drop_defaults(nested);
}

}  // namespace

void drop_default_json_names(pb::FileDescriptorProto& file) {
  for (auto& type : *file.mutable_message_type()) drop_defaults(type);
  for (auto& field : *file.mutable_extension()) drop_default(field);
}

}  // namespace wheelrpc::protobuf::compiler
