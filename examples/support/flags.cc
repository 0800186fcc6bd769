#include "support/flags.h"

#include <cstdio>
#include <utility>

#include <boost/program_options/cmdline.hpp>
#include <boost/program_options/errors.hpp>
#include <boost/program_options/option.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

namespace wheelrpc::examples {

namespace po = boost::program_options;

std::optional<std::string> number_problem(std::string_view text, long long lo, long long hi, const std::string& note) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || end != text.data() + text.size() || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return "expected a number, got '" + std::string(text) + "'";
  }
  if (ec == std::errc() && v >= lo && v <= hi) return std::nullopt;
  std::string problem = "expected " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::string(text);
  if (!note.empty()) problem += "; " + note;
  return problem;
}

FlagParser& FlagParser::add_switch(std::string name, std::function<void()> set) {
  flags_.push_back({std::move(name), false, [set = std::move(set)](const std::string&) -> std::optional<std::string> {
                      set();
                      return std::nullopt;
                    }});
  return *this;
}

FlagParser& FlagParser::add_value(std::string name, Apply apply) {
  flags_.push_back({std::move(name), true, std::move(apply)});
  return *this;
}

FlagParser& FlagParser::add_number(std::string name, long long lo, long long hi, std::function<void(long long)> set,
                                   std::string note) {
  return add_value(
      std::move(name),
      [lo, hi, note = std::move(note), set = std::move(set)](const std::string& value) -> std::optional<std::string> {
        if (auto problem = number_problem(value, lo, hi, note)) return problem;
        set(*parse_int(value, lo, hi));
        return std::nullopt;
      });
}

const FlagParser::Flag* FlagParser::find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (std::string_view(f.name).substr(2) == name) return &f;
  }
  return nullptr;
}

int FlagParser::usage_error(const std::string& problem) const {
  std::fprintf(stderr, "%s: %s (see --help)\n", program_.c_str(), problem.c_str());
  return 2;
}

int FlagParser::help() const {
  std::fputs(usage_.c_str(), stdout);
  std::fflush(stdout);
  return 0;
}

int FlagParser::version() const {
  std::printf("%s (wheelrpc) %s\n", program_.c_str(), WHEELRPC_VERSION);
  std::fflush(stdout);
  return 0;
}

std::optional<int> FlagParser::parse(int argc, char** argv) const {
  po::options_description known;
  known.add_options()("help", po::bool_switch());
  known.add_options()("version", po::bool_switch());
  for (const auto& f : flags_) {
    const std::string name = f.name.substr(2);
    if (f.takes_value) {
      known.add_options()(name.c_str(), po::value<std::string>());
    } else {
      known.add_options()(name.c_str(), po::bool_switch());
    }
  }

  // Unknown flags and stray words come back as options too (allow_unregistered,
  // positional), so that the loops below report them in order, after --help
  // had its chance. No guessing of abbreviations, no short options: `-h` is a
  // word of its own.
  std::vector<po::option> options;
  try {
    options = po::command_line_parser(argc, argv)
                  .options(known)
                  .style(po::command_line_style::allow_long | po::command_line_style::long_allow_adjacent |
                         po::command_line_style::long_allow_next)
                  .allow_unregistered()
                  .run()
                  .options;
  } catch (const po::invalid_command_line_syntax& e) {
    switch (e.kind()) {
      case po::invalid_syntax::missing_parameter:
      case po::invalid_syntax::empty_adjacent_parameter: return usage_error(e.get_option_name() + ": missing value");
      case po::invalid_syntax::extra_parameter: return usage_error(e.get_option_name() + ": takes no value");
      default: return usage_error(e.what());
    }
  } catch (const po::error& e) {
    return usage_error(e.what());
  }

  // The word as typed: "--name", "--name=value" or a stray word.
  auto word_of = [](const po::option& o) {
    return o.original_tokens.empty() ? "--" + o.string_key : o.original_tokens.front();
  };
  for (const po::option& o : options) {
    const std::string word = word_of(o);
    if ((!o.unregistered && o.string_key == "help") || (o.string_key.empty() && word == "-h")) return help();
  }
  for (const po::option& o : options) {
    if (!o.unregistered && o.string_key == "version") return version();
  }
  for (const po::option& o : options) {
    const std::string word = word_of(o);
    if (o.string_key.empty()) {
      return usage_error((word.starts_with("-") ? "unknown flag '" : "unexpected argument '") + word + "'");
    }
    const Flag* flag = o.unregistered ? nullptr : find(o.string_key);
    if (!flag) return usage_error("unknown flag '" + word.substr(0, word.find('=')) + "'");
    if (auto problem = flag->apply(o.value.empty() ? std::string() : o.value.front())) {
      return usage_error(flag->name + ": " + *problem);
    }
  }
  return std::nullopt;
}

}  // namespace wheelrpc::examples
