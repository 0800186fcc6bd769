#include "verb_flags.h"

#include <ostream>

#include "failure.h"
#include "verbs.h"

namespace wheelrpc::wheelctl {

namespace po = boost::program_options;

VerbFlags::VerbFlags(std::string verb, std::string usage)
    : verb_(std::move(verb)), usage_(std::move(usage)), options_("Flags", 100, 50) {
  options_.add_options()("help,h", "print this text and exit 0");
}

std::optional<int> VerbFlags::parse(const std::vector<std::string>& args, Io& io) {
  po::options_description all;
  all.add(options_);
  all.add_options()("wheelctl-positional", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("wheelctl-positional", -1);
  try {
    // Long flags only as --name (guessing from a prefix would make today's
    // abbreviation tomorrow's ambiguity); -h and -H/-d style short ones as
    // declared.
    const auto style = po::command_line_style::unix_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(), values_);
    po::notify(values_);
  } catch (const po::error& e) {
    return usage_error(io, e.what());
  }
  if (values_.count("help")) {
    io.out << usage_ << "\n" << options_;
    return kExitOk;
  }
  if (values_.count("wheelctl-positional")) positional_ = values_["wheelctl-positional"].as<std::vector<std::string>>();
  return std::nullopt;
}

int report(Io& io, const char* verb, const Failure& failure) {
  if (failure.status_line) {
    io.err << failure.message << "\n";
  } else {
    io.err << "wheelctl " << verb << ": " << failure.message << "\n";
  }
  return failure.exit_code;
}

int VerbFlags::usage_error(Io& io, const std::string& problem) const {
  io.err << "wheelctl " << verb_ << ": " << problem << " (see wheelctl " << verb_ << " --help)\n";
  return kExitUsage;
}

}  // namespace wheelrpc::wheelctl
