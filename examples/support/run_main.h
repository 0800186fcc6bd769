#pragma once
/// run_main: the main() of the example programs that parse flags into a
/// Config and run it.

#include <cstdio>
#include <exception>
#include <stdexcept>

namespace wheelrpc::examples {

/// A program's main: parses the flags into a Config (`parse` returns the exit
/// status when the program is to end at once: --help, a usage error), then
/// runs it. Options the library rejects (std::invalid_argument) exit 2 like
/// usage errors, reported on stderr as "<name>: <what> (see --help)"; other
/// failures exit 1, reported as "<name>: <what>".
template <class Config, class Parse, class Run>
int run_main(const char* name, int argc, char** argv, Parse parse, Run run) {
  Config cfg;
  if (const auto status = parse(argc, argv, cfg)) return *status;
  try {
    return run(cfg);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace wheelrpc::examples
