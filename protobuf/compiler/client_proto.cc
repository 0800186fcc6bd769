#include "client_proto.h"

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <wheelrpc/options.pb.h>

#include "json_names.h"

namespace wheelrpc::protobuf::compiler {
namespace {

namespace pb = google::protobuf;

/// wheelrpc/options.proto, as the plugin's own generated code has it (the
/// request's files are in another pool: they are compared by name).
const pb::FileDescriptor* options_file() { return wheelrpc::MethodPolicy::descriptor()->file(); }

bool from_options_file(const pb::Descriptor* type) {
  return type != nullptr && type->file()->name() == options_file()->name();
}
bool from_options_file(const pb::EnumDescriptor* type) {
  return type != nullptr && type->file()->name() == options_file()->name();
}

bool field_uses_options_types(const pb::FieldDescriptor* field) {
  return from_options_file(field->message_type()) || from_options_file(field->enum_type()) ||
         (field->is_extension() && from_options_file(field->containing_type()));
}

/// Whether `type` (or a type nested in it) names a type of options.proto.
bool message_uses_options_types(const pb::Descriptor* type) {
  for (int i = 0; i < type->field_count(); ++i) {
    if (field_uses_options_types(type->field(i))) return true;
  }
  for (int i = 0; i < type->extension_count(); ++i) {
    if (field_uses_options_types(type->extension(i))) return true;
  }
  for (int i = 0; i < type->nested_type_count(); ++i) {
    if (message_uses_options_types(type->nested_type(i))) return true;
  }
  return false;
}

/// Whether `file` needs options.proto for more than its options: then its
/// client copy cannot do without it.
bool uses_options_types(const pb::FileDescriptor* file) {
  for (int i = 0; i < file->message_type_count(); ++i) {
    if (message_uses_options_types(file->message_type(i))) return true;
  }
  for (int i = 0; i < file->extension_count(); ++i) {
    if (field_uses_options_types(file->extension(i))) return true;
  }
  for (int s = 0; s < file->service_count(); ++s) {
    for (int m = 0; m < file->service(s)->method_count(); ++m) {
      const pb::MethodDescriptor* method = file->service(s)->method(m);
      if (from_options_file(method->input_type()) || from_options_file(method->output_type())) return true;
    }
  }
  return false;
}

/// Clears, in `message` and every message under it, the extensions that
/// options.proto defines: those the plugin's generated pool parsed (the
/// usual case: options.pb.cc is linked in) and, should one have stayed an
/// unknown field, its number on the options message it extends.
void strip_wheelrpc_options(pb::Message& message) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->is_extension() && field->file()->name() == options_file()->name()) {
      reflection->ClearField(&message, field);
    } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          strip_wheelrpc_options(*reflection->MutableRepeatedMessage(&message, field, i));
        }
      } else {
        strip_wheelrpc_options(*reflection->MutableMessage(&message, field));
      }
    }
  }
  const pb::FileDescriptor* options = options_file();
  for (int e = 0; e < options->extension_count(); ++e) {
    if (options->extension(e)->containing_type()->full_name() == message.GetDescriptor()->full_name()) {
      reflection->MutableUnknownFields(&message)->DeleteByNumber(options->extension(e)->number());
    }
  }
}

/// Drops the import of options.proto, keeping the indices of `import
/// public` and `import weak` (positions in the import list) right.
void drop_options_import(pb::FileDescriptorProto& proto) {
  auto& imports = *proto.mutable_dependency();
  const auto found = std::find(imports.begin(), imports.end(), options_file()->name());
  if (found == imports.end()) return;
  const int dropped = static_cast<int>(found - imports.begin());
  imports.erase(found);
  for (auto* indices : {proto.mutable_public_dependency(), proto.mutable_weak_dependency()}) {
    indices->erase(std::remove(indices->begin(), indices->end(), dropped), indices->end());
    for (int& index : *indices) {
      if (index > dropped) --index;
    }
  }
}

/// The printer writes each comment line as "// " + line, and the source's
/// lines after the first keep the space that followed their "//": drop it
/// so that the copy's comments read as the source's.
void unindent_comments(pb::SourceCodeInfo& info) {
  const auto unindent = [](std::string& comment) {
    for (std::size_t at = comment.find("\n "); at != std::string::npos; at = comment.find("\n ", at + 1)) {
      comment.erase(at + 1, 1);
    }
  };
  for (pb::SourceCodeInfo::Location& location : *info.mutable_location()) {
    unindent(*location.mutable_leading_comments());
    unindent(*location.mutable_trailing_comments());
    for (std::string& detached : *location.mutable_leading_detached_comments()) unindent(detached);
  }
}

/// Copies `file` into `pool`, its imports first (each once).
void add_with_imports(const pb::FileDescriptor* file, pb::DescriptorPool& pool, std::set<std::string>& added) {
  if (!added.insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) add_with_imports(file->dependency(i), pool, added);
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  pool.BuildFile(proto);
}

/// The first error of a BuildFile.
class FirstError final : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name, const pb::Message* /*descriptor*/,
                ErrorLocation /*location*/, const std::string& message) override {
    if (error.empty()) error = filename + ": " + element_name + ": " + message;
  }
  std::string error;
};

}  // namespace

bool write_client_proto(const pb::FileDescriptor* file, pb::compiler::GeneratorContext* context, std::string* error) {
  if (uses_options_types(file)) {
    *error = "client_proto: " + file->name() + " uses a type of " + options_file()->name() +
             " beyond its options; a client copy would still need that file";
    return false;
  }
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  file->CopySourceCodeInfoTo(&proto);  // its comments, for the printer
  strip_wheelrpc_options(proto);
  drop_options_import(proto);
  drop_default_json_names(proto);
  unindent_comments(*proto.mutable_source_code_info());

  // The printer works on a descriptor: build the copy in a pool of its own,
  // beside copies of what it imports.
  pb::DescriptorPool pool;
  std::set<std::string> added = {file->name()};
  for (int i = 0; i < file->dependency_count(); ++i) add_with_imports(file->dependency(i), pool, added);
  FirstError errors;
  const pb::FileDescriptor* copy = pool.BuildFileCollectingErrors(proto, &errors);
  if (copy == nullptr) {
    *error = "client_proto: the copy of " + file->name() + " does not build: " + errors.error;
    return false;
  }
  pb::DebugStringOptions options;
  options.include_comments = true;
  const std::string text = "// Generated by protoc-gen-wheelrpc (client_proto) from " + file->name() +
                           ". Do not edit.\n"
                           "// The source less wheelrpc's options and their import: the same package, messages,\n"
                           "// field numbers and services, for clients in any language (no wheelrpc file needed).\n"
                           "\n" +
                           copy->DebugStringWithOptions(options);

  std::unique_ptr<pb::io::ZeroCopyOutputStream> output(context->Open(file->name()));
  pb::io::Printer printer(output.get(), '$');
  printer.PrintRaw(text);
  if (printer.failed()) {
    *error = "client_proto: cannot write " + file->name();
    return false;
  }
  return true;
}

}  // namespace wheelrpc::protobuf::compiler
