#!/usr/bin/env bash
# The main job: installs what is missing, builds (release preset) and runs the
# echo demo (scripts/echo_demo.sh): a server, a client whose calls succeed, and
# calls to a slow method that time out with the precise error.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target echo_server echo_client
exec scripts/echo_demo.sh build/release
