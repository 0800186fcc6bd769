#!/usr/bin/env bash
# echo_client --compression ALG[:LEVEL] (registered with CTest as
# echo_compression): with each algorithm, and with levels, calls of 4 KiB
# payloads succeed (each reply checked by the client) and echo_server's
# /metrics count every request and reply as compressed; `none` and payloads
# under the 1 KiB threshold go uncompressed; gzip and deflate on the gRPC
# wire too (the requests: whether a gRPC server compresses its replies is
# the wire's business, docs/grpc.md);
# streams run with it; bad values, and zstd or lz4 on the gRPC wire, are
# usage errors; --help documents the flag.
#
#   echo_compression_test.sh ECHO_SERVER ECHO_CLIENT
. "$(dirname "$0")/cli_lib.sh"

server_bin=${1:?usage: echo_compression_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?}

start_server srv "$server_bin" --port 0 --admin-port 0
admin=$(server_line srv '^admin on http://127\.0\.0\.1:[0-9]+$') || {
  echo "FAIL: echo_server printed no admin line: $(cat "$tmp/srv.out" "$tmp/srv.err")" >&2
  exit 1
}
metrics_url="${admin#admin on }/metrics"

# The echo requests the server received compressed, and the replies it sent so.
compressed() {  # DIRECTION
  local page
  page=$(http_get "$metrics_url") || { fail "GET $metrics_url failed"; return; }
  metric "$page" wheelrpc_server_payloads_compressed_total "method=\"echo\",direction=\"$1\""
}

# N calls of B-byte payloads with ARGS: all succeed, and the server counts
# EXPECTED more requests received compressed, and as many replies sent so
# (or REPLIES, when given as EXPECTED/REPLIES; '*': not checked).
check_calls() {  # WHAT N BYTES EXPECTED[/REPLIES] ARGS...
  local what=$1 n=$2 bytes=$3 expected=${4%/*} replies=${4#*/} before_in before_out
  shift 4
  before_in=$(compressed received)
  before_out=$(compressed sent)
  run 60 "$client_bin" --server "$srv_addr" --calls "$n" --concurrency 2 --payload-bytes "$bytes" --fail-on-error --json "$@"
  [ "$rc" = 0 ] || fail "$what: exit status $rc: $last $(cat "$tmp/run.err")"
  expect_json "$what" "$last" 'd["ok"]' "$n"
  expect_json "$what" "$last" 'd["errors"]' '{}'
  local in=$(($(compressed received) - before_in)) out=$(($(compressed sent) - before_out))
  [ "$in" = "$expected" ] || fail "$what: the server received $in requests compressed, expected $expected"
  [ "$replies" = "*" ] || [ "$out" = "$replies" ] || fail "$what: the server sent $out replies compressed, expected $replies"
}

for alg in zstd lz4 gzip deflate zstd:19 lz4:9 gzip:1 deflate:9 zstd:-5; do
  check_calls "--compression $alg" 10 4096 10 --compression "$alg"
done
check_calls "--compression=gzip" 10 4096 10 --compression=gzip
check_calls "--compression none" 10 4096 0 --compression none
check_calls "--compression identity" 10 4096 0 --compression identity
check_calls "no --compression" 10 4096 0
check_calls "zstd under the threshold" 10 64 0 --compression zstd
check_calls "gzip on the gRPC wire" 10 4096 "10/*" --compression gzip --protocol grpc
check_calls "deflate on the gRPC wire" 10 4096 "10/*" --compression deflate --protocol grpc

# Streams take it too (their messages are short: they go as they are).
run 60 "$client_bin" --server "$srv_addr" --method chat --streams 2 --count 20 --compression zstd --json
[ "$rc" = 0 ] || fail "chat with --compression zstd: exit status $rc: $last $(cat "$tmp/run.err")"
expect_json "chat with --compression zstd" "$last" 'd["streams_ok"]' 2

# Usage errors: one line naming the flag, exit status 2.
for bad in brotli Zstd zstd: zstd:x ""; do
  run 10 "$client_bin" --server "$srv_addr" --calls 1 --compression "$bad"
  if [ -z "$bad" ]; then
    expect_usage_error "--compression ''" "echo_client: --compression: expected none, zstd, lz4, gzip or deflate.*"
  else
    expect_usage_error "--compression $bad" \
      "echo_client: --compression: expected none, zstd, lz4, gzip or deflate, optionally with :LEVEL \(e\.g\. zstd:9\), got '$bad'"
  fi
done
for alg in zstd lz4:3; do
  run 10 "$client_bin" --server "$srv_addr" --calls 1 --protocol grpc --compression "$alg"
  expect_usage_error "--protocol grpc --compression $alg" \
    "echo_client: --compression ${alg%%:*}: the gRPC wire \(--protocol grpc\) carries gzip and deflate only"
done
run 10 "$client_bin" --help
grep -q -- "--compression none|zstd|lz4|gzip|deflate\[:LEVEL\]" "$tmp/run.out" ||
  fail "echo_client --help does not document --compression"

stop_server srv
[ "$rc" = 0 ] || fail "echo_server: exit status $rc after SIGTERM"
finish echo_compression
