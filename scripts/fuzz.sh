#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build/fuzz and fuzzes each for a
# share of the time, starting from its seeds in tests/fuzz/corpus/<target>/:
# frame_decoder_fuzz (the RPC frame decoder), admin_http_fuzz (the admin HTTP
# request parser), compression_fuzz (the zstd, lz4, gzip and deflate
# decompressors) and http2_server_fuzz (the server's HTTP/2 and gRPC, its
# seeds in corpus/http2/), a quarter of the time each. The build is also
# Clang's thread-safety analysis (-Wthread-safety, its findings errors) of
# what the fuzz targets link (wheelrpc_rpc, wheelrpc_transport, wheelrpc_admin,
# wheelrpc_timer, wheelrpc_common); CI checks every library in the unsanitized
# clang build of bench/callgrind_guard.sh, which builds them all (what the
# clang-tsa preset checks alone), so the sanitized libraries built here are
# only the ones the fuzz targets need.
#   scripts/fuzz.sh        # 30 seconds in all
#   scripts/fuzz.sh 600    # 10 minutes in all
#   scripts/fuzz.sh --build-only   # configure and build build/fuzz, fuzz nothing
# Exits non-zero if a fuzzer finds a crash (the input is kept under
# build/fuzz/artifacts/<target>/); exits 0 with a message, doing nothing, when
# clang++ or libFuzzer is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=false
if [ "${1:-}" = --build-only ]; then build_only=true; shift; fi
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
# -O1 with line tables only: quick to build, fast enough to fuzz, and a
# crash's stack still names files and lines.
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DWHEELRPC_BUILD_FUZZ=ON -DWHEELRPC_BUILD_BENCH=OFF -DWHEELRPC_BUILD_EXAMPLES=OFF >/dev/null
targets=(frame_decoder_fuzz admin_http_fuzz compression_fuzz http2_server_fuzz)
cmake --build build/fuzz --target "${targets[@]}" -j 2
$build_only && exit 0

# The time is split between the targets, at least a second each (libFuzzer
# takes -max_total_time=0 as "no limit").
share=$(( seconds / ${#targets[@]} ))
[ "$share" -ge 1 ] || share=1

# libFuzzer adds what it finds to the corpus directory: fuzz a copy, so the
# checked-in seeds stay small and the tree stays clean.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for target in "${targets[@]}"; do
  seeds=tests/fuzz/corpus/${target%_fuzz}
  seeds=${seeds%_server}  # http2_server_fuzz: corpus/http2
  corpus=$work/$target
  mkdir -p "$corpus"
  cp "$seeds"/* "$corpus"/
  artifacts=build/fuzz/artifacts/$target
  mkdir -p "$artifacts"

  echo "fuzz: $target for ${share}s"
  status=0
  build/fuzz/tests/fuzz/$target "$corpus" -max_total_time="$share" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $target FAILED (exit $status); the crashing input is in $artifacts/;" \
         "replay it with build/fuzz/tests/fuzz/$target $artifacts/<file>" >&2
    exit "$status"
  fi
done
echo "fuzz: no crash in ${seconds}s"
