#pragma once
/// The command line of the RPC benchmarks (rpc_bench's modes): flags of the
/// form `--name value`, `--name=value` or boolean `--name`, with range checks whose failures
/// are usage errors (exit status 2).

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <wheelrpc/transport/connector.h>

namespace wheelrpc::bench {

/// A usage error, reported by main with exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Flags of the form `--name value` or `--name=value`, plus boolean `--name`
/// (a boolean given as `--name=value` has that value: `--typed=callback`).
class Flags {
 public:
  Flags(int argc, char** argv, std::vector<std::string_view> booleans) {
    for (int i = 2; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a.size() < 3 || a.substr(0, 2) != "--") throw UsageError("unexpected argument " + std::string(a));
      const std::string_view name = a.substr(2);
      if (const auto eq = name.find('='); eq != std::string_view::npos) {  // --name=value
        values_.emplace_back(name.substr(0, eq), name.substr(eq + 1));
        continue;
      }
      bool is_bool = false;
      for (const auto b : booleans) is_bool = is_bool || b == name;
      if (is_bool) {
        values_.emplace_back(name, "1");
      } else if (i + 1 < argc) {
        values_.emplace_back(name, argv[++i]);
      } else {
        throw UsageError("missing value after " + std::string(a));
      }
    }
  }

  /// Throws UsageError for a flag nobody asked for.
  void check_known(std::initializer_list<std::string_view> known) const {
    for (const auto& [name, value] : values_) {
      bool ok = false;
      for (const auto k : known) ok = ok || k == name;
      if (!ok) throw UsageError("unknown flag --" + std::string(name));
    }
  }

  bool has(std::string_view name) const {
    for (const auto& [n, v] : values_) {
      if (n == name) return true;
    }
    return false;
  }
  std::string str(std::string_view name, std::string def) const {
    for (const auto& [n, v] : values_) {
      if (n == name) return std::string(v);
    }
    return def;
  }
  /// Every value of a flag that may be given more than once, each split at
  /// its commas, in order (`--x a,b --x c`: a, b, c).
  std::vector<std::string> list(std::string_view name) const {
    std::vector<std::string> items;
    for (const auto& [n, v] : values_) {
      if (n != name) continue;
      for (auto& item : split(v)) items.push_back(std::move(item));
    }
    return items;
  }
  /// The items of a comma-separated list; empty ones dropped.
  static std::vector<std::string> split(std::string_view text) {
    std::vector<std::string> items;
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      if (comma > start) items.emplace_back(text.substr(start, comma - start));
      start = comma + 1;
    }
    return items;
  }
  long long integer(std::string_view name, long long def, long long lo, long long hi) const {
    if (!has(name)) return def;
    const std::string s = str(name, "");
    long long v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
      throw UsageError("--" + std::string(name) + " must be an integer in " + std::to_string(lo) + ".." +
                       std::to_string(hi));
    }
    return v;
  }
  double seconds(std::string_view name, double def) const {
    if (!has(name)) return def;
    const std::string s = str(name, "");
    try {
      std::size_t used = 0;
      const double v = std::stod(s, &used);
      if (used == s.size() && v >= 0 && v <= 86'400) return v;
    } catch (const std::exception&) {
    }
    throw UsageError("--" + std::string(name) + " must be a number of seconds in 0..86400");
  }

 private:
  std::vector<std::pair<std::string_view, std::string_view>> values_;
};

inline boost::asio::ip::tcp::endpoint endpoint_of(const std::string& host, long long port) {
  boost::asio::ip::tcp::endpoint ep;
  if (!wheelrpc::transport::parse_endpoint(host + ":" + std::to_string(port), ep)) {
    throw UsageError("invalid --host '" + host + "'");
  }
  return ep;
}

}  // namespace wheelrpc::bench
