#!/usr/bin/env bash
# End-to-end test of the streaming methods of echo_server (count, sum, chat)
# driven by echo_client --method count|sum|chat (registered with CTest by
# tests/examples/CMakeLists.txt): the JSON summary's fields (streams,
# streams_ok, messages_sent, messages_received, max_gap_ms, errors, lost,
# completed_twice), and a message-idle timeout ending streams with a clear
# error and a failing exit status. Every wait is bounded; the script kills
# only the server it started and leaves no process behind.
#
#   echo_streams_test.sh PATH/TO/echo_server PATH/TO/echo_client
set -euo pipefail

server_bin=${1:?usage: echo_streams_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?usage: echo_streams_test.sh ECHO_SERVER ECHO_CLIENT}

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# A top-level numeric field of a one-line JSON object ("errors" removed first).
field() {  # LINE NAME
  sed -e 's/"errors":{[^}]*}//' -e "s/.*\"$2\":\\(-\\{0,1\\}[0-9.][0-9.]*\\).*/\\1/p" -n <<<"$1"
}
expect_field() {  # LINE NAME VALUE
  local v
  v=$(field "$1" "$2")
  [ "$v" = "$3" ] || fail "expected \"$2\":$3, got '${v}' in: $1"
}

: >"$tmp/server.out"
"$server_bin" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
line=""
for _ in $(seq 300); do
  line=$(head -n 1 "$tmp/server.out" 2>/dev/null || true)
  [ -n "$line" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
case $line in
  "listening on 127.0.0.1:"*) ;;
  *) echo "FAIL: echo_server did not start: '$line' $(cat "$tmp/server.err")" >&2; exit 1 ;;
esac
addr=${line#listening on }

# Runs echo_client, its JSON line in `out`, its status in `rc`; bounded: a
# client still running after 60 s is killed (by its pid) and fails the test.
run() {
  : >"$tmp/client.out"
  "$client_bin" --server "$addr" --json "$@" >"$tmp/client.out" 2>"$tmp/client.err" &
  local pid=$! i
  for i in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    fail "echo_client $* still running after 60 s"
  fi
  set +e
  wait "$pid"
  rc=$?
  set -e
  out=$(tail -n 1 "$tmp/client.out")
}

# Server streaming: 4 streams of 20 messages 5 ms apart.
run --method count --count 20 --interval-ms 5 --streams 4
[ "$rc" = 0 ] || fail "count: exit status $rc: $out $(cat "$tmp/client.err")"
expect_field "$out" streams 4
expect_field "$out" streams_ok 4
expect_field "$out" messages_sent 4
expect_field "$out" messages_received 80
expect_field "$out" lost 0
expect_field "$out" completed_twice 0
gap=$(field "$out" max_gap_ms)
awk -v g="$gap" 'BEGIN { exit !(g >= 4) }' || fail "count: max_gap_ms $gap, expected at least the 5 ms interval"
grep -q '"errors":{}' <<<"$out" || fail "count: errors: $out"

# Client streaming: each stream sends 1..100, the server answers 5050 (checked by the client).
run --method sum --count 100 --streams 3
[ "$rc" = 0 ] || fail "sum: exit status $rc: $out"
expect_field "$out" streams_ok 3
expect_field "$out" messages_sent 300
expect_field "$out" messages_received 3
expect_field "$out" lost 0

# Bidirectional: 8 streams, 50 echoes each (each echo checked by the client).
run --method chat --count 50 --streams 8
[ "$rc" = 0 ] || fail "chat: exit status $rc: $out"
expect_field "$out" streams 8
expect_field "$out" streams_ok 8
expect_field "$out" messages_sent 400
expect_field "$out" messages_received 400
expect_field "$out" completed_twice 0

# A stream opened again and again for a second.
run --method chat --count 5 --streams 4 --duration-s 1
[ "$rc" = 0 ] || fail "chat --duration-s: exit status $rc: $out"
n=$(field "$out" streams)
ok=$(field "$out" streams_ok)
[ "$n" = "$ok" ] && [ "$n" -gt 4 ] || fail "chat --duration-s: $out"

# The message-idle timeout: the server's messages come 100 ms apart, the
# client waits 30 ms at most: the stream ends with message_timeout.
run --method count --count 1000 --interval-ms 100 --message-timeout-ms 30
[ "$rc" = 1 ] || fail "message timeout: expected exit status 1, got $rc: $out"
grep -q '"errors":{"message_timeout":1}' <<<"$out" || fail "message timeout: $out"
expect_field "$out" streams_ok 0
expect_field "$out" lost 0

kill -TERM "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "echo streams: all checks passed"
