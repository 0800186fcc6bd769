#!/usr/bin/env bash
# Installs what is missing, builds and runs the whole test suite.
#   scripts/test.sh            # dev preset (debug, warnings as errors, under
#                              # AddressSanitizer + UndefinedBehaviorSanitizer)
#   scripts/test.sh asan       # the same sanitizers on an optimized build
#   scripts/test.sh tsan       # ThreadSanitizer
#   scripts/test.sh tsan --build-only   # configure and build, run nothing (CI
#                              # builds the next preset while the tests run)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}
build_only=false
[ "${2:-}" = --build-only ] && build_only=true
scripts/install_deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
$build_only && exit 0
run=()
if [ "$preset" = tsan ] && command -v setarch >/dev/null; then
  # ThreadSanitizer of GCC 12 cannot map its shadow memory under the high
  # address-space randomization of recent kernels; run with randomization off.
  run=(setarch "$(uname -m)" -R)
fi
"${run[@]}" ctest --preset "$preset"
