#include "descriptor_index.h"

#include <set>
#include <utility>

#include <google/protobuf/descriptor.pb.h>
#include <spdlog/spdlog.h>

#include <wheelrpc/common/logging.h>

namespace wheelrpc::services::detail {
namespace {

namespace pb = google::protobuf;

constexpr const char* kLogger = "wheelrpc.services";

/// The pool's complaints go to our logger, not to protobuf's stderr.
class LoggingErrorCollector final : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name, const pb::Message* /*descriptor*/,
                ErrorLocation /*location*/, const std::string& message) override {
    wheelrpc::detail::module_logger(kLogger)->warn("server reflection: file={} element={}: {}; file left out", filename,
                                                   element_name, message);
  }
};

struct Parsed {
  pb::FileDescriptorProto proto;
  std::string bytes;
};

/// Builds `name` after its imports (depth first); false if it or an import
/// could not be built. `visiting` breaks an import cycle (which the pool
/// then reports).
bool build_with_imports(const std::string& name, const std::map<std::string, Parsed>& files, pb::DescriptorPool& pool,
                        std::set<std::string>& visiting, LoggingErrorCollector& errors) {
  if (pool.FindFileByName(name) != nullptr) return true;
  const auto it = files.find(name);
  if (it == files.end() || !visiting.insert(name).second) return false;
  for (const std::string& import : it->second.proto.dependency()) {
    if (!files.contains(import)) {
      wheelrpc::detail::module_logger(kLogger)->warn(
          "server reflection: file={} imports {}, which no service carries; file left out", name, import);
      return false;
    }
    build_with_imports(import, files, pool, visiting, errors);
  }
  visiting.erase(name);
  return pool.BuildFileCollectingErrors(it->second.proto, &errors) != nullptr;
}

}  // namespace

DescriptorIndex::DescriptorIndex(Sources sources) : sources_(std::move(sources)) {}
DescriptorIndex::~DescriptorIndex() = default;

const pb::DescriptorPool& DescriptorIndex::pool() {
  std::call_once(built_, [this] { build(); });
  return *pool_;
}

const std::string* DescriptorIndex::file_bytes(const std::string& name) {
  std::call_once(built_, [this] { build(); });
  const auto it = bytes_.find(name);
  return it == bytes_.end() ? nullptr : &it->second;
}

void DescriptorIndex::build() {
  std::map<std::string, Parsed> files;
  for (const std::string_view bytes : sources_()) {
    Parsed parsed;
    if (!parsed.proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      wheelrpc::detail::module_logger(kLogger)->warn(
          "server reflection: {} bytes are not a FileDescriptorProto; left out", bytes.size());
      continue;
    }
    parsed.bytes.assign(bytes);
    const std::string name = parsed.proto.name();
    files.try_emplace(name, std::move(parsed));  // the first one given stays
  }
  pool_ = std::make_unique<pb::DescriptorPool>();
  LoggingErrorCollector errors;
  std::set<std::string> visiting;
  for (auto& [name, parsed] : files) {
    if (build_with_imports(name, files, *pool_, visiting, errors)) bytes_.emplace(name, std::move(parsed.bytes));
  }
}

}  // namespace wheelrpc::services::detail
