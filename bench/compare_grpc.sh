#!/usr/bin/env bash
# The gRPC wire's speed goals, in one run beside gRPC C++ on the same
# .proto (bench/peers/echo.proto): five client -> server pairings of the
# unary echo at C = 128, back to back on this machine, each with a fresh
# server, ROUNDS rounds (the order rotated from round to round). Saves every
# JSON line and prints the medians and the goals (bench/grpc_ratios.py).
# Runnable from any directory.
#
#   bench/compare_grpc.sh                     # 3 rounds of 5 runs, 1 s + 4 s each: about 2 minutes
#   ROUNDS=5 DURATION=3 bench/compare_grpc.sh
#
# The pairings (field "pair"; "server_system" names the server's side, the
# line's "system" the client's):
#   grpc_grpc            grpc_echo client -> grpc_echo server
#   grpc_wheelrpc        grpc_echo client -> rpc_bench server (it serves gRPC on its port)
#   wheelrpc_grpc        rpc_bench client --protocol grpc -> grpc_echo server
#   wheelrpc_wheelrpc    rpc_bench client --protocol grpc -> rpc_bench server
#   native               rpc_bench client (native protocol) -> rpc_bench server
# Every client gets --server-pid: each line carries both processes' CPU per
# call over the measured window (user + sys of all threads; the server's
# from /proc/PID/stat). The goals: (a) wheelrpc's server CPU per call, called
# by gRPC C++'s client, <= 1/3 of gRPC C++'s server's; (b) wheelrpc's client
# CPU per call on the gRPC wire, calling gRPC C++'s server, <= 1/2 of gRPC
# C++'s client's; (c) wheelrpc <-> wheelrpc on the gRPC wire >= 5x the
# calls/s of gRPC C++ <-> gRPC C++ (native <-> native beside it).
#
# Environment (whole numbers): DURATION (measured window, s, default 4),
#   WARMUP (s, default 1), ROUNDS (default 3), CONCURRENCY (default 128),
#   PAYLOAD (bytes in the Blob, default 64); OUT (results file, default
#   bench/results/grpc-YYYY-MM-DD.jsonl), JOBS (parallel build jobs, default
#   2), BUILD_DIR (default <repo>/build/release), or BENCH (an rpc_bench
#   binary to run as it is: nothing of wheelrpc is built). The gRPC C++ peer
#   is built by bench/peers/build.sh into build/peers.
# Progress goes to stderr; the report (machine, tables, goals) to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$repo/build/peers"

DURATION=${DURATION:-4}
WARMUP=${WARMUP:-1}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-128}
PAYLOAD=${PAYLOAD:-64}
for v in "$DURATION" "$WARMUP" "$ROUNDS" "$CONCURRENCY" "$PAYLOAD"; do
  case $v in ''|*[!0-9]*)
    echo "compare_grpc.sh: DURATION, WARMUP, ROUNDS, CONCURRENCY and PAYLOAD take whole numbers" >&2; exit 2 ;;
  esac
done
out="${OUT:-$repo/bench/results/grpc-$(date +%F).jsonl}"
jobs="${JOBS:-2}"
build_dir="${BUILD_DIR:-$repo/build/release}"

# ---- build -------------------------------------------------------------------
if [ -n "${BENCH:-}" ]; then
  bench="$BENCH"
else
  echo "== building rpc_bench (release preset, $build_dir)" >&2
  (cd "$repo" && cmake --preset release -B "$build_dir" >&2 && cmake --build "$build_dir" --target rpc_bench -j "$jobs" >&2)
  bench="$build_dir/bench/rpc_bench"
fi
[ -x "$bench" ] || { echo "compare_grpc.sh: $bench was not built" >&2; exit 1; }
echo "== building the gRPC C++ peer (bench/peers/build.sh, $peers)" >&2
JOBS="$jobs" "$repo/bench/peers/build.sh" >&2
grpc="$peers/grpc_echo"
[ -x "$grpc" ] || { echo "compare_grpc.sh: $grpc was not built" >&2; exit 1; }

# ---- run ---------------------------------------------------------------------
# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
mkdir -p "$(dirname "$out")"
machine_line bench=grpc rounds="$ROUNDS" duration_s="$DURATION" warmup_s="$WARMUP" concurrency="$CONCURRENCY" \
  payload_bytes="$PAYLOAD" loadavg_before="$(cut -d' ' -f1-3 /proc/loadavg)" >"$out"
save() { tee -a "$out" >&2; }

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
per_client=$((WARMUP + DURATION + 30))

# run ROUND PAIR: a fresh server, one client run; its line, with the round,
# the pairing, the server's system and the 1-minute load average as the run
# ended, to the results file. (These VMs do not report steal time: on a busy
# host the time a vCPU waits counts as CPU time of what it was running, so
# the load beside a figure says how much to trust it.)
run() {
  local round=$1 pair=$2 server_bin client_bin server_system line
  local client_flags=()
  case $pair in
    grpc_grpc) server_bin=$grpc client_bin=$grpc server_system=grpc_cpp ;;
    grpc_wheelrpc) server_bin=$bench client_bin=$grpc server_system=wheelrpc ;;
    wheelrpc_grpc) server_bin=$grpc client_bin=$bench server_system=grpc_cpp client_flags=(--protocol grpc) ;;
    wheelrpc_wheelrpc) server_bin=$bench client_bin=$bench server_system=wheelrpc client_flags=(--protocol grpc) ;;
    native) server_bin=$bench client_bin=$bench server_system=wheelrpc ;;
    *) echo "compare_grpc.sh: unknown pairing $pair" >&2; exit 2 ;;
  esac
  rm -f "$tmp/port"
  "$server_bin" server --port 0 --port-file "$tmp/port" --lifetime $((per_client + 10)) &
  server_pid=$!
  for _ in $(seq 100); do
    if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -s "$tmp/port" ] || { echo "compare_grpc.sh: $(basename "$server_bin") server did not start" >&2; exit 1; }
  if line=$(timeout "$per_client" "$client_bin" client --port "$(cat "$tmp/port")" --concurrency "$CONCURRENCY" \
    --payload "$PAYLOAD" --warmup "$WARMUP" --duration "$DURATION" --server-pid "$server_pid" \
    "${client_flags[@]}"); then :; else
    echo "FAILED ($?): $pair" >&2
  fi
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  [ -n "$line" ] && echo "$line" |
    sed "s/^{/{\"round\":$round,\"pair\":\"$pair\",\"server_system\":\"$server_system\",\"loadavg\":$(cut -d' ' -f1 /proc/loadavg),/" |
    save
  return 0
}

# rotate N WORDS...: the words, starting from the (N mod count)-th.
rotate() {
  local n=$1
  shift
  local words=("$@") i
  for ((i = 0; i < ${#words[@]}; i++)); do echo "${words[$(((i + n) % ${#words[@]}))]}"; done
}

pairs=(grpc_grpc grpc_wheelrpc wheelrpc_grpc wheelrpc_wheelrpc native)
for round in $(seq "$ROUNDS"); do
  echo "== round $round of $ROUNDS: C = $CONCURRENCY, $PAYLOAD B" >&2
  for pair in $(rotate "$round" "${pairs[@]}"); do run "$round" "$pair"; done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "{\"meta\":\"load_after\",\"loadavg\":\"$load_after\"}" >>"$out"

# ---- report ------------------------------------------------------------------
echo "# The gRPC wire: wheelrpc beside gRPC C++ (bench/peers/echo.proto)"
echo
echo "- date: $when"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- load average (1, 5, 15 min) before: $(head -1 "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["loadavg_before"])'), after: $load_after"
echo "- ${PAYLOAD}-byte payload, C = $CONCURRENCY, ${WARMUP} s warm-up + ${DURATION} s per run, $ROUNDS rounds; raw results: ${out#"$repo"/}"
python3 "$repo/bench/grpc_ratios.py" "$out"
