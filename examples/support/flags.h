#pragma once
/// FlagParser: the command lines of the example programs, read by
/// Boost.Program_options.

#include <charconv>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace wheelrpc::examples {

/// A whole decimal number in [lo, hi], or nothing. No sign, no spaces.
inline std::optional<long long> parse_int(std::string_view s, long long lo, long long hi) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

/// The flags of one program and what each does with its value.
///
/// The syntax: `--name value` and `--name` (a switch); `-h` or `--help` asks
/// for the usage text. Flags are handled left to right and the first problem
/// ends the parse: a bad value (the flag's own message), a word that is no
/// flag ("unknown flag W", or "missing value after W" when it is the last
/// word: every word in a flag's place is taken to have a value), a flag that
/// needs a value at the end ("missing value after --name"). A value is the
/// next word whatever it looks like (`--server --json` gives --server the
/// value "--json"), and `--name=value` and `--` are words like any other.
///
/// Thread safety: distinct objects safe, shared objects unsafe.
///
/// Example:
///   FlagParser flags(usage);
///   flags.add_switch("--json", [&] { cfg.json = true; })
///       .add_number("--port", 0, 65535, "--port must be 0..65535", [&](long long v) { cfg.port = v; });
///   if (const auto status = flags.parse(argc, argv)) return *status;
class FlagParser {
 public:
  /// Prints `problem` (if not empty) and the usage text on stderr; returns
  /// the exit status (2).
  using Usage = std::function<int(const std::string& problem)>;
  /// Takes a flag's value; returns the exit status of a usage error, if the
  /// value is bad.
  using Apply = std::function<std::optional<int>(const std::string& value)>;

  explicit FlagParser(Usage usage) : usage_(std::move(usage)) {}

  /// A flag without a value.
  FlagParser& add_switch(std::string name, std::function<void()> set);
  /// A flag with a value, checked and stored by `apply`.
  FlagParser& add_value(std::string name, Apply apply);
  /// A flag whose value is a whole number in [lo, hi] (parse_int), passed to
  /// `set`; any other value is the usage error `problem`.
  FlagParser& add_number(std::string name, long long lo, long long hi, std::string problem,
                         std::function<void(long long)> set);

  /// Reads argv[1..argc) (see the class comment); returns the exit status of
  /// the first usage error, or nothing when every flag was applied.
  std::optional<int> parse(int argc, char** argv) const;

 private:
  struct Flag {
    std::string name;  // with its "--"
    bool takes_value;
    Apply apply;
  };
  const Flag* find(std::string_view name) const;

  Usage usage_;
  std::vector<Flag> flags_;
};

}  // namespace wheelrpc::examples
