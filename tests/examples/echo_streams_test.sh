#!/usr/bin/env bash
# End-to-end test of the streaming methods of echo_server (count, sum, chat)
# driven by echo_client --method count|sum|chat (registered with CTest by
# tests/examples/CMakeLists.txt): the JSON summary's fields (streams,
# streams_ok, messages_sent, messages_received, max_gap_ms, errors, lost,
# completed_twice), the text summary, a message-idle timeout ending streams
# with a clear error and a failing exit status, a client's SIGINT cancelling
# its streams, and a server's graceful shutdown ending long streams with
# UNAVAILABLE after its drain timeout and exiting promptly (its count
# handlers stop with their streams, whatever their interval). Uses only bash,
# grep, sed, awk and coreutils. Every wait is bounded; the script kills only
# the processes it started, by their pids, and leaves none behind.
#
#   echo_streams_test.sh PATH/TO/echo_server PATH/TO/echo_client
set -euo pipefail

server_bin=${1:?usage: echo_streams_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?usage: echo_streams_test.sh ECHO_SERVER ECHO_CLIENT}

tmp=$(mktemp -d)
server_pid=""
client_pid=""
cleanup() {
  local pid
  for pid in $server_pid $client_pid; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that the EXIT trap runs

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# A top-level numeric field of a one-line JSON object (the "errors" and
# "error_examples" objects, whose keys and texts may repeat names, removed first).
field() {  # LINE NAME
  sed -e 's/"error_examples":{.*}//' -e 's/"errors":{[^}]*}//' \
      -e "s/.*\"$2\":\\(-\\{0,1\\}[0-9.][0-9.]*\\).*/\\1/p" -n <<<"$1"
}
expect_field() {  # LINE NAME VALUE
  local v
  v=$(field "$1" "$2")
  [ "$v" = "$3" ] || fail "expected \"$2\":$3, got '${v}' in: $1"
}
# Milliseconds since the epoch.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Starts echo_server with ARGS on a free port: its pid in `server_pid`, its
# address in `addr`, its output in $tmp/server.out and server.err (both
# created before it starts, so that reading them cannot race its redirection).
start_server() {  # ARGS...
  : >"$tmp/server.out"
  : >"$tmp/server.err"
  "$server_bin" --port 0 "$@" >"$tmp/server.out" 2>"$tmp/server.err" &
  server_pid=$!
  local line=""
  for _ in $(seq 300); do
    line=$(head -n 1 "$tmp/server.out" 2>/dev/null || true)
    [ -n "$line" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  case $line in
    "listening on 127.0.0.1:"*) addr=${line#listening on } ;;
    *) echo "FAIL: echo_server did not start: '$line' $(cat "$tmp/server.err")" >&2; exit 1 ;;
  esac
}
# Waits (at most 30 s) for the server to exit; its status in `server_rc`.
wait_server() {
  local i
  for i in $(seq 300); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    fail "echo_server still running 30 s after SIGTERM: $(cat "$tmp/server.err")"
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  set +e
  wait "$server_pid"
  server_rc=$?
  set -e
  server_pid=""
}

# Starts echo_client against the server with --json and ARGS (its pid in
# `client_pid`); finish_client waits for it: its last line in `out`, its
# status in `rc`. A client still running after 60 s is killed (by its pid)
# and fails the test.
start_client() {  # ARGS...
  : >"$tmp/client.out"
  : >"$tmp/client.err"
  "$client_bin" --server "$addr" --json "$@" >"$tmp/client.out" 2>"$tmp/client.err" &
  client_pid=$!
}
finish_client() {
  local i
  for i in $(seq 600); do
    kill -0 "$client_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$client_pid" 2>/dev/null; then
    kill -KILL "$client_pid" 2>/dev/null || true
    fail "echo_client still running after 60 s"
  fi
  set +e
  wait "$client_pid"
  rc=$?
  set -e
  client_pid=""
  out=$(tail -n 1 "$tmp/client.out")
}
# Waits (at most 30 s) until the client's progress lines (--report-interval-ms)
# show N streams open.
wait_open() {  # N
  local i
  for i in $(seq 300); do
    grep -q "\"open\":$1}" "$tmp/client.out" && return 0
    kill -0 "$client_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "echo_client never had $1 streams open: $(cat "$tmp/client.out" "$tmp/client.err")"
}
run() {  # ARGS...
  start_client "$@"
  finish_client
}

start_server

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
expect_field "$out" streams 3
expect_field "$out" streams_ok 3
expect_field "$out" messages_sent 300
expect_field "$out" messages_received 3
expect_field "$out" lost 0
expect_field "$out" completed_twice 0
grep -q '"errors":{}' <<<"$out" || fail "sum: errors: $out"

# The default: one stream of 10.
run --method sum
[ "$rc" = 0 ] || fail "sum (defaults): exit status $rc: $out"
expect_field "$out" streams 1
expect_field "$out" streams_ok 1
expect_field "$out" messages_sent 10

# Bidirectional: 8 streams, 50 echoes each (each echo checked by the client).
run --method chat --count 50 --streams 8
[ "$rc" = 0 ] || fail "chat: exit status $rc: $out"
expect_field "$out" streams 8
expect_field "$out" streams_ok 8
expect_field "$out" messages_sent 400
expect_field "$out" messages_received 400
expect_field "$out" lost 0
expect_field "$out" completed_twice 0
grep -q '"errors":{}' <<<"$out" || fail "chat: errors: $out"

# Streams opened again and again for a second, the client pausing 1 ms between writes.
run --method chat --count 5 --interval-ms 1 --streams 4 --duration-s 1
[ "$rc" = 0 ] || fail "chat --duration-s: exit status $rc: $out"
n=$(field "$out" streams)
ok=$(field "$out" streams_ok)
[ "$n" = "$ok" ] && [ "$n" -gt 4 ] || fail "chat --duration-s: $out"
expect_field "$out" messages_sent $((n * 5))
expect_field "$out" messages_received $((n * 5))
expect_field "$out" lost 0
expect_field "$out" completed_twice 0

# The text summary says the same in words.
: >"$tmp/text.out"
"$client_bin" --server "$addr" --method count --count 3 --streams 2 >"$tmp/text.out" 2>&1 ||
  fail "count (text): exit status $?: $(cat "$tmp/text.out")"
grep -q "^2 count streams in [0-9.]* s: 2 ok, 0 failed, 0 lost, 0 completed twice$" "$tmp/text.out" ||
  fail "count (text): no summary line: $(cat "$tmp/text.out")"
grep -q "^  messages: 2 sent, 6 received; " "$tmp/text.out" || fail "count (text): $(cat "$tmp/text.out")"

# The message-idle timeout: the server's messages come 100 ms apart, the
# client waits 30 ms at most: the stream ends with message_timeout.
run --method count --count 1000 --interval-ms 100 --message-timeout-ms 30
[ "$rc" != 0 ] || fail "message timeout: expected a non-zero exit status: $out"
grep -q '"errors":{"message_timeout":1}' <<<"$out" || fail "message timeout: $out"
grep -q '"error_examples":{"message_timeout":"stream .count. to [0-9.:]*: message-idle timeout after [0-9]* ms' \
  <<<"$out" || fail "message timeout: no example message: $out"
expect_field "$out" streams 1
expect_field "$out" streams_ok 0
expect_field "$out" lost 0
expect_field "$out" completed_twice 0

# The stream deadline, 4 streams: each ends with timeout (also when the
# server's end, its side of the same deadline, arrives before the client's
# own timer fires: they are within a tick).
run --method count --count 1000 --interval-ms 20 --streams 4 --stream-timeout-ms 100
[ "$rc" != 0 ] || fail "stream timeout: expected a non-zero exit status: $out"
grep -q '"errors":{"timeout":4}' <<<"$out" || fail "stream timeout: expected 4 streams ended by their deadline: $out"
expect_field "$out" lost 0

# A client's SIGINT cancels its open streams (each counted as "aborted"),
# however long the server's interval; the server sees them cancelled.
start_client --method count --count 1000 --interval-ms 60000 --streams 3 --report-interval-ms 100
wait_open 3
kill -INT "$client_pid"
finish_client
[ "$rc" = 1 ] || fail "SIGINT: expected exit status 1, got $rc: $out"
grep -q '"errors":{"aborted":3}' <<<"$out" || fail "SIGINT: $out"
expect_field "$out" lost 0

# A graceful shutdown with long streams open: they run for the drain timeout,
# then end with UNAVAILABLE, and the server exits at once (its count
# handlers, waiting a minute between messages, stop with their streams).
kill -TERM "$server_pid"
wait_server
# On the server's side: the message-idle timeout's stream and the three of
# the SIGINT were cancelled (the client's timer cancels it); the four past
# their deadline ended by the server's own deadline or by the client's RESET,
# whichever came first.
ends=$(sed -n 's/.* cancelled=\([0-9]*\) deadline=\([0-9]*\) .*/\1 \2/p' "$tmp/server.err")
[ -n "$ends" ] && [ $((${ends% *} + ${ends#* })) = 8 ] && [ "${ends% *}" -ge 4 ] ||
  fail "the server did not count 4 cancelled streams and 4 past their deadline: $(cat "$tmp/server.err")"
start_server --drain-timeout-ms 300
start_client --method count --count 1000 --interval-ms 60000 --streams 3 --report-interval-ms 100
wait_open 3
t0=$(now_ms)
kill -TERM "$server_pid"
wait_server
took=$(($(now_ms) - t0))
[ "$server_rc" = 0 ] || fail "shutdown: echo_server exit status $server_rc: $(cat "$tmp/server.err")"
[ "$took" -lt 3000 ] || fail "shutdown: echo_server took $took ms to exit with a 300 ms drain timeout"
grep -q "did not drain" "$tmp/server.err" && fail "shutdown: $(cat "$tmp/server.err")"
grep -q "shutdown=3$" "$tmp/server.err" || fail "shutdown: the server did not end 3 streams: $(cat "$tmp/server.err")"
finish_client
[ "$rc" = 1 ] || fail "shutdown: expected exit status 1, got $rc: $out"
grep -q '"errors":{"unavailable":3}' <<<"$out" || fail "shutdown: $out"
grep -q "shutdown's grace" <<<"$out" || fail "shutdown: the error does not say what happened: $out"
expect_field "$out" lost 0

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "echo streams: all checks passed"
