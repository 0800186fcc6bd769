#!/usr/bin/env bash
# Builds the FrameDecoder libFuzzer target with clang in build/fuzz and fuzzes
# it for a while, starting from tests/fuzz/corpus/.
#   scripts/fuzz.sh        # 30 seconds
#   scripts/fuzz.sh 600    # 10 minutes
# Exits non-zero if the fuzzer finds a crash (the input is kept under
# build/fuzz/artifacts/); exits 0 with a message, doing nothing, when clang++
# or libFuzzer is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "usage: $0 [SECONDS]  (a positive whole number, default 30)" >&2
  exit 2
fi

if ! command -v clang++ >/dev/null; then
  echo "fuzz: skipped: clang++ is not installed (Debian: apt-get install clang)"
  exit 0
fi
# libFuzzer's runtime comes in a package of its own, apart from clang.
runtime_dir=$(clang++ --print-runtime-dir 2>/dev/null || true)
libfuzzer=${runtime_dir:-/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux}/libclang_rt.fuzzer-$(uname -m).a
if [ ! -f "$libfuzzer" ]; then
  echo "fuzz: skipped: libFuzzer is not installed, $libfuzzer is missing (Debian: apt-get install libclang-rt-14-dev)"
  exit 0
fi

scripts/install_deps.sh
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWHEELRPC_BUILD_FUZZ=ON -DWHEELRPC_BUILD_BENCH=OFF -DWHEELRPC_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/fuzz --target frame_decoder_fuzz -j 2

# libFuzzer adds what it finds to the corpus directory: fuzz a copy, so the
# checked-in seeds stay small and the tree stays clean.
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp tests/fuzz/corpus/* "$corpus"/
artifacts=build/fuzz/artifacts
mkdir -p "$artifacts"

echo "fuzz: frame_decoder_fuzz for ${seconds}s"
status=0
build/fuzz/tests/fuzz/frame_decoder_fuzz "$corpus" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$artifacts/" || status=$?
if [ "$status" -ne 0 ]; then
  echo "fuzz: FAILED (exit $status); the crashing input is in $artifacts/;" \
       "replay it with build/fuzz/tests/fuzz/frame_decoder_fuzz $artifacts/<file>" >&2
  exit "$status"
fi
echo "fuzz: no crash in ${seconds}s"
