#include "embedded_descriptors.h"

#include <cstdio>
#include <set>

#include <google/protobuf/descriptor.pb.h>

#include "json_names.h"

namespace wheelrpc::protobuf::compiler {
namespace {

namespace pb = google::protobuf;

/// Characters of content on a line of the literal (between its quotes).
constexpr std::size_t kLiteralWidth = 96;

void add_with_imports(const pb::FileDescriptor* file, std::set<std::string>& seen,
                      std::vector<const pb::FileDescriptor*>& files) {
  if (!seen.insert(file->name()).second) return;
  files.push_back(file);
  for (int i = 0; i < file->dependency_count(); ++i) add_with_imports(file->dependency(i), seen, files);
}

std::string escaped(unsigned char c) {
  switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '?':  // never half of a trigraph
      return "\\?";
    default: break;
  }
  if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
  char octal[5];
  std::snprintf(octal, sizeof octal, "\\%03o", static_cast<unsigned>(c));
  return octal;
}

}  // namespace

std::string file_descriptor_bytes(const pb::FileDescriptor* file) {
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  // Only the json_names the source wrote: the bytes are then those of protobuf's
  // generated pool (what gRPC's reflection serves).
  drop_default_json_names(proto);
  std::string bytes;
  proto.SerializeToString(&bytes);
  return bytes;
}

std::vector<const pb::FileDescriptor*> transitive_files(const pb::FileDescriptor* file) {
  std::set<std::string> seen;
  std::vector<const pb::FileDescriptor*> files;
  add_with_imports(file, seen, files);
  return files;
}

std::string embedded_descriptors_identifier(const pb::FileDescriptor* file) {
  std::string id = "wheelrpc_file_descriptors_";
  for (const char c : file->name()) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z')) {
      id += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "_%x", static_cast<unsigned>(u));
      id += hex;
    }
  }
  return id;
}

std::string cpp_bytes_literal(const std::string& bytes, const std::string& indent, std::size_t width) {
  if (bytes.empty()) return indent + "\"\"";
  std::string text;
  std::string line;
  for (const char c : bytes) {
    const std::string e = escaped(static_cast<unsigned char>(c));
    if (!line.empty() && line.size() + e.size() > width) {
      text += indent + "\"" + line + "\"\n";
      line.clear();
    }
    line += e;
  }
  return text + indent + "\"" + line + "\"";
}

void print_embedded_descriptors(pb::io::Printer& printer, const pb::FileDescriptor* file) {
  printer.Print({{"proto", file->name()}, {"id", embedded_descriptors_identifier(file)}},
                "/// $proto$ and every file it imports, transitively ($proto$ first): their\n"
                "/// google.protobuf.FileDescriptorProto, serialized, as server reflection serves them.\n"
                "inline constexpr std::string_view $id$[] = {\n");
  for (const pb::FileDescriptor* f : transitive_files(file)) {
    const std::string bytes = file_descriptor_bytes(f);
    printer.Print({{"name", f->name()}}, "    // $name$\n");
    printer.PrintRaw("    std::string_view(\n");
    printer.PrintRaw(cpp_bytes_literal(bytes, "        ", kLiteralWidth));
    printer.Print({{"size", std::to_string(bytes.size())}}, ",\n        $size$),\n");
  }
  printer.Print("};\n\n");
}

}  // namespace wheelrpc::protobuf::compiler
