#pragma once
/// VerbFlags: a verb's command line read by Boost.Program_options: its
/// flags, its positional arguments, `--help`, and usage errors in one form.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace wheelrpc::wheelctl {

/// Where a verb reads and writes: the process's streams in main(), string
/// streams in tests. Distinct objects: safe.
struct Io {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
};

/// One verb's flags. Usage:
/// @code
/// VerbFlags flags("call", kCallUsage);
/// flags.options().add_options()("timeout-ms", po::value<long long>(), "...");
/// if (auto status = flags.parse(args, io)) return *status;
/// const auto& words = flags.positional();
/// @endcode
/// `--help`/`-h` prints the usage text and the flags on stdout (exit 0). A
/// usage error prints "wheelctl VERB: PROBLEM (see wheelctl VERB --help)"
/// on stderr (exit 2). Distinct objects: safe; shared objects: unsafe.
class VerbFlags {
 public:
  VerbFlags(std::string verb, std::string usage);

  boost::program_options::options_description& options() noexcept { return options_; }
  /// Parses `args` (the words after the verb). Returns the exit status when
  /// the verb is to end now (0 after --help, 2 after a usage error).
  std::optional<int> parse(const std::vector<std::string>& args, Io& io);
  const boost::program_options::variables_map& values() const noexcept { return values_; }
  /// The words that are no flag, in order.
  const std::vector<std::string>& positional() const noexcept { return positional_; }
  /// Prints the usage error `problem`; returns 2.
  int usage_error(Io& io, const std::string& problem) const;

 private:
  std::string verb_;
  std::string usage_;
  boost::program_options::options_description options_;
  boost::program_options::variables_map values_;
  std::vector<std::string> positional_;
};

}  // namespace wheelrpc::wheelctl
