#include "json_splitter.h"

namespace wheelrpc::wheelctl {

std::vector<std::string> JsonSplitter::feed(std::string_view text) {
  std::vector<std::string> done;
  for (const char c : text) {
    if (!error_.empty()) break;
    if (depth_ == 0) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      if (c != '{') {
        error_ = std::string("expected a JSON object ('{'), got '") + c + "'";
        break;
      }
    }
    current_.push_back(c);
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        done.push_back(std::move(current_));
        current_.clear();
      }
    }
  }
  return done;
}

std::optional<std::string> JsonSplitter::finish() const {
  if (!error_.empty()) return error_;
  if (depth_ != 0 || in_string_) return std::string("unexpected end of input inside a JSON object");
  return std::nullopt;
}

}  // namespace wheelrpc::wheelctl
