/// The command line of the gRPC C++ interop peers: --name=value flags (also
/// "--name value"), each from a fixed set, as gRPC's interop peers take them.

#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace interop {

class Flags {
 public:
  /// Parses argv against `known` (name → default). Exits with status 2 and a
  /// message on an unknown flag or a missing value.
  Flags(int argc, char** argv, std::initializer_list<std::pair<const std::string, std::string>> known)
      : values_(known) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg.substr(0, 2) != "--") usage(argv[0], "not a flag: " + std::string(arg));
      arg.remove_prefix(2);
      std::string name, value;
      if (auto eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      } else {
        name = arg;
        if (i + 1 >= argc) usage(argv[0], "--" + name + " needs a value");
        value = argv[++i];
      }
      auto it = values_.find(name);
      if (it == values_.end()) usage(argv[0], "unknown flag --" + name);
      it->second = value;
    }
  }

  const std::string& str(const std::string& name) const { return values_.at(name); }

  bool boolean(const std::string& name) const {
    const std::string& v = values_.at(name);
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0" || v.empty()) return false;
    std::fprintf(stderr, "--%s takes true or false, not '%s'\n", name.c_str(), v.c_str());
    std::exit(2);
  }

  int number(const std::string& name) const {
    const std::string& v = values_.at(name);
    try {
      size_t used = 0;
      int n = std::stoi(v, &used);
      if (used == v.size() && n >= 0 && n <= 65535) return n;
    } catch (const std::exception&) {
    }
    std::fprintf(stderr, "--%s takes a port number, not '%s'\n", name.c_str(), v.c_str());
    std::exit(2);
  }

 private:
  [[noreturn]] void usage(const char* program, const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nflags:", program, why.c_str());
    for (const auto& [name, value] : values_) std::fprintf(stderr, " --%s=%s", name.c_str(), value.c_str());
    std::fprintf(stderr, "\n");
    std::exit(2);
  }

  std::map<std::string, std::string> values_;
};

/// The whole of a file (certificates and keys); exits with status 2 if it
/// cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace interop
