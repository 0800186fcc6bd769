#!/usr/bin/env bash
# scripts/check_layers.py: the tree as it is passes; a copy of rpc/src with
# one include against each rule fails, naming it.
#
#   check_layers_test.sh PATH/TO/scripts/check_layers.py PATH/TO/rpc/src PATH/TO/docs/architecture.md
set -euo pipefail
usage="usage: check_layers_test.sh CHECKER RPC_SRC ARCHITECTURE_MD"
checker=${1:?$usage}
src=${2:?$usage}
doc=${3:?$usage}
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$checker" --src "$src" --doc "$doc" || fail "the tree breaks its own rules"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Expects the checker to fail on the copy in $tmp/src and to print $1.
expect() {
  local out
  if out=$(python3 "$checker" --src "$tmp/src" --doc "$doc" 2>&1); then fail "not caught: $1"; fi
  grep -qF -- "$1" <<<"$out" || fail "expected '$1' in: $out"
}
fresh() { rm -rf "$tmp/src"; cp -r "$src" "$tmp/src"; }

fresh  # the stream engine may not use a wire
echo '#include "wire/stream_open.h"' >>"$tmp/src/stream/stream_counters.h"
expect "stream/stream_counters.h: includes wire/stream_open.h: room 'stream' may not use room 'wire'"

fresh  # one wire may not use the other
echo '#include "wire/native/native_stream_frames.h"' >>"$tmp/src/wire/grpc/grpc_wire.cc"
expect "room 'wire/grpc' may not use room 'wire/native'"

fresh  # the stream engine never sees the native frame
echo '#include <wheelrpc/transport/frame.h>' >>"$tmp/src/stream/stream_counters.cc"
expect "stream/stream_counters.cc: includes <wheelrpc/transport/frame.h>, which room 'stream' may not use"

fresh  # two files of one room including each other
echo '#include "base/circle_b.h"' >"$tmp/src/base/circle_a.h"
echo '#include "base/circle_a.h"' >"$tmp/src/base/circle_b.h"
expect "files include each other: base/circle_a -> base/circle_b -> base/circle_a"

fresh  # a file the map does not name
echo '// nothing' >"$tmp/src/stream/stream_unnamed.h"
expect "stream/stream_unnamed.h: named neither in architecture.md nor in stream/README.md"

fresh  # a folder that is not a room
mkdir "$tmp/src/misc" && echo '' >"$tmp/src/misc/x.h"
expect "misc/x.h: in 'misc', which is not a room"

fresh  # a file over the limit
for _ in $(seq 700); do echo '// padding'; done >"$tmp/src/base/long.h"
expect "base/long.h: 700 lines (at most 600)"
echo "check_layers_test: ok"
