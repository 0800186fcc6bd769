#!/usr/bin/env bash
# The main job: installs what is missing, builds (release preset) the libraries
# and every example, which the README's next steps run (build/release/examples/)
# and install (`cmake --install build/release`), and runs the echo demo
# (scripts/echo_demo.sh): a server, a client whose calls succeed, and calls to a
# slow method that time out with the precise error. The tests and benchmarks,
# which the default target builds too, are left for scripts/test.sh and bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target wheelrpc_examples
exec scripts/echo_demo.sh build/release
