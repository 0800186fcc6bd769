// DescriptorIndex (services/src, white-box): the pool server reflection
// answers from, built once from serialized FileDescriptorProtos: imports
// before the files that import them whatever the order given, the first of
// two files of one name kept, and bytes that do not parse or a file whose
// import is missing left out, the rest served.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <google/protobuf/descriptor.pb.h>

#include "descriptor_index.h"
#include "reflection_probe.wheelrpc.h"

namespace pb = google::protobuf;
using wheelrpc::services::detail::DescriptorIndex;

namespace {

std::string serialized(const pb::FileDescriptorProto& file) { return file.SerializeAsString(); }

pb::FileDescriptorProto file_named(const std::string& name, const std::string& message,
                                   std::vector<std::string> imports = {}) {
  pb::FileDescriptorProto file;
  file.set_name(name);
  file.set_package("idx");
  file.set_syntax("proto3");
  for (auto& i : imports) file.add_dependency(i);
  file.add_message_type()->set_name(message);
  return file;
}

}  // namespace

TEST(DescriptorIndex, BuildsTheEmbeddedFilesImportsFirstWhateverTheOrder) {
  const auto files = reflecttest::Painter::file_descriptors;
  std::vector<std::string_view> reversed(files.rbegin(), files.rend());
  std::atomic<int> calls{0};
  DescriptorIndex index([&] {
    ++calls;
    return reversed;
  });
  EXPECT_EQ(calls.load(), 0) << "built at the first use, not before";
  // Several threads at once: one build, the same pool for all.
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (index.pool().FindMessageTypeByName("reflecttest.types.Shape.Corner") != nullptr) ++found;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(found.load(), 4);
  EXPECT_EQ(calls.load(), 1);
  ASSERT_NE(index.file_bytes("reflection_probe.proto"), nullptr);
  EXPECT_EQ(*index.file_bytes("reflection_probe.proto"), std::string(files[0]));
  EXPECT_NE(index.pool().FindMethodByName("reflecttest.Painter.Sketch"), nullptr);
}

TEST(DescriptorIndex, KeepsTheFirstOfTwoFilesOfOneNameAndLeavesOutWhatCannotBuild) {
  const std::string first = serialized(file_named("a.proto", "First"));
  const std::string second = serialized(file_named("a.proto", "Second"));
  const std::string orphan = serialized(file_named("orphan.proto", "Orphan", {"missing.proto"}));
  const std::string garbage = "\xff\xff\xff not a descriptor";
  const std::string ok = serialized(file_named("b.proto", "B", {"a.proto"}));
  DescriptorIndex index([&] { return std::vector<std::string_view>{first, second, orphan, garbage, ok}; });
  EXPECT_NE(index.pool().FindMessageTypeByName("idx.First"), nullptr);
  EXPECT_EQ(index.pool().FindMessageTypeByName("idx.Second"), nullptr);
  EXPECT_EQ(index.pool().FindFileByName("orphan.proto"), nullptr);
  EXPECT_EQ(index.file_bytes("orphan.proto"), nullptr);
  EXPECT_NE(index.pool().FindMessageTypeByName("idx.B"), nullptr);
  ASSERT_NE(index.file_bytes("a.proto"), nullptr);
  EXPECT_EQ(*index.file_bytes("a.proto"), first);
}
