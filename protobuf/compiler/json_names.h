#pragma once
/// protoc hands a plugin every field's `json_name`, also the default one that
/// no .proto wrote (lowerCamelCase of the name); protoc's own C++ output and
/// a printed .proto carry only those written. What both the embedded
/// descriptors and the client .proto copies need.

#include <google/protobuf/descriptor.pb.h>

namespace wheelrpc::protobuf::compiler {

/// Clears every `json_name` of `file` (fields and extensions of its messages,
/// nested ones too, and its own extensions) that equals the default.
void drop_default_json_names(google::protobuf::FileDescriptorProto& file);

}  // namespace wheelrpc::protobuf::compiler
