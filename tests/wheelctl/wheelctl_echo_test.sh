#!/usr/bin/env bash
# wheelctl's command line and exit statuses, and `health` against a real
# echo_server on both wires: --help everywhere, usage errors (exit 2), an
# unknown host and a refused connection (exit 3, quickly), Check of the
# server (SERVING, 0) and of an unknown service (4), the server taken
# offline through its admin port (NOT_SERVING, 4) and back, seen by
# `health --watch`, which SIGTERM ends with the last status's exit code.
#
#   wheelctl_echo_test.sh WHEELCTL ECHO_SERVER CLI_LIB
wheelctl=${1:?usage: wheelctl_echo_test.sh WHEELCTL ECHO_SERVER CLI_LIB}
server_bin=${2:?}
# shellcheck source=/dev/null
. "${3:?}"

# --help: the top level lists every verb and the exit statuses; every verb has its own.
run 30 "$wheelctl" --help
[ "$rc" = 0 ] || fail "--help: exit $rc"
for word in list describe call health registry bench "Exit status" "5  unknown service"; do
  grep -q -- "$word" "$tmp/run.out" || fail "--help does not mention '$word'"
done
for verb in list describe call health registry bench; do
  run 30 "$wheelctl" "$verb" --help
  [ "$rc" = 0 ] || fail "$verb --help: exit $rc"
  grep -q "^usage: wheelctl $verb" "$tmp/run.out" || fail "$verb --help: $(head -n 2 "$tmp/run.out")"
  grep -q "Exit status" "$tmp/run.out" || fail "$verb --help has no exit statuses"
done

# Usage errors: one line, exit 2.
run 30 "$wheelctl"
[ "$rc" = 2 ] || fail "no verb: exit $rc"
run 30 "$wheelctl" frobnicate
[ "$rc" = 2 ] || fail "unknown verb: exit $rc"
run 30 "$wheelctl" call 127.0.0.1:1 Greeter '{}'
[ "$rc" = 2 ] || fail "a method without a service: exit $rc"
[ "$(cat "$tmp/run.err")" = "wheelctl call: expected METHOD as /pkg.Service/Method, pkg.Service/Method or \
pkg.Service.Method, got 'Greeter' (see wheelctl call --help)" ] || fail "a method without a service: $(cat "$tmp/run.err")"
[ -s "$tmp/run.out" ] && fail "a usage error wrote on stdout"
run 30 "$wheelctl" health localhost
[ "$rc" = 2 ] || fail "no port: exit $rc"
run 30 "$wheelctl" health 127.0.0.1:80 --protocol http2
[ "$rc" = 2 ] || fail "bad --protocol: exit $rc"
grep -q "protocol: expected grpc or native" "$tmp/run.err" || fail "bad --protocol: $(cat "$tmp/run.err")"
run 30 "$wheelctl" health 127.0.0.1:80 --tls-cert x.pem
[ "$rc" = 2 ] || fail "--tls-cert alone: exit $rc"
run 30 "$wheelctl" list 127.0.0.1:80 --proto "$tmp/none.proto"
[ "$rc" = 2 ] || fail "missing --proto file: exit $rc: $(cat "$tmp/run.err")"
run 30 "$wheelctl" health 127.0.0.1:80 --no-such-flag
[ "$rc" = 2 ] || fail "unknown flag: exit $rc"

# Nothing there: exit 3, well within the timeout.
start=$(date +%s)
run 30 "$wheelctl" health no-such-host.invalid:50051
[ "$rc" = 3 ] || fail "unknown host: exit $rc: $(cat "$tmp/run.err")"
grep -q "cannot resolve 'no-such-host.invalid'" "$tmp/run.err" || fail "unknown host: $(cat "$tmp/run.err")"
run 30 "$wheelctl" health 127.0.0.1:1 --timeout-ms 20000
[ "$rc" = 3 ] || fail "refused: exit $rc: $(cat "$tmp/run.err")"
grep -q "^UNAVAILABLE: " "$tmp/run.err" || fail "refused: $(cat "$tmp/run.err")"
run 30 "$wheelctl" list 127.0.0.1:1
[ "$rc" = 3 ] || fail "list, refused: exit $rc: $(cat "$tmp/run.err")"
[ $(($(date +%s) - start)) -lt 15 ] || fail "refused connections took $(($(date +%s) - start)) s, not at once"

start_server srv "$server_bin" --port 0 --admin-port 0
admin=$(server_line srv '^admin on ' | sed 's/^admin on //')
[ -n "$admin" ] || fail "echo_server printed no admin address"
post() {  # PATH
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b"", method="POST"), timeout=10).read()' "$admin$1"
}

for protocol in grpc native; do
  run 60 "$wheelctl" health "$srv_addr" --protocol "$protocol"
  [ "$rc" = 0 ] || fail "$protocol health: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = SERVING ] || fail "$protocol health: $(cat "$tmp/run.out")"
  run 60 "$wheelctl" health "$srv_addr" no.such.Service --protocol "$protocol"
  [ "$rc" = 4 ] || fail "$protocol health of an unknown service: exit $rc: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
done

# Its reflection lists the services echo_server has descriptors for (echo's
# own methods are untyped); without reflection, list says to give --proto.
for protocol in grpc native; do
  run 60 "$wheelctl" list "$srv_addr" --protocol "$protocol"
  [ "$rc" = 0 ] || fail "$protocol list: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = $'grpc.health.v1.Health\ngrpc.reflection.v1.ServerReflection\ngrpc.reflection.v1alpha.ServerReflection' ] ||
    fail "$protocol list: $(cat "$tmp/run.out")"
  run 60 "$wheelctl" describe "$srv_addr" grpc.health.v1.Health.Check --protocol "$protocol"
  [ "$(cat "$tmp/run.out")" = $'grpc.health.v1.Health.Check is a method:\nrpc Check ( .grpc.health.v1.HealthCheckRequest ) returns ( .grpc.health.v1.HealthCheckResponse );' ] ||
    fail "$protocol describe a method: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
  run 60 "$wheelctl" call "$srv_addr" grpc.health.v1.Health/Check '{"service": ""}' --protocol "$protocol"
  [ "$(cat "$tmp/run.out")" = '{"status":"SERVING"}' ] || fail "$protocol call Check: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
  run 60 "$wheelctl" describe "$srv_addr" no.Such --protocol "$protocol"
  [ "$rc" = 5 ] || fail "$protocol describe an unknown symbol: exit $rc"
  grep -q "symbol 'no.Such' not found in the server's reflection" "$tmp/run.err" ||
    fail "$protocol describe an unknown symbol: $(cat "$tmp/run.err")"
done
start_server bare "$server_bin" --port 0 --no-reflection
for protocol in grpc native; do
  run 60 "$wheelctl" list "$bare_addr" --protocol "$protocol"
  [ "$rc" = 5 ] || fail "$protocol list without reflection: exit $rc: $(cat "$tmp/run.err")"
  grep -q "does not serve server reflection .*UNIMPLEMENTED.*--proto FILE" "$tmp/run.err" ||
    fail "$protocol list without reflection: $(cat "$tmp/run.err")"
done
stop_server bare

# --watch follows the changes; SIGTERM ends it with the last status's code.
"$wheelctl" health "$srv_addr" --watch >"$tmp/watch.out" 2>"$tmp/watch.err" &
watch_pid=$!
started_pids+=("$watch_pid")
wait_for() {  # FILE REGEX
  local i
  for i in $(seq 600); do
    grep -Eq -- "$2" "$1" && return 0
    sleep 0.1
  done
  return 1
}
wait_for "$tmp/watch.out" 'Z SERVING$' || fail "--watch: no SERVING line: $(cat "$tmp/watch.out" "$tmp/watch.err")"
post /offline
wait_for "$tmp/watch.out" 'Z NOT_SERVING$' || fail "--watch: no NOT_SERVING line: $(cat "$tmp/watch.out" "$tmp/watch.err")"
run 60 "$wheelctl" health "$srv_addr"
[ "$rc" = 4 ] || fail "offline: exit $rc, expected 4"
[ "$(cat "$tmp/run.out")" = NOT_SERVING ] || fail "offline: $(cat "$tmp/run.out")"
kill -TERM "$watch_pid"
set +e
wait "$watch_pid"
watch_rc=$?
set -e
[ "$watch_rc" = 4 ] || fail "--watch ended by SIGTERM after NOT_SERVING: exit $watch_rc"
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z (SERVING|NOT_SERVING)$' "$tmp/watch.out" ||
  fail "--watch lines: $(cat "$tmp/watch.out")"
post /online
run 60 "$wheelctl" health "$srv_addr" --protocol native
[ "$rc" = 0 ] || fail "online again: exit $rc"

stop_server srv
finish wheelctl_echo
