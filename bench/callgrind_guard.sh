#!/usr/bin/env bash
# The regression guard of instructions per unit (callgrind's Ir), run by CI:
# four figures measured now against the ones checked in
# (bench/callgrind_baseline.json); fails when one grew by more than its
# tolerance (3 % unless the baseline says otherwise for a figure):
#   call_engine     per call, inside the client's ClientCore::on_reply (inclusive):
#                   the reply's path, the completion and, in rpc_bench's closed
#                   loop, the next call's start_call; untyped echo, C = 16.
#                   (Not callgrind_per_call.sh's two toggles: they nest, so a
#                   start_call made inside on_reply turned counting off.)
#   typed_call      per call of the typed client (--typed: the generated stub,
#                   protobuf, the engine, the transport), everything in main but
#                   the reactor's waiting, C = 16
#   stream_message  per stream message in the client, native wire
#                   (callgrind_per_message.sh native 16 2)
#   heartbeat       per heartbeat of 200 idle connections (conn_scale, 200 ms
#                   heartbeats, 3 s window), everything the client process runs
#                   in the window (every thread); time-driven, so it spreads
#                   more (~1.5 %): its tolerance in the baseline is 5 %
# The calls are fixed counts (`rpc_bench client --calls 20000`), so the call
# figures do not depend on the machine's speed. Each server runs natively.
#
#   bench/callgrind_guard.sh            # build build/callgrind (clang -O1), measure, compare
#   bench/callgrind_guard.sh --update   # the same, then rewrite the baseline
#   bench/callgrind_guard.sh [--update] RPC_BENCH   # another binary (the baseline is of build/callgrind)
#   bench/callgrind_guard.sh --build-only   # configure and build build/callgrind, measure nothing
#
# The figures belong to one build: build/callgrind, clang++ -O1 -DNDEBUG,
# no sanitizer (the fuzz build's libraries are instrumented: callgrind cannot
# run them), built here with CMake (about 4 minutes on 2 cores from nothing).
# That build is also CI's Clang thread-safety analysis of every library
# (-Wthread-safety, its findings errors, as the clang-tsa preset): the
# libraries rpc_bench does not link (wheelrpc_registry, wheelrpc_admin) are
# built too. The warning flags change no code, so not the figures either.
# Needs valgrind (scripts/install_deps.sh callgrind) and clang++. Prints every
# figure either way; exit status 1 naming the figure, the baseline, the new
# value and the change when one grew too much.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
build_only=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
bin=${1:-}
if [ "$build_only" = 1 ] && [ -n "$bin" ]; then
  echo "usage: $0 --build-only  (builds build/callgrind: no binary to give)" >&2; exit 2
fi
baseline=bench/callgrind_baseline.json
calls=${CALLS:-20000}
if [ "$build_only" = 0 ]; then
  command -v valgrind >/dev/null || { echo "callgrind_guard: valgrind is not installed (scripts/install_deps.sh callgrind)" >&2; exit 1; }
  python3 bench/callgrind_guard.py --self-test >/dev/null
fi

build="build/callgrind: clang++ -O1 -DNDEBUG (Release, no sanitizer)"
if [ -z "$bin" ]; then
  command -v clang++ >/dev/null || { echo "callgrind_guard: clang++ is not installed (scripts/install_deps.sh fuzz)" >&2; exit 1; }
  start=$(date +%s)
  CC=clang CXX=clang++ cmake -S . -B build/callgrind -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DWHEELRPC_BUILD_TESTS=OFF -DWHEELRPC_BUILD_BENCH=ON \
    -DWHEELRPC_BUILD_EXAMPLES=OFF -DWHEELRPC_INSTALL=OFF >/dev/null
  # rpc_bench, and the libraries it does not link, for the thread-safety analysis.
  libraries=(wheelrpc_common wheelrpc_timer wheelrpc_transport wheelrpc_fault wheelrpc_rpc wheelrpc_registry wheelrpc_admin)
  cmake --build build/callgrind --target rpc_bench "${libraries[@]}" -j "${JOBS:-2}"
  echo "callgrind_guard: build/callgrind built in $(( $(date +%s) - start )) s"
  [ "$build_only" = 0 ] || exit 0
  bin=build/callgrind/bench/rpc_bench
elif [ "$(realpath "$bin")" != "$(realpath -m build/callgrind/bench/rpc_bench)" ]; then
  build="$bin (not build/callgrind: the baseline's build may differ)"
fi
[ -x "$bin" ] || { echo "callgrind_guard: $bin is not an executable" >&2; exit 1; }

tmp=$(mktemp -d)
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT
# start_server FLAGS...: a native `rpc_bench server`; its port in $port.
start_server() {
  rm -f "$tmp/port"
  "$bin" server --port 0 --port-file "$tmp/port" --lifetime 300 "$@" &
  server_pid=$!
  for _ in $(seq 100); do
    if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -s "$tmp/port" ] || { echo "callgrind_guard: $bin server did not start" >&2; exit 1; }
  port=$(cat "$tmp/port")
}
# summary FILE: callgrind's total Ir in FILE; fails when nothing was counted
# (a toggled function renamed or gone).
summary() {
  local ir
  ir=$(awk '/^summary:/ { print $2; exit }' "$1")
  if [ -z "$ir" ] || [ "$ir" -eq 0 ]; then
    echo "callgrind_guard: nothing counted in $1: are the toggled functions still there?" >&2
    exit 1
  fi
  echo "$ir"
}
# per_unit IR COUNT
per_unit() { python3 -c 'import sys; print(f"{int(sys.argv[1]) / int(sys.argv[2]):.1f}")' "$1" "$2"; }
json_field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
t0=$(date +%s)

# 1. The call engine, untyped: on_reply with what it runs (the completion and
# the next call's start), a fixed count of calls.
start_server
line=$(valgrind --tool=callgrind --log-file="$tmp/vg1" --callgrind-out-file="$tmp/cg1" --collect-atstart=no \
  '--toggle-collect=wheelrpc::rpc::detail::ClientCore::on_reply*' \
  "$bin" client --port "$port" --concurrency 16 --payload 64 --calls "$calls")
[ "$(json_field "$line" calls)" = "$calls" ] || { echo "callgrind_guard: call_engine: not $calls calls: $line" >&2; exit 1; }
call_engine=$(per_unit "$(summary "$tmp/cg1")" "$calls")
stop_server

# 2. The typed client: all of main but the reactor's waiting (a toggle flips
# on each entry and exit: off inside epoll_reactor::run).
start_server --typed
line=$(valgrind --tool=callgrind --log-file="$tmp/vg2" --callgrind-out-file="$tmp/cg2" --collect-atstart=no \
  '--toggle-collect=main' '--toggle-collect=boost::asio::detail::epoll_reactor::run*' \
  "$bin" client --port "$port" --concurrency 16 --payload 64 --calls "$calls" --typed)
[ "$(json_field "$line" calls)" = "$calls" ] || { echo "callgrind_guard: typed_call: not $calls calls: $line" >&2; exit 1; }
typed_call=$(per_unit "$(summary "$tmp/cg2")" "$calls")
stop_server

# 3. A stream message, native wire.
out=$(WARMUP=1 bench/callgrind_per_message.sh "$bin" native 16 2)
stream_message=$(awk '{ print $NF }' <<<"$out")

# 4. A heartbeat: conn_scale's client under callgrind against a native server
# (conn_scale would start its own server as its own executable: valgrind's
# launcher, under callgrind). The window is cut at its getrusage calls: dumps
# [0] up to the window, [1] between its two readings, [2] the window.
start_server --heartbeat-ms 200
line=$(valgrind --tool=callgrind --log-file="$tmp/vg4" --callgrind-out-file="$tmp/cg4" '--dump-before=*getrusage' \
  "$bin" conn_scale --connections 200 --heartbeat-ms 200 --duration-s 3 --port "$port" --server-pid "$server_pid")
stop_server
heartbeat=$(python3 - "$line" "$tmp" <<'EOF'
import glob, json, sys
line, tmp = json.loads(sys.argv[1]), sys.argv[2]
if line["errors"]:
    sys.exit(f"callgrind_guard: heartbeat: conn_scale had {line['errors']} errors")
dumps = []
for path in glob.glob(tmp + "/cg4*"):
    part = ir = trigger = None
    with open(path) as f:
        for text in f:
            if text.startswith("part:"):
                part = int(text.split()[1])
            elif text.startswith("desc: Trigger:"):
                trigger = text
            elif text.startswith("summary:"):
                ir = int(text.split()[1])
    if trigger and "getrusage" in trigger:
        dumps.append((part, ir))
dumps.sort()
if len(dumps) != 4:
    sys.exit(f"callgrind_guard: heartbeat: {len(dumps)} dumps at getrusage, not conn_scale's 4")
beats = line["heartbeats_in_window"]
print(f"{dumps[2][1] / beats:.1f}")
EOF
)
echo "callgrind_guard: measured in $(( $(date +%s) - t0 )) s"

cat >"$tmp/measured.json" <<EOF
{"call_engine": $call_engine, "typed_call": $typed_call, "stream_message": $stream_message, "heartbeat": $heartbeat}
EOF
if [ "$update" = 1 ]; then
  [ ! -f "$baseline" ] || python3 bench/callgrind_guard.py compare "$baseline" "$tmp/measured.json" || true
  python3 bench/callgrind_guard.py update "$baseline" "$tmp/measured.json" "$build" \
    "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +changes)"
  exit 0
fi
[ -f "$baseline" ] || { echo "callgrind_guard: no $baseline: run with --update" >&2; exit 1; }
python3 bench/callgrind_guard.py compare "$baseline" "$tmp/measured.json"
