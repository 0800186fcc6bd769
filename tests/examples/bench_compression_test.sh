#!/usr/bin/env bash
# rpc_bench's compression flags, briefly, so they cannot rot (registered with
# CTest by tests/CMakeLists.txt as bench_compression where the benchmarks are
# built): `codec` prints one line per algorithm and level, content and size,
# each round trip checked; an echo client with --compression zstd --content
# json compresses (ratio > 1) without errors, and so does one through the
# in-process link proxy (--via-proxy-kbps); bad values are usage errors.
#
#   bench_compression_test.sh PATH/TO/rpc_bench
set -euo pipefail

bench=${1:?usage: bench_compression_test.sh RPC_BENCH}
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# check_lines FILE COUNT PYTHON_CONDITION: FILE has COUNT JSON lines, each
# satisfying the condition on `d` (the line's object).
check_lines() {
  python3 - "$@" <<'PY'
import json, sys
path, count, cond = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = [l for l in open(path) if l.strip()]
if len(lines) != count:
    sys.exit(f"{len(lines)} lines, expected {count}")
for l in lines:
    d = json.loads(l)
    if not eval(cond, {}, {"d": d}):
        sys.exit(f"line fails `{cond}`: {l.strip()}")
PY
}

# codec: the default list of 8 algorithms and levels, json and proto, 2 sizes.
if timeout 120 "$bench" codec --iterations 2 >"$tmp/codec.jsonl" 2>"$tmp/codec.err"; then
  check_lines "$tmp/codec.jsonl" 32 \
    'd["workload"] == "codec" and d["check"] == "ok" and d["ratio"] > 1 and d["compress_mb_per_s"] > 0' ||
    fail "codec lines"
  grep -q '"compression":"deflate:6","algorithm":"deflate","level":6,"content":"proto","payload_bytes":65536' \
    "$tmp/codec.jsonl" || fail "codec: no deflate:6 proto 64 KiB line"
else
  fail "codec exited non-zero: $(cat "$tmp/codec.err")"
fi
timeout 60 "$bench" codec --compression lz4,zstd:-1 --compression gzip:9 --content random,zeros --payload 1000 \
  --duration 0.01 >"$tmp/codec2.jsonl" || fail "codec with lists exited non-zero"
check_lines "$tmp/codec2.jsonl" 6 'd["check"] == "ok" and d["payload_bytes"] == 1000' || fail "codec with lists"

# The echo with compression, direct and through the link proxy.
"$bench" server --port 0 --port-file "$tmp/port" --lifetime 60 &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "FAIL: the server did not start" >&2; exit 1; }
port=$(cat "$tmp/port")
client() { timeout 60 "$bench" client --port "$port" --concurrency 2 --warmup 0.1 --duration 0.3 "$@"; }
if client --compression zstd --content json --payload 4096 >"$tmp/echo.jsonl"; then
  check_lines "$tmp/echo.jsonl" 1 \
    'd["compression"] == "zstd" and d["content"] == "json" and d["errors"] == 0 and d["calls"] > 0 and d["ratio"] > 1.5 and d["link_kbps"] == 0' ||
    fail "echo --compression zstd --content json"
else
  fail "echo --compression zstd --content json exited non-zero"
fi
if client --compression lz4:1 --content proto --payload 65536 --via-proxy-kbps 20000 >"$tmp/link.jsonl"; then
  check_lines "$tmp/link.jsonl" 1 \
    'd["compression"] == "lz4:1" and d["link_kbps"] == 20000 and d["errors"] == 0 and d["ratio"] > 1' ||
    fail "echo through the link proxy"
else
  fail "echo through the link proxy exited non-zero"
fi
# The default stays what it was: 'x' bytes, nothing compressed.
if client >"$tmp/plain.jsonl"; then
  check_lines "$tmp/plain.jsonl" 1 'd["compression"] == "identity" and d["content"] == "fill" and d["ratio"] == 1' ||
    fail "echo without the new flags"
else
  fail "echo without the new flags exited non-zero"
fi

set +e
for bad in "codec --compression brotli" "codec --content xml" "codec --payload 0" \
  "client --port $port --compression zstd:x" "client --port $port --content xml" "server --compression nope"; do
  # shellcheck disable=SC2086  # the words are the arguments
  timeout 30 "$bench" $bad >/dev/null 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "rpc_bench $bad: exit $rc, expected 2"
done
set -e

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
