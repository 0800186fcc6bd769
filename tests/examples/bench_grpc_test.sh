#!/usr/bin/env bash
# rpc_bench's gRPC wire, briefly, so bench/compare_grpc.sh's plumbing cannot
# rot without gRPC C++ (registered with CTest by tests/CMakeLists.txt as
# bench_grpc where the benchmarks are built): a client with --protocol grpc
# calls its own server's `/peers.echo.Echo/Echo` with serialized Blobs for
# 1 s, without errors, and prints the fields the script reads; so does the
# native client beside it; the same client against a --typed server (whose
# protobuf service parses each Blob and serializes the reply) shows the
# requests are valid Blobs; a server with --load-reports and clients with
# --outlier --load-aware (bench/ab_rpc.sh's cost of the gray-failure
# bookkeeping) serve and say so, on both wires; bench/grpc_ratios.py turns the lines, tagged as
# compare_grpc.sh tags them, into its tables; a bad --protocol is a usage
# error.
#
#   bench_grpc_test.sh PATH/TO/rpc_bench PATH/TO/bench/grpc_ratios.py
set -euo pipefail

bench=${1:?usage: bench_grpc_test.sh RPC_BENCH GRPC_RATIOS_PY}
ratios=${2:?usage: bench_grpc_test.sh RPC_BENCH GRPC_RATIOS_PY}
tmp=$(mktemp -d)
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# check_line FILE PYTHON_CONDITION: FILE has one JSON line satisfying the
# condition on `d` (the line's object).
check_line() {
  python3 - "$@" <<'PY'
import json, sys
path, cond = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.strip()]
if len(lines) != 1:
    sys.exit(f"{len(lines)} lines, expected 1")
d = json.loads(lines[0])
if not eval("(" + cond + ")", {}, {"d": d}):  # the condition may span lines
    sys.exit(f"line fails `{cond}`: {lines[0].strip()}")
PY
}

# start_server FLAGS...: an rpc_bench server on a free port ($port).
start_server() {
  rm -f "$tmp/port"
  "$bench" server --port 0 --port-file "$tmp/port" --lifetime 60 "$@" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "FAIL: the server did not start" >&2; exit 1; }
  port=$(cat "$tmp/port")
}
client() {
  timeout 60 "$bench" client --port "$port" --concurrency 8 --warmup 0.2 --duration 1 --server-pid "$server_pid" "$@"
}
# The fields compare_grpc.sh and grpc_ratios.py read, all known.
fields='d["workload"] == "echo" and d["errors"] == 0 and d["calls"] > 0 and d["calls_per_s"] > 0
  and d["client_cpu_ns_per_call"] > 0 and d["server_cpu_ns_per_call"] >= 0 and d["concurrency"] == 8
  and d["payload_bytes"] == 64 and d["p99_us"] > 0'

start_server
if client --protocol grpc >"$tmp/grpc.jsonl"; then
  check_line "$tmp/grpc.jsonl" "$fields and d[\"protocol\"] == \"grpc\"" || fail "--protocol grpc line"
else
  fail "client --protocol grpc exited non-zero"
fi
if client >"$tmp/native.jsonl"; then
  check_line "$tmp/native.jsonl" "$fields and d[\"protocol\"] == \"native\"" || fail "native line"
else
  fail "native client exited non-zero"
fi
if "$bench" client --port "$port" --protocol http >/dev/null 2>&1; then
  fail "--protocol http was accepted"
else
  rc=$?
  [ "$rc" = 2 ] || fail "--protocol http: exit status $rc, expected 2 (usage)"
fi
stop_server

# Against the typed service: the serialized Blobs parse, and the replies match.
start_server --typed=callback
if client --protocol grpc --payload 300 >"$tmp/typed.jsonl"; then
  check_line "$tmp/typed.jsonl" 'd["errors"] == 0 and d["calls"] > 0 and d["payload_bytes"] == 300' ||
    fail "--protocol grpc against --typed=callback"
else
  fail "client --protocol grpc against --typed=callback exited non-zero"
fi
stop_server

# Load reports, outlier detection and the load-aware policy: the calls go
# through, and the lines say which were on.
start_server --load-reports
for proto in native grpc; do
  if client --protocol "$proto" --outlier --load-aware >"$tmp/gray-$proto.jsonl"; then
    check_line "$tmp/gray-$proto.jsonl" \
      "$fields and d[\"outlier\"] == \"on\" and d[\"load_aware\"] == \"on\" and d[\"protocol\"] == \"$proto\"" ||
      fail "--outlier --load-aware ($proto) line"
  else
    fail "client --protocol $proto --outlier --load-aware exited non-zero"
  fi
done
check_line "$tmp/native.jsonl" 'd["outlier"] == "off" and d["load_aware"] == "off"' || fail "defaults: off"
stop_server

# The ratio script on the lines, tagged as compare_grpc.sh tags them.
{
  sed 's/^{/{"round":1,"pair":"wheelrpc_wheelrpc","server_system":"wheelrpc",/' "$tmp/grpc.jsonl"
  sed 's/^{/{"round":1,"pair":"native","server_system":"wheelrpc",/' "$tmp/native.jsonl"
} >"$tmp/tagged.jsonl"
if python3 "$ratios" "$tmp/tagged.jsonl" >"$tmp/report.md"; then
  grep -q '^| wheelrpc → wheelrpc (gRPC wire) | 1 |' "$tmp/report.md" || fail "grpc_ratios.py: no gRPC wire row"
  grep -q 'gRPC wire / native' "$tmp/report.md" || fail "grpc_ratios.py: no gRPC wire / native ratio"
else
  fail "grpc_ratios.py exited non-zero"
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "bench_grpc: ok"
