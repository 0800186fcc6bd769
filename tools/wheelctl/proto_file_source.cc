#include "proto_file_source.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "wheelrpc/options.pb.h"

namespace wheelrpc::wheelctl {

namespace gpb = google::protobuf;

/// Parse errors, as protoc prints them ("file:line:col: message").
class ProtoFileSource::Errors final : public gpb::compiler::MultiFileErrorCollector {
 public:
  void AddError(const std::string& filename, int line, int column, const std::string& message) override {
    if (!text.empty()) text += "\n";
    text += filename;
    if (line >= 0) text += ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
    text += ": " + message;
  }
  std::string text;
};

ProtoFileSource::ProtoFileSource() : compiled_in_(*gpb::DescriptorPool::generated_pool()) {
  // Typed services' .proto files import wheelrpc/options.proto: naming its
  // descriptor links its generated code in (from a static library, it would
  // otherwise be left out) and so puts it in the generated pool.
  (void)::wheelrpc::MethodPolicy::descriptor();
}

// The pool goes first: it refers to the database, which refers to the tree.
ProtoFileSource::~ProtoFileSource() {
  pool_.reset();
  database_.reset();
}

std::unique_ptr<ProtoFileSource> ProtoFileSource::load(const std::vector<std::string>& protos,
                                                       const std::vector<std::string>& import_paths, Failure& failure) {
  std::unique_ptr<ProtoFileSource> s(new ProtoFileSource());
  std::vector<std::string> roots = import_paths;
  if (roots.empty()) {
    for (const auto& p : protos) {
      const auto dir = std::filesystem::path(p).parent_path().string();
      roots.push_back(dir.empty() ? "." : dir);
    }
    roots.push_back(".");
  }
  for (const auto& r : roots) s->tree_.MapPath("", r);
  s->errors_ = std::make_unique<Errors>();
  s->database_ = std::make_unique<gpb::compiler::SourceTreeDescriptorDatabase>(&s->tree_, &s->compiled_in_);
  s->database_->RecordErrorsTo(s->errors_.get());
  s->pool_ = std::make_unique<gpb::DescriptorPool>(s->database_.get(), s->database_->GetValidationErrorCollector());
  for (const auto& p : protos) {
    std::string virtual_name, shadowing, disk;
    // A file on disk under an import path, or, as protoc and grpcurl take
    // it, a name under one ("grpc/testing/test.proto").
    auto mapped = s->tree_.DiskFileToVirtualFile(p, &virtual_name, &shadowing);
    if (mapped != gpb::compiler::DiskSourceTree::SUCCESS && s->tree_.VirtualFileToDiskFile(p, &disk)) {
      virtual_name = p;
      mapped = gpb::compiler::DiskSourceTree::SUCCESS;
    }
    if (mapped == gpb::compiler::DiskSourceTree::CANNOT_OPEN) {
      failure = {kExitUsage, "--proto " + p + ": cannot read it"};
      return nullptr;
    }
    if (mapped == gpb::compiler::DiskSourceTree::NO_MAPPING) {
      failure = {kExitUsage, "--proto " + p + ": not under any --import-path"};
      return nullptr;
    }
    if (mapped == gpb::compiler::DiskSourceTree::SHADOWED) {
      failure = {kExitUsage, "--proto " + p + ": shadowed by " + shadowing +
                                 ", which has the same name under an earlier --import-path"};
      return nullptr;
    }
    const auto* file = s->pool_->FindFileByName(virtual_name);
    if (!file) {
      failure = {kExitUsage, "--proto " + p + " does not compile:\n" +
                                 (s->errors_->text.empty() ? std::string("(no detail)") : s->errors_->text)};
      return nullptr;
    }
    s->files_.push_back(file);
  }
  return s;
}

std::optional<Failure> ProtoFileSource::list_services(std::vector<std::string>& out) {
  std::set<std::string> names;
  for (const auto* f : files_) {
    for (int i = 0; i < f->service_count(); ++i) names.insert(f->service(i)->full_name());
  }
  out.assign(names.begin(), names.end());
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
