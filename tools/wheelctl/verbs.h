#pragma once
/// wheelctl's verbs: each takes the words after its name and returns the
/// process's exit status (failure.h's ExitCode).

#include <string>
#include <vector>

#include "failure.h"
#include "verb_flags.h"

namespace wheelrpc::wheelctl {

using Args = std::vector<std::string>;

int run_list(const Args& args, Io& io);
int run_describe(const Args& args, Io& io);
int run_call(const Args& args, Io& io);
int run_health(const Args& args, Io& io);
int run_registry(const Args& args, Io& io);
int run_rules(const Args& args, Io& io);
int run_explain(const Args& args, Io& io);
int run_bench_verb(const Args& args, Io& io);

/// Prints `failure` on stderr ("wheelctl VERB: " before messages that are
/// not a call's status line) and returns its exit code.
int report(Io& io, const char* verb, const Failure& failure);

}  // namespace wheelrpc::wheelctl
