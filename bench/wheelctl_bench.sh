#!/usr/bin/env bash
# wheelctl bench's engine against the clients it must keep up with, on the
# unary echo of bench/peers/echo.proto at C = 128, each run on a fresh
# server, ROUNDS rounds with the order rotated from round to round:
#
#   pair    reference client                      wheelctl bench                  server
#   native  rpc_bench client                      --protocol native               rpc_bench server
#   grpc    rpc_bench client --protocol grpc      --protocol grpc                 rpc_bench server
#   peer    grpc_echo client (gRPC C++)           --protocol grpc                 grpc_echo server (gRPC C++)
#
# Prints per pair the median calls/s of both clients and the ratio wheelctl /
# reference (the median of the per-round ratios) against the goals: >= 0.9
# of rpc_bench's client on both wires, >= 3x gRPC C++'s own client against
# gRPC C++'s server. Saves every JSON line, tagged with its round, pair and
# client, to OUT (default bench/results/wheelctl-YYYY-MM-DD.jsonl).
#
#   bench/wheelctl_bench.sh                      # 3 rounds of 6 runs of 5 s: about 2 minutes
#   ROUNDS=5 DURATION=4 bench/wheelctl_bench.sh
#
# wheelctl calls /peers.echo.Echo/Echo with a Blob of PAYLOAD bytes, the
# request described by bench/peers/echo.proto (--proto; rpc_bench server
# answers that path on both wires, as bench/README.md says); rpc_bench's
# client sends the same bytes unwrapped on the native wire. The reference
# clients measure DURATION seconds after a 1 s warm-up; wheelctl measures
# its DURATION seconds from its first call (after one warm-up call per
# thread that also connects).
#
# Environment: DURATION (s, default 5), ROUNDS (default 3), CONCURRENCY
# (default 128), PAYLOAD (bytes, default 64), THREADS (wheelctl --threads;
# default: its own, one per core), WHEELCTL (default
# build/release/tools/wheelctl/wheelctl), BENCH (default
# build/release/bench/rpc_bench), GRPC (default build/peers/grpc_echo, built
# by bench/peers/build.sh), OUT. Nothing is built here. Progress goes to
# stderr; the summary to stdout. Python: /usr/bin/python3.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-128}
PAYLOAD=${PAYLOAD:-64}
THREADS=${THREADS:-}
for v in "$DURATION" "$ROUNDS" "$CONCURRENCY" "$PAYLOAD" "${THREADS:-0}"; do
  case $v in ''|*[!0-9]*)
    echo "wheelctl_bench.sh: DURATION, ROUNDS, CONCURRENCY, PAYLOAD and THREADS take whole numbers" >&2; exit 2 ;;
  esac
done
wheelctl="${WHEELCTL:-$repo/build/release/tools/wheelctl/wheelctl}"
bench="${BENCH:-$repo/build/release/bench/rpc_bench}"
grpc="${GRPC:-$repo/build/peers/grpc_echo}"
out="${OUT:-$repo/bench/results/wheelctl-$(date +%F).jsonl}"
for b in "$wheelctl" "$bench" "$grpc"; do
  [ -x "$b" ] || { echo "wheelctl_bench.sh: $b is missing (build wheelctl and rpc_bench with the release preset; the peer with bench/peers/build.sh)" >&2; exit 1; }
done

# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
mkdir -p "$(dirname "$out")"
machine_line bench=wheelctl rounds="$ROUNDS" duration_s="$DURATION" concurrency="$CONCURRENCY" \
  payload_bytes="$PAYLOAD" threads="${THREADS:-default}" loadavg_before="$(cut -d' ' -f1-3 /proc/loadavg)" >"$out"

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# The request as JSON: a Blob of PAYLOAD 'x' bytes (bytes are base64 in JSON).
request=$(/usr/bin/python3 -c 'import base64, sys; print("{\"payload\":\"%s\"}" % base64.b64encode(b"x" * int(sys.argv[1])).decode())' "$PAYLOAD")
thread_flags=()
[ -n "$THREADS" ] && thread_flags=(--threads "$THREADS")
per_run=$((DURATION + 40))

# The server's CPU so far (user + system, clock ticks) from /proc.
server_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }

# run ROUND PAIR CLIENT: a fresh server, one client run, its JSON line tagged.
run() {
  local round=$1 pair=$2 client=$3 server_bin line port
  case $pair in
    native|grpc) server_bin=$bench ;;
    peer) server_bin=$grpc ;;
  esac
  rm -f "$tmp/port"
  "$server_bin" server --port 0 --port-file "$tmp/port" --lifetime $((per_run + 10)) >/dev/null &
  server_pid=$!
  for _ in $(seq 100); do
    if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -s "$tmp/port" ] || { echo "wheelctl_bench.sh: $(basename "$server_bin") server did not start" >&2; exit 1; }
  port=$(cat "$tmp/port")
  local cmd
  if [ "$client" = wheelctl ]; then
    local protocol=grpc
    [ "$pair" = native ] && protocol=native
    cmd=("$wheelctl" bench "127.0.0.1:$port" /peers.echo.Echo/Echo "$request" --proto "$repo/bench/peers/echo.proto"
      --protocol "$protocol" --concurrency "$CONCURRENCY" --duration-s "$DURATION" --json --no-progress
      "${thread_flags[@]}")
  else
    local ref_bin=$bench ref_flags=()
    [ "$pair" = grpc ] && ref_flags=(--protocol grpc)
    [ "$pair" = peer ] && ref_bin=$grpc
    cmd=("$ref_bin" client --port "$port" --concurrency "$CONCURRENCY" --payload "$PAYLOAD" --warmup 1
      --duration "$DURATION" --server-pid "$server_pid" "${ref_flags[@]}")
  fi
  echo "== round $round $pair $client: ${cmd[*]}" >&2
  if [ "$client" = wheelctl ]; then
    # wheelctl reports no CPU: its whole process's (/usr/bin/time, method
    # resolution and warm-up included) and the server's over the same time.
    local s0 s1
    s0=$(server_ticks)
    line=$(/usr/bin/time -f "%U %S" -o "$tmp/time" timeout "$per_run" "${cmd[@]}") ||
      echo "wheelctl_bench.sh: FAILED ($?): $pair $client" >&2
    s1=$(server_ticks)
    [ -n "$line" ] && line=$(/usr/bin/python3 -c '
import json, os, sys
d = json.loads(sys.argv[1])
u, s = (float(x) for x in open(sys.argv[2]).read().split()[-2:])
tck = os.sysconf("SC_CLK_TCK")
n = max(d["calls"], 1)
d["client_cpu_ns_per_call"] = round((u + s) * 1e9 / n)
d["server_cpu_ns_per_call"] = round((int(sys.argv[4]) - int(sys.argv[3])) / tck * 1e9 / n)
print(json.dumps(d, separators=(",", ":")))' "$line" "$tmp/time" "$s0" "$s1")
  else
    line=$(timeout "$per_run" "${cmd[@]}") || echo "wheelctl_bench.sh: FAILED ($?): $pair $client" >&2
  fi
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  if [ -n "$line" ]; then
    echo "$line" | sed "s/^{/{\"round\":$round,\"pair\":\"$pair\",\"client\":\"$client\",\"loadavg\":$(cut -d' ' -f1 /proc/loadavg),/" |
      tee -a "$out" >&2
  fi
}

runs=("native reference" "native wheelctl" "grpc reference" "grpc wheelctl" "peer reference" "peer wheelctl")
for round in $(seq "$ROUNDS"); do
  n=${#runs[@]}
  for i in $(seq 0 $((n - 1))); do
    # Rotate by one pair per round; within a pair, who goes first alternates.
    j=$(((i + 2 * (round - 1)) % n))
    read -r pair client <<<"${runs[$j]}"
    if [ $((round % 2)) -eq 0 ]; then
      [ "$client" = reference ] && client=wheelctl || client=reference
    fi
    run "$round" "$pair" "$client"
  done
done

/usr/bin/python3 - "$out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta = rows[0]
rows = [r for r in rows[1:] if "pair" in r]
goals = {"native": ("rpc_bench client (native)", 0.9), "grpc": ("rpc_bench client --protocol grpc", 0.9),
         "peer": ("grpc_echo client (gRPC C++)", 3.0)}
print("# wheelctl bench vs the reference clients (C = %s, %s-byte payload, %s s runs, %s rounds)" %
      (meta["concurrency"], meta["payload_bytes"], meta["duration_s"], meta["rounds"]))
print()
print("| pair | reference client | reference calls/s | wheelctl calls/s | ratio | goal | met | client CPU ns/call ref / wheelctl | server CPU ns/call ref / wheelctl |")
print("|---|---|---|---|---|---|---|---|---|")
def med(pair, client, field):
    v = [r.get(field, -1) for r in rows if r["pair"] == pair and r["client"] == client]
    v = [x for x in v if x is not None and x >= 0]
    return "%.0f" % statistics.median(v) if v else "-"
for pair, (name, goal) in goals.items():
    ref = {r["round"]: r["calls_per_s"] for r in rows if r["pair"] == pair and r["client"] == "reference"}
    wc = {r["round"]: r["calls_per_s"] for r in rows if r["pair"] == pair and r["client"] == "wheelctl"}
    rounds = sorted(set(ref) & set(wc))
    if not rounds:
        print("| %s | %s | - | - | - | >= %.1fx | no data |" % (pair, name, goal))
        continue
    ratio = statistics.median(wc[k] / ref[k] for k in rounds if ref[k] > 0)
    print("| %s | %s | %.0f | %.0f | %.3fx | >= %.1fx | %s | %s / %s | %s / %s |" %
          (pair, name, statistics.median(ref.values()), statistics.median(wc.values()), ratio, goal,
           "yes" if ratio >= goal else "NO", med(pair, "reference", "client_cpu_ns_per_call"),
           med(pair, "wheelctl", "client_cpu_ns_per_call"), med(pair, "reference", "server_cpu_ns_per_call"),
           med(pair, "wheelctl", "server_cpu_ns_per_call")))
print()
print("CPU per call: the reference clients' over their measured window; wheelctl's over its whole process")
print("(method resolution and warm-up included), and the server's over that same time.")
errors = [r for r in rows if r.get("errors")]
if errors:
    print("\nruns with errors: %d" % len(errors))
EOF
echo "(lines: $out)"
