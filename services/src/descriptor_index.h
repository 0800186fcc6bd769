#pragma once
/// DescriptorIndex: the files server reflection answers from, as a
/// DescriptorPool built from serialized FileDescriptorProtos.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>

namespace wheelrpc::services::detail {

/// Serialized FileDescriptorProtos (those rpc::Service::file_descriptors()
/// gives) indexed in a DescriptorPool of their own, not protobuf's
/// generated pool: a file is known because a served service carries it.
///
/// The pool is built at the first call of pool() or file_bytes(), from what
/// `sources` returns then (once, whichever thread comes first; the others
/// wait for it), and only read afterwards. A file given twice keeps its
/// first bytes; one that does not parse or build (an import missing, a
/// symbol declared twice) is logged on `wheelrpc.services` and left out.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe (any method, any thread).
class DescriptorIndex {
 public:
  using Sources = std::function<std::vector<std::string_view>()>;

  explicit DescriptorIndex(Sources sources);
  ~DescriptorIndex();
  DescriptorIndex(const DescriptorIndex&) = delete;
  DescriptorIndex& operator=(const DescriptorIndex&) = delete;

  /// The pool (built on the first call).
  const google::protobuf::DescriptorPool& pool();
  /// The serialized FileDescriptorProto of the file `name` as it was given,
  /// or nullptr for a file the pool does not hold.
  const std::string* file_bytes(const std::string& name);

 private:
  void build();

  Sources sources_;
  std::once_flag built_;
  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
  std::map<std::string, std::string, std::less<>> bytes_;  // by file name; written once, by build()
};

}  // namespace wheelrpc::services::detail
