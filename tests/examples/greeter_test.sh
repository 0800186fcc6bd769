#!/usr/bin/env bash
# End-to-end test of examples/greeter: each server form (coroutine, callback)
# started on port 0, the client's typed call through it, a status error, and
# SIGTERM stopping the server; every wait is bounded and no process is left.
#
#   greeter_test.sh GREETER_SERVER GREETER_CALLBACK_SERVER GREETER_CLIENT
set -euo pipefail

servers=("${1:?usage: greeter_test.sh SERVER CALLBACK_SERVER CLIENT}" "${2:?}")
client_bin=${3:?}
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

for server_bin in "${servers[@]}"; do
  name=$(basename "$server_bin")
  : >"$tmp/$name.out"  # there before the background server opens it
  "$server_bin" --port 0 >"$tmp/$name.out" 2>"$tmp/$name.err" &
  server_pid=$!
  port=""
  for _ in $(seq 1 600); do  # up to 60 s on a loaded machine
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/$name.out" || true)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    fail "$name did not print its port"
    cat "$tmp/$name.err" >&2
    continue
  fi
  out=$("$client_bin" --server "127.0.0.1:$port" --name world) || fail "$name: the client failed: $out"
  case $out in
    "Hello, world "*) ;;
    *) fail "$name: unexpected greeting: $out" ;;
  esac
  if [ "$name" = greeter_server ]; then
    # An empty name: the handler throws StatusError(invalid_argument).
    if bad=$("$client_bin" --server "127.0.0.1:$port" --name ""); then
      fail "an empty name succeeded: $bad"
    else
      case $bad in
        "INVALID_ARGUMENT: "*"'/helloworld.Greeter/SayHello'"*"name is empty") ;;
        *) fail "unexpected error line: $bad" ;;
      esac
    fi
  fi
  kill -TERM "$server_pid"
  rc=0
  wait "$server_pid" || rc=$?
  server_pid=""
  [ "$rc" -eq 0 ] || fail "$name exited $rc after SIGTERM"
done

[ "$failures" -eq 0 ] && echo "greeter: both server forms answer the typed client"
exit "$failures"
