#!/usr/bin/env bash
# echo_client's stream-only flags (registered with CTest as
# echo_stream_only_flags): --streams, --count, --interval-ms,
# --stream-timeout-ms, --message-timeout-ms and --stall-timeout-ms with a
# method that makes calls (echo, the default, or sleep) are a usage error
# naming the flag, wherever --method stands, instead of being silently
# ignored; with a streaming method they are taken as before (and --calls with
# one stays an error).
#
#   echo_stream_flags_test.sh ECHO_SERVER ECHO_CLIENT
. "$(dirname "$0")/cli_lib.sh"

server_bin=${1:?usage: echo_stream_flags_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?}

start_server srv "$server_bin" --port 0

for flag in --streams --count --interval-ms --stream-timeout-ms --message-timeout-ms --stall-timeout-ms; do
  expected="echo_client: $flag is for streams \(--method count, sum or chat\), not for calls"
  run 30 "$client_bin" --server "$srv_addr" --calls 1 "$flag" 5
  expect_usage_error "$flag 5, method echo by default" "$expected \(--method echo\)"
  run 30 "$client_bin" --server "$srv_addr" "$flag=5" --duration-s 1 --method sleep
  expect_usage_error "$flag=5 before --method sleep" "$expected \(--method sleep\)"
  run 30 "$client_bin" --server "$srv_addr" --method echo --calls 1 "$flag" 5
  expect_usage_error "--method echo $flag 5" "$expected \(--method echo\)"
done
# The first of several is named.
run 30 "$client_bin" --server "$srv_addr" --calls 1 --message-timeout-ms 5 --stream-timeout-ms 5
expect_usage_error "two stream flags" "echo_client: --message-timeout-ms is for streams .*"
# --calls with a stream method: still an error.
run 30 "$client_bin" --server "$srv_addr" --method chat --calls 1
expect_usage_error "--method chat --calls 1" "echo_client: --calls is for calls; streams take --streams and --count"

# With a streaming method the same flags are taken, wherever --method stands.
run 60 "$client_bin" --server "$srv_addr" --streams 2 --count 4 --interval-ms 1 --stream-timeout-ms 20000 \
  --message-timeout-ms 10000 --stall-timeout-ms 10000 --method chat --json
[ "$rc" = 0 ] || fail "chat with every stream flag: exit status $rc: $last $(cat "$tmp/run.err")"
expect_json "chat with every stream flag" "$last" 'd["streams_ok"]' 2
expect_json "chat with every stream flag" "$last" 'd["messages_received"]' 8
# ... and calls without them run as before.
run 60 "$client_bin" --server "$srv_addr" --calls 5 --json --fail-on-error
[ "$rc" = 0 ] || fail "calls: exit status $rc: $last"

stop_server srv
[ "$rc" = 0 ] || fail "echo_server: exit status $rc after SIGTERM"
finish echo_stream_only_flags
