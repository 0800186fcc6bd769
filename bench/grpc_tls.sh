#!/usr/bin/env bash
# The cost of TLS in wheelrpc and in gRPC C++, side by side: rpc_bench and the
# gRPC peer (bench/peers/grpc_echo.cc), each plaintext and with --tls, on the
# same throw-away certificates (EC P-256, made once per run with the openssl
# command), in alternating runs so all four see the same machine. Each round
# runs, one after the other: wheelrpc plaintext, wheelrpc TLS, gRPC plaintext,
# gRPC TLS; each run is a fresh server process (port 0) and one client.
# Saves the JSON lines (a machine line first) and prints, per concurrency, the
# medians and the ratios as a Markdown table.
#
#   bench/grpc_tls.sh                                   # C = 1 16 128, 3 rounds of 1 s + 5 s each: about 5 minutes
#   DURATION=10 ROUNDS=5 CONCURRENCY="1 128" bench/grpc_tls.sh
#
# Environment: BENCH (default <repo>/build/release/bench/rpc_bench; build it
# with the release preset), DURATION (measured s, default 5), WARMUP (s,
# default 1), ROUNDS (default 3), CONCURRENCY (default "1 16 128"), PAYLOAD
# (bytes, default 64), OUT (default bench/results/grpc-tls-YYYY-MM-DD.jsonl,
# appended to). The gRPC peer is built by bench/peers/build.sh into
# build/peers (it installs the Debian packages if missing, and rebuilds only
# what changed). Progress goes to stderr, the table to stdout; exit status 1
# if any run failed or had errors.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench=${BENCH:-$repo/build/release/bench/rpc_bench}
[ -x "$bench" ] || { echo "grpc_tls.sh: $bench not built (cmake --preset release && cmake --build build/release --target rpc_bench)" >&2; exit 1; }
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 16 128"}
PAYLOAD=${PAYLOAD:-64}
for v in "$DURATION" "$WARMUP" "$ROUNDS" "$PAYLOAD" $CONCURRENCY; do
  case $v in ''|*[!0-9]*) echo "grpc_tls.sh: DURATION, WARMUP, ROUNDS, PAYLOAD and CONCURRENCY take whole numbers" >&2; exit 2 ;; esac
done
out=${OUT:-$repo/bench/results/grpc-tls-$(date +%F).jsonl}

# ---- the gRPC peer (build/peers, git-ignored) -----------------------------------
"$repo/bench/peers/build.sh" >&2
grpc="$repo/build/peers/grpc_echo"
[ -x "$grpc" ] || { echo "grpc_tls.sh: $grpc was not built" >&2; exit 1; }

# ---- processes and clean-up ----------------------------------------------------
tmp=$(mktemp -d)
certs="$tmp/certs"
run_out="$tmp/runs.jsonl"
server_pid=""
client_pid=""
stop() {  # pid: SIGTERM, then reap
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  [ -z "$client_pid" ] || stop "$client_pid"
  [ -z "$server_pid" ] || stop "$server_pid"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- certificates: what rpc_bench's server would make (support/test_certs.h) ---
# A CA and a server certificate it signs for localhost and 127.0.0.1, EC P-256,
# SHA-256, valid one day. rpc_bench's server uses DIR/server.pem and
# DIR/server.key as they are since DIR/ca.pem exists.
mkdir -p "$certs"
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days 1 \
  -subj "/CN=bench test CA" -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$certs/ca.key" -out "$certs/ca.pem" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
  -subj "/CN=bench test server" -keyout "$certs/server.key" -out "$tmp/server.csr" 2>/dev/null
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=serverAuth" "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$tmp/server.ext"
openssl x509 -req -in "$tmp/server.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" \
  -set_serial "0x$(openssl rand -hex 8)" -sha256 -days 1 -extfile "$tmp/server.ext" \
  -out "$certs/server.pem" 2>/dev/null

# ---- runs ----------------------------------------------------------------------
# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
machine_line bench=grpc_tls duration_s="$DURATION" warmup_s="$WARMUP" rounds="$ROUNDS" \
  payload_bytes="$PAYLOAD" concurrency="$CONCURRENCY" openssl="$(openssl version)" >"$run_out"

failures=0
field() {  # name line: a number field of a JSON line
  sed -n "s/.*\"$1\":\([-0-9.]*\).*/\1/p" <<<"$2"
}
run() {  # binary name tls(on|off) C round
  local bin=$1 name=$2 tls=$3 c=$4 round=$5 tls_flags=() rc=0 line
  [ "$tls" = off ] || tls_flags=(--tls "$certs")
  rm -f "$tmp/port"
  "$bin" server --port 0 --port-file "$tmp/port" --lifetime $((WARMUP + DURATION + 30)) "${tls_flags[@]}" &
  server_pid=$!
  for _ in $(seq 100); do  # up to 10 s; give up at once if the server died
    if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if [ ! -s "$tmp/port" ]; then
    echo "FAILED: $name server (tls $tls) did not start" >&2
    failures=$((failures + 1)); stop "$server_pid"; server_pid=""; return
  fi
  timeout $((WARMUP + DURATION + 20)) "$bin" client --port "$(cat "$tmp/port")" --concurrency "$c" \
    --payload "$PAYLOAD" --warmup "$WARMUP" --duration "$DURATION" --server-pid "$server_pid" \
    "${tls_flags[@]}" >"$tmp/line" &
  client_pid=$!
  wait "$client_pid" || rc=$?
  client_pid=""
  stop "$server_pid"; server_pid=""
  line=$(cat "$tmp/line")
  if [ "$rc" != 0 ] || [ -z "$line" ]; then
    echo "FAILED ($rc): $name client C=$c tls $tls round $round" >&2
    failures=$((failures + 1))
  fi
  if [ -z "$line" ]; then return; fi
  echo "{\"round\":$round,${line#\{}" >>"$run_out"
  printf 'C=%s round %s: %-8s TLS %-3s %8s calls/s, %s errors\n' "$c" "$round" "$name" "$tls" \
    "$(field calls_per_s "$line")" "$(field errors "$line")" >&2
}
for c in $CONCURRENCY; do
  for round in $(seq "$ROUNDS"); do
    run "$bench" wheelrpc off "$c" "$round"
    run "$bench" wheelrpc on "$c" "$round"
    run "$grpc" grpc off "$c" "$round"
    run "$grpc" grpc on "$c" "$round"
  done
done
mkdir -p "$(dirname "$out")"
cat "$run_out" >>"$out"
echo "saved to $out" >&2

# ---- table ---------------------------------------------------------------------
/usr/bin/python3 - "$run_out" <<'PY' || failures=$((failures + 1))
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta, runs = lines[0], lines[1:]
systems = [("wheelrpc", "wheelrpc"), ("grpc_cpp", "gRPC C++")]

def cpu_ns(r):
    """Client + server CPU per call in the window, ns (None: unknown)."""
    if "client_cpu_ns_per_call" in r:
        c, s = r["client_cpu_ns_per_call"], r["server_cpu_ns_per_call"]
    else:
        n = r["calls"]
        c = r["client_cpu_s"] * 1e9 / n if n and r["client_cpu_s"] >= 0 else -1
        s = r["server_cpu_s"] * 1e9 / n if n and r["server_cpu_s"] >= 0 else -1
    return c + s if c >= 0 and s >= 0 else None

def med(rows, get):
    vals = [v for v in map(get, rows) if v is not None]
    return statistics.median(vals) if vals else None

def fmt(v, digits=0):
    return "–" if v is None else f"{v:.{digits}f}"

def ratio(a, b):
    return None if a is None or not b else a / b

versions = {r["system"]: r["version"] for r in runs}
print(f"machine: {meta['cpu']}, {meta['nproc']} CPUs, {meta['date']}, commit {meta['wheelrpc_commit']}, "
      f"{meta['openssl']}; wheelrpc {versions.get('wheelrpc', '?')}, gRPC C++ {versions.get('grpc_cpp', '?')}; "
      f"{meta['payload_bytes']}-byte payload, {meta['warmup_s']} s warm-up + {meta['duration_s']} s measured per run")
for c in sorted({r["concurrency"] for r in runs}):
    stats = {}
    for sys_name, _ in systems:
        for tls in ("off", "on"):
            rows = [r for r in runs if r["concurrency"] == c and r["system"] == sys_name and r["tls"] == tls]
            stats[sys_name, tls] = {
                "n": len(rows),
                "errors": sum(r["errors"] for r in rows),
                "rate": med(rows, lambda r: r["calls_per_s"]),
                "p50": med(rows, lambda r: r["p50_us"]),
                "p99": med(rows, lambda r: r["p99_us"]),
                "cpu": med(rows, cpu_ns),
            }
    print()
    print(f"C = {c} (medians of {max(s['n'] for s in stats.values())} runs)")
    print()
    print("| system | TLS | calls/s | p50 µs | p99 µs | client+server CPU ns/call | errors "
          "| calls/s TLS / plaintext | CPU/call TLS / plaintext |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sys_name, label in systems:
        for tls in ("off", "on"):
            s, p = stats[sys_name, tls], stats[sys_name, "off"]
            tail = "| | |" if tls == "off" else \
                f"| {fmt(ratio(s['rate'], p['rate']), 2)} | {fmt(ratio(s['cpu'], p['cpu']), 2)} |"
            print(f"| {label} | {tls} | {fmt(s['rate'])} | {fmt(s['p50'], 1)} | {fmt(s['p99'], 1)} "
                  f"| {fmt(s['cpu'])} | {s['errors']} {tail}")
    w, g = stats["wheelrpc", "on"], stats["grpc_cpp", "on"]
    print(f"| wheelrpc TLS / gRPC TLS | | {fmt(ratio(w['rate'], g['rate']), 2)} | {fmt(ratio(w['p50'], g['p50']), 2)} "
          f"| {fmt(ratio(w['p99'], g['p99']), 2)} | {fmt(ratio(w['cpu'], g['cpu']), 2)} | | | |")
PY
if [ "$failures" != 0 ]; then echo "grpc_tls.sh: $failures run(s) failed" >&2; exit 1; fi
if grep -q '"errors":[1-9]' "$run_out"; then echo "grpc_tls.sh: some runs had errors" >&2; exit 1; fi
