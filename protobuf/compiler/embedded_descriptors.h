#pragma once
/// The descriptors a generated `.wheelrpc.h` embeds: the serialized
/// google.protobuf.FileDescriptorProto of its .proto and of every file that
/// file imports, transitively, for server reflection (no .proto is needed at
/// run time, and no generated descriptor pool is read).

#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/printer.h>

namespace wheelrpc::protobuf::compiler {

/// `file`'s FileDescriptorProto as FileDescriptor::CopyTo gives it (no
/// source locations), less the json_name of each field whose JSON name is
/// the default one (protoc passes those to plugins; its C++ generator does
/// not embed them), serialized: the bytes protobuf's generated pool gives.
std::string file_descriptor_bytes(const google::protobuf::FileDescriptor* file);

/// `file` first, then every file it imports, transitively, each once: a
/// depth-first walk of the imports in their order in each file.
std::vector<const google::protobuf::FileDescriptor*> transitive_files(const google::protobuf::FileDescriptor* file);

/// The name of the array of `file`'s embedded descriptors, in the file's
/// namespace: `wheelrpc_file_descriptors_` and the file's name as protoc
/// names its descriptor table (`greeter.proto` gives
/// `wheelrpc_file_descriptors_greeter_2eproto`): one per file of a program.
std::string embedded_descriptors_identifier(const google::protobuf::FileDescriptor* file);

/// `bytes` as a C++ string literal (several adjacent ones, one a line, each
/// line at most `width` characters of content, indented by `indent`), every
/// byte that is not printable ASCII an escape of three octal digits, so
/// that no escape runs on into the next character.
std::string cpp_bytes_literal(const std::string& bytes, const std::string& indent, std::size_t width);

/// Prints the array: `inline constexpr std::string_view <identifier>[]`,
/// one std::string_view(literal, size) a file, `file` first
/// (transitive_files), each as file_descriptor_bytes gives it.
void print_embedded_descriptors(google::protobuf::io::Printer& printer, const google::protobuf::FileDescriptor* file);

}  // namespace wheelrpc::protobuf::compiler
