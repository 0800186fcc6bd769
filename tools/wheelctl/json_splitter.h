#pragma once
/// JsonSplitter: a text of JSON objects one after the other (one per line,
/// or pretty-printed over several) cut into one string per object, as the
/// text arrives, so a stream's messages can be sent while stdin is open.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wheelrpc::wheelctl {

/// Feed it text in pieces; each complete top-level JSON object comes out as
/// soon as its closing brace arrived. It only tracks braces, brackets and
/// strings (with escapes): the objects' contents are checked later, by
/// protobuf's JSON parser. Text between objects other than white space is
/// an error. Distinct objects: safe; shared objects: unsafe.
class JsonSplitter {
 public:
  /// Appends `text`; returns the objects it completed, in order. After an
  /// error, returns nothing more.
  std::vector<std::string> feed(std::string_view text);
  /// Call at the end of the input: the problem if an object is unfinished
  /// or text was not an object, else std::nullopt.
  std::optional<std::string> finish() const;
  /// The first problem met ("" if none).
  const std::string& error() const noexcept { return error_; }

 private:
  std::string current_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  std::string error_;
};

}  // namespace wheelrpc::wheelctl
