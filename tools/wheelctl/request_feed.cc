#include "request_feed.h"

#include <istream>

namespace wheelrpc::wheelctl {

RequestFeed::RequestFeed(std::string text) {
  for (auto& o : splitter_.feed(text)) ready_.push_back(std::move(o));
  ended_ = true;
}

RequestFeed::RequestFeed(std::istream& in) : in_(&in) {}

std::optional<Failure> RequestFeed::next(std::optional<std::string>& out) {
  out.reset();
  while (ready_.empty() && !ended_) {
    std::string line;
    if (!std::getline(*in_, line)) {
      ended_ = true;
      break;
    }
    for (auto& o : splitter_.feed(line + "\n")) ready_.push_back(std::move(o));
    if (!splitter_.error().empty()) break;
  }
  if (!ready_.empty()) {
    out = std::move(ready_.front());
    ready_.pop_front();
    return std::nullopt;
  }
  if (!splitter_.error().empty() || ended_) {
    if (auto problem = splitter_.finish()) return Failure{kExitUsage, "the request data: " + *problem};
  }
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
