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

/// What is wrong with a number flag's value `text`, or nothing when it is a
/// whole decimal number in [lo, hi]: "expected a number, got 'x'" or
/// "expected LO..HI, got V", then "; note" when `note` is not empty.
std::optional<std::string> number_problem(std::string_view text, long long lo, long long hi,
                                          const std::string& note = {});

/// The flags of one program and what each does with its value.
///
/// The syntax is Boost.Program_options' long options: `--name value` or
/// `--name=value`, and `--name` alone for a switch. `-h` or `--help` anywhere
/// prints the usage text on stdout, and parse() returns 0. A flag may be given
/// more than once: its values are applied left to right.
///
/// Anything else is a usage error, reported as ONE line on stderr,
/// "<program>: <problem> (see --help)", and parse() returns 2. The problem
/// is the first of: a flag that needs a value but has none, as the last word
/// or in `--name=` ("--port: missing value"), a switch given a value
/// ("--json: takes no value"), then, left to right, a word that is not a flag
/// ("unknown flag '--x'"), a word that is no flag's value ("unexpected
/// argument 'x'") or a value that the flag rejects ("--port: expected
/// 0..65535, got 70000"). A flag that needs a value takes the next word
/// whatever it looks like: `--server --json` gives --server the value
/// "--json". No abbreviations; after `--` every word is a stray one.
///
/// Thread safety: distinct objects safe, shared objects unsafe.
///
/// Example:
///   FlagParser flags("echo_server", kUsage);
///   flags.add_switch("--json", [&] { cfg.json = true; })
///       .add_number("--port", 0, 65535, [&](long long v) { cfg.port = v; });
///   if (const auto status = flags.parse(argc, argv)) return *status;
///   if (!cfg.port_given) return flags.usage_error("--port is required");
class FlagParser {
 public:
  /// Takes a flag's value; returns what is wrong with it (without the flag's
  /// name, which the parser puts in front), if it is bad.
  using Apply = std::function<std::optional<std::string>(const std::string& value)>;

  /// `program` starts every message; `usage` is the text --help prints
  /// (with its final newline).
  FlagParser(std::string program, std::string usage) : program_(std::move(program)), usage_(std::move(usage)) {}

  /// A flag without a value.
  FlagParser& add_switch(std::string name, std::function<void()> set);
  /// A flag with a value, checked and stored by `apply`.
  FlagParser& add_value(std::string name, Apply apply);
  /// A flag whose value is a whole number in [lo, hi], passed to `set`; any
  /// other value is a usage error (number_problem, with `note`).
  FlagParser& add_number(std::string name, long long lo, long long hi, std::function<void(long long)> set,
                         std::string note = {});

  /// Reads argv[1..argc) (see the class comment); returns the exit status
  /// when the program is to end now (0 after --help or --version, 2 after a
  /// usage error),
  /// or nothing when every flag was applied.
  std::optional<int> parse(int argc, char** argv) const;

  /// Prints "<program>: <problem> (see --help)" on stderr; returns 2, the
  /// exit status of a usage error. For the checks made after parse().
  int usage_error(const std::string& problem) const;
  /// Prints the usage text on stdout; returns 0.
  int help() const;
  /// Prints "<program> (wheelrpc) <version>" on stdout; returns 0.
  int version() const;

 private:
  struct Flag {
    std::string name;  // with its "--"
    bool takes_value;
    Apply apply;
  };
  const Flag* find(std::string_view name) const;

  std::string program_;
  std::string usage_;
  std::vector<Flag> flags_;
};

}  // namespace wheelrpc::examples
