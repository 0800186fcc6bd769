#pragma once
/// RequestFeed: the request messages of `call` and `bench` as JSON texts:
/// inline (-d JSON, or the argument after the method) or read from stdin
/// (-d @) as it arrives, one object after another.

#include <deque>
#include <iosfwd>
#include <optional>
#include <string>

#include "failure.h"
#include "json_splitter.h"

namespace wheelrpc::wheelctl {

/// One thread. Objects may span lines and several may share one.
class RequestFeed {
 public:
  /// The objects of `text`.
  explicit RequestFeed(std::string text);
  /// The objects read from `in`, line by line, as they come.
  explicit RequestFeed(std::istream& in);

  /// The next object's text into `out`, or std::nullopt at the end;
  /// kExitUsage when the text is not a sequence of JSON objects.
  std::optional<Failure> next(std::optional<std::string>& out);

 private:
  std::istream* in_ = nullptr;
  bool ended_ = false;
  JsonSplitter splitter_;
  std::deque<std::string> ready_;
};

}  // namespace wheelrpc::wheelctl
