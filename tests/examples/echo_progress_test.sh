#!/usr/bin/env bash
# echo_client's progress lines during long streams (registered with CTest as
# echo_stream_progress): the text lines count the messages as they go, not
# only once a stream ended (they used to say "0 messages sent, 0 received"
# for a stream's whole life), in the format they always had; the JSON
# progress lines keep their exact shape; and the summaries' totals stay
# exact (each message counted once).
#
#   echo_progress_test.sh ECHO_SERVER ECHO_CLIENT
. "$(dirname "$0")/cli_lib.sh"

server_bin=${1:?usage: echo_progress_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?}

start_server srv "$server_bin" --port 0

text_line='^\[ *[0-9]+\.[0-9] s\] ([0-9]+) streams: ([0-9]+) ok, ([0-9]+) failed, ([0-9]+) open; ([0-9]+) messages sent, ([0-9]+) received$'

# One stream of 20 messages 100 ms apart (2 s), a progress line every 150 ms:
# while it is open, the lines show its messages so far, growing, in the old format.
check_text() {  # METHOD SENT_FIELD(5 sent, 6 received) FINAL
  local method=$1 col=$2 final=$3
  run 60 "$client_bin" --server "$srv_addr" --method "$method" --count 20 --interval-ms 100 --report-interval-ms 150
  [ "$rc" = 0 ] || fail "$method: exit status $rc: $(cat "$tmp/run.out" "$tmp/run.err")"
  grep '^\[' "$tmp/run.out" >"$tmp/progress" || true
  [ -s "$tmp/progress" ] || fail "$method: no progress lines: $(cat "$tmp/run.out")"
  grep -Evq "$text_line" "$tmp/progress" && fail "$method: a progress line changed its format: $(cat "$tmp/progress")"
  # The numbers of the lines while the stream was open: non-decreasing, below
  # the total, and not all 0.
  sed -En "s/$text_line/\\4 \\$col/p" "$tmp/progress" | awk -v final="$final" -v what="$method" '
    $1 == 1 { open++; if ($2 < prev) bad = bad " went down"; if ($2 > 0) moving++; if ($2 > final) bad = bad " above the total"; prev = $2 }
    END {
      if (open == 0) bad = bad " no line while the stream was open"
      else if (moving == 0) bad = bad " every line while the stream was open shows 0"
      if (bad != "") { print what ":" bad; exit 1 }
    }' >"$tmp/why" || fail "$(cat "$tmp/why"): $(cat "$tmp/progress")"
  grep -q "^  messages: .* sent, .* received; " "$tmp/run.out" || fail "$method: no messages line: $(cat "$tmp/run.out")"
}
check_text count 6 20  # the server's messages: "received" grows
check_text sum 5 20    # the client's writes: "sent" grows
check_text chat 5 20   # both
check_text chat 6 20
grep -q "^  messages: 20 sent, 20 received; " "$tmp/run.out" || fail "chat: the summary's totals: $(cat "$tmp/run.out")"

# JSON: the progress lines keep exactly their shape, the summary its totals.
run 60 "$client_bin" --server "$srv_addr" --method count --count 10 --interval-ms 50 --streams 3 \
  --report-interval-ms 100 --json
[ "$rc" = 0 ] || fail "count --json: exit status $rc: $(cat "$tmp/run.out" "$tmp/run.err")"
head -n -1 "$tmp/run.out" >"$tmp/progress"
[ -s "$tmp/progress" ] || fail "count --json: no progress lines: $(cat "$tmp/run.out")"
grep -Evq '^\{"t_ms":[0-9]+,"streams":[0-9]+,"streams_ok":[0-9]+,"errors":\{[^}]*\},"open":[0-9]+\}$' "$tmp/progress" &&
  fail "count --json: a progress line changed its shape: $(cat "$tmp/progress")"
expect_json "count --json" "$last" 'd["messages_received"]' 30
expect_json "count --json" "$last" 'd["messages_sent"]' 3
expect_json "count --json" "$last" 'd["streams_ok"]' 3

# Streams opened again and again: each message still counted once.
run 60 "$client_bin" --server "$srv_addr" --method chat --count 5 --streams 4 --duration-s 0.5 --json
[ "$rc" = 0 ] || fail "chat --duration-s: exit status $rc: $last"
n=$(json "$last" 'd["streams"]') || n=0
expect_json "chat --duration-s" "$last" 'd["messages_sent"]' $((n * 5))
expect_json "chat --duration-s" "$last" 'd["messages_received"]' $((n * 5))

stop_server srv
[ "$rc" = 0 ] || fail "echo_server: exit status $rc after SIGTERM"
finish echo_stream_progress
