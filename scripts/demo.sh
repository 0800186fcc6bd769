#!/usr/bin/env bash
# The main job: installs what is missing, builds (release preset) and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target timer_demo
exec build/release/examples/timer_demo
