#!/usr/bin/env bash
# A rolling restart under load loses no call: three echo_servers (port 0,
# --shutdown-grace-ms), `wheelctl bench` on all three with --health-check
# (calls never retried), and while it runs each server in turn gets SIGTERM,
# exits, and starts again on the same port; the next one only once the
# bench is connected to it again. Then the bench is stopped (SIGINT) and its
# JSON line must show calls and no error. Every restarted server must have
# served calls but the last.
#
#   wheelctl_rolling_restart_test.sh WHEELCTL ECHO_SERVER CLI_LIB
#
# To see what the pieces are for, take one away (the test then usually
# fails with UNAVAILABLE calls: refused by a server that is draining):
#   RR_HEALTH_CHECK=0   bench without --health-check
#   RR_GRACE_MS=0       echo_server without --shutdown-grace-ms
#   RR_PROTOCOL=native  the native wire instead of gRPC's (ctest runs both)
wheelctl=${1:?usage: wheelctl_rolling_restart_test.sh WHEELCTL ECHO_SERVER CLI_LIB}
server_bin=${2:?}
# shellcheck source=/dev/null
. "${3:?}"

health_check=${RR_HEALTH_CHECK:-1}
grace_ms=${RR_GRACE_MS:-2000}
protocol=${RR_PROTOCOL:-grpc}
command -v ss >/dev/null || { echo "SKIP: no ss(8) to see the bench's connections"; exit 77; }

# Waits (at most SECONDS) until COMMAND... succeeds; status 1 if it never did.
wait_until() {  # SECONDS COMMAND...
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
# An established TCP connection to 127.0.0.1:PORT (only the bench makes one).
connected_to() {  # PORT
  [ -n "$(ss -Htn state established "( dst 127.0.0.1:$1 )" 2>/dev/null)" ]
}
alive() { kill -0 "$1" 2>/dev/null; }
exited() { ! kill -0 "$1" 2>/dev/null; }
printed_or_exited() { [ -s "$1" ] || exited "$2"; }  # FILE PID
# Takes PID, reaped, off the list the cleanup kills: its number may be reused.
forget() {  # PID
  local keep=() p
  for p in "${started_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  started_pids=("${keep[@]}")
}

# Starts echo_server NAME on PORT (0: any) with the grace; the port the
# kernel gave it in NAME_port. A bind that fails (the port was taken meanwhile,
# e.g. by another test's connection) is tried again, for at most 30 s.
start_echo() {  # NAME PORT
  local name=$1 port=$2 deadline=$(($(date +%s) + 30)) line=""
  local args=(--port "$port" --drain-timeout-ms 5000)
  [ "$grace_ms" != 0 ] && args+=(--shutdown-grace-ms "$grace_ms")
  while :; do
    : >"$tmp/$name.out"
    : >"$tmp/$name.err"
    "$server_bin" "${args[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    local pid=$!
    started_pids+=("$pid")
    wait_until 60 printed_or_exited "$tmp/$name.out" "$pid" || true
    line=$(head -n 1 "$tmp/$name.out")
    case $line in
      "listening on "*)
        printf -v "${name}_pid" '%s' "$pid"
        printf -v "${name}_port" '%s' "${line##*:}"
        return 0
        ;;
    esac
    if alive "$pid"; then
      echo "FAIL: echo_server $name printed no 'listening on' line in 60 s: $(cat "$tmp/$name.err")" >&2
      exit 1
    fi
    wait "$pid" 2>/dev/null || true
    forget "$pid"
    if ! grep -q "cannot listen" "$tmp/$name.err" || [ "$(date +%s)" -ge "$deadline" ]; then
      echo "FAIL: echo_server $name did not start on port $port: '$line' $(cat "$tmp/$name.err")" >&2
      exit 1
    fi
    sleep 0.1  # the port is still taken: try again
  done
}

# Stops echo_server NAME with SIGTERM and waits for it to exit (at most 60 s);
# its exit status must be 0.
stop_echo() {  # NAME
  local pid_var="${1}_pid"
  local pid=${!pid_var}
  echo "$(date +%T.%N | cut -c1-12) SIGTERM to server $1"
  kill -TERM "$pid"
  wait_until 60 exited "$pid" || fail "echo_server $1 still runs 60 s after SIGTERM"
  local status=0
  wait "$pid" 2>/dev/null || status=$?
  forget "$pid"
  [ "$status" = 0 ] || fail "echo_server $1 exited $status: $(cat "$tmp/$1.err")"
}

# The calls echo_server NAME served, from the counters it printed at exit.
served() {  # NAME
  sed -n 's/.* requests=\([0-9]*\) .*/\1/p' "$tmp/$1.err"
}

# The new flags' usage errors: exit 2 and this one line, nothing called.
usage_error() {  # EXPECTED ARGS...
  local expected=$1
  shift
  run 30 "$wheelctl" bench "$@"
  [ "$rc" = 2 ] || fail "bench $*: exit $rc, expected 2"
  [ "$(cat "$tmp/run.err")" = "wheelctl bench: $expected (see wheelctl bench --help)" ] ||
    fail "bench $*: $(cat "$tmp/run.err")"
}
usage_error "--lb: expected round_robin, least_active or p2c, got 'fastest'" 127.0.0.1:1,127.0.0.1:2 /echo --lb fastest
usage_error "expected HOST:PORT (a host name or IP literal and a port 1..65535), got 'nowhere'" 127.0.0.1:1,nowhere /echo
usage_error "--health-service needs --health-check" 127.0.0.1:1 /echo --health-service echo
usage_error "--proto describes typed methods: /echo is called untyped" 127.0.0.1:1 /echo --proto x.proto

for i in 1 2 3; do start_echo "s$i" 0; done
targets="127.0.0.1:$s1_port,127.0.0.1:$s2_port,127.0.0.1:$s3_port"
# A call is lost when it fails; not when a loaded machine delays it (a
# scheduler's stall of a second would otherwise fail every call in flight).
bench_args=(bench "$targets" /echo hello --protocol "$protocol" --concurrency 16 --duration-s 600 --timeout-ms 5000
  --json)
[ "$health_check" = 1 ] && bench_args+=(--health-check)
echo "$(date +%T.%N | cut -c1-12) wheelctl ${bench_args[*]}"
"$wheelctl" "${bench_args[@]}" >"$tmp/bench.out" 2>"$tmp/bench.err" &
bench_pid=$!
started_pids+=("$bench_pid")

# The bench runs (its first progress line) and is connected to every server.
wait_until 60 grep -q '^\[ *[0-9.]*s\] calls' "$tmp/bench.err" ||
  fail "the bench did not start: $(cat "$tmp/bench.err")"
for i in 1 2 3; do
  port_var="s${i}_port"
  wait_until 60 connected_to "${!port_var}" || fail "the bench is not connected to server $i"
done

# The rolling restart: each in turn, the next once the bench is back on it.
for i in 1 2 3; do
  port_var="s${i}_port"
  port=${!port_var}
  stop_echo "s$i"
  mv "$tmp/s$i.err" "$tmp/s$i.first.err"
  start_echo "s$i" "$port"
  [ "$port" = "$(eval echo "\$s${i}_port")" ] || fail "server $i came back on another port"
  wait_until 60 connected_to "$port" || fail "the bench did not connect to server $i again"
  echo "$(date +%T.%N | cut -c1-12) server $i restarted on port $port"
done
alive "$bench_pid" || fail "the bench ended early: $(cat "$tmp/bench.err")"

# The end: SIGINT stops the bench as at the end of its duration (it drains
# and prints its line); then the servers stop.
kill -INT "$bench_pid"
wait_until 60 exited "$bench_pid" || fail "the bench still runs 60 s after SIGINT"
bench_rc=0
wait "$bench_pid" 2>/dev/null || bench_rc=$?
forget "$bench_pid"
line=$(tail -n 1 "$tmp/bench.out")
echo "$line"
expect_json "bench" "$line" 'd["calls"] > 0' true
expect_json "bench" "$line" 'd["errors"]' 0
expect_json "bench" "$line" 'd["interrupted"]' true
if [ "$(json "$line" 'd["errors"]' || true)" != 0 ]; then
  echo "errors_by_status: $(json "$line" 'd["errors_by_status"]' || true)" >&2
  cat "$tmp/bench.err" >&2  # its progress lines (errors by second) and its first error
fi
[ "$bench_rc" = 0 ] || fail "bench: exit $bench_rc"
for i in 1 2 3; do stop_echo "s$i"; done
for i in 1 2; do
  n=$(served "s$i")
  [ "${n:-0}" -gt 0 ] || fail "restarted server $i served no call: $(cat "$tmp/s$i.err")"
done
for i in 1 2 3; do
  n=$(sed -n 's/.* requests=\([0-9]*\) .*/\1/p' "$tmp/s$i.first.err")
  [ "${n:-0}" -gt 0 ] || fail "server $i served no call before its restart"
  grep -q "NOT_SERVING; serving" "$tmp/s$i.first.err" || [ "$grace_ms" = 0 ] ||
    fail "server $i had no grace: $(cat "$tmp/s$i.first.err")"
done
finish wheelctl_rolling_restart
