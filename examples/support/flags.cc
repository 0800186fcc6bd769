#include "support/flags.h"

#include <memory>
#include <utility>

#include <boost/program_options/cmdline.hpp>
#include <boost/program_options/errors.hpp>
#include <boost/program_options/option.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

namespace wheelrpc::examples {

namespace po = boost::program_options;

FlagParser& FlagParser::add_switch(std::string name, std::function<void()> set) {
  flags_.push_back({std::move(name), false, [set = std::move(set)](const std::string&) -> std::optional<int> {
                      set();
                      return std::nullopt;
                    }});
  return *this;
}

FlagParser& FlagParser::add_value(std::string name, Apply apply) {
  flags_.push_back({std::move(name), true, std::move(apply)});
  return *this;
}

FlagParser& FlagParser::add_number(std::string name, long long lo, long long hi, std::string problem,
                                   std::function<void(long long)> set) {
  return add_value(std::move(name), [this, lo, hi, problem = std::move(problem),
                                     set = std::move(set)](const std::string& value) -> std::optional<int> {
    const auto v = parse_int(value, lo, hi);
    if (!v) return usage_(problem);
    set(*v);
    return std::nullopt;
  });
}

const FlagParser::Flag* FlagParser::find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (std::string_view(f.name).substr(2) == name) return &f;
  }
  return nullptr;
}

std::optional<int> FlagParser::parse(int argc, char** argv) const {
  po::options_description known;
  for (const auto& f : flags_) {
    const std::string name = f.name.substr(2);
    if (f.takes_value) {
      known.add_options()(name.c_str(), po::value<std::string>());
    } else {
      known.add_options()(name.c_str(), po::bool_switch());
    }
  }
  // Words the library would read otherwise than our syntax (see the class
  // comment) reach the loop below as plain words: `--`, which would end the
  // flags; `--name=value`; a flag that needs a value as the last word, which
  // would throw before the flags in front of it were checked.
  auto plain_words = [this](std::vector<std::string>& args) {
    std::vector<po::option> out;
    const std::string& word = args.front();
    const Flag* flag = word.size() > 2 && word.starts_with("--") ? find(std::string_view(word).substr(2)) : nullptr;
    if (word == "--" || (word.starts_with("--") && word.find('=') != std::string::npos) ||
        (flag && flag->takes_value && args.size() == 1)) {
      po::option o;
      o.value.push_back(word);
      o.original_tokens.push_back(word);
      out.push_back(std::move(o));
      args.erase(args.begin());
    }
    return out;
  };

  std::vector<po::option> options;
  try {
    options = po::command_line_parser(argc, argv)
                  .options(known)
                  .style(po::command_line_style::allow_long | po::command_line_style::long_allow_next)
                  .extra_style_parser(plain_words)
                  .allow_unregistered()
                  .run()
                  .options;
  } catch (const po::error& e) {
    return usage_(e.what());
  }

  for (std::size_t i = 0; i < options.size(); ++i) {
    const po::option& o = options[i];
    const std::string& word = o.original_tokens.empty() ? o.string_key : o.original_tokens.front();
    if (word == "-h" || word == "--help") return usage_("");
    const Flag* flag = o.unregistered || o.string_key.empty() ? nullptr : find(o.string_key);
    if (!flag) return usage_(i + 1 == options.size() ? "missing value after " + word : "unknown flag " + word);
    if (const auto status = flag->apply(o.value.empty() ? std::string() : o.value.front())) return status;
  }
  return std::nullopt;
}

}  // namespace wheelrpc::examples
