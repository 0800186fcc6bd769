#!/usr/bin/env bash
# Rewrites protoc-gen-wheelrpc's goldens (tests/protobuf/golden/<case>/) from
# what the plugin of a build directory generates now: builds the plugin, then
# runs each case as its test does (tests/protobuf/run_golden.cmake) with
# UPDATE=ON. Review the result with `git diff tests/protobuf/golden`.
#   scripts/update_goldens.sh [BUILD_DIR]   # default build/dev
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/dev}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "update_goldens: $build is not a configured build directory (cmake --preset dev)" >&2
  exit 2
fi
cmake --build "$build" --target protoc-gen-wheelrpc
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
protoc="$(cache Protobuf_PROTOC_EXECUTABLE)"
protobuf_dir="$(cache Protobuf_INCLUDE_DIR)"
plugin="$build/protobuf/protoc-gen-wheelrpc"
for case_dir in tests/protobuf/golden/*/; do
  case_dir="${case_dir%/}"
  cmake -DPROTOC="$protoc" -DPLUGIN="$PWD/$plugin" -DWHEELRPC_PROTO_DIR="$PWD/protobuf/proto" \
        -DPROTOBUF_PROTO_DIR="$protobuf_dir" -DCASE_DIR="$PWD/$case_dir" \
        -DWORK_DIR="$PWD/$build/tests/protobuf/update/$(basename "$case_dir")" -DUPDATE=ON \
        -P tests/protobuf/run_golden.cmake
done
