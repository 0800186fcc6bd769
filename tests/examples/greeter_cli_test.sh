#!/usr/bin/env bash
# The command lines of the greeter examples (examples/greeter), parsed as
# echo_server's and echo_client's are (FlagParser): --help and -h print the
# usage on stdout and exit 0 without serving or calling anything; --version;
# an unknown flag, a stray word or a bad value is one line on stderr and exit
# status 2; --flag=value; greeter_client --server takes a host name
# (localhost:PORT greets, where it used to abort), a malformed address is a
# usage error and a name that does not resolve exits 1 with one line saying
# so; a refused call exits 1 with its status; a server that cannot listen
# says so in one line and exits 1. Nothing is left running.
#
#   greeter_cli_test.sh GREETER_SERVER GREETER_CALLBACK_SERVER GREETER_CLIENT GREETER_STREAMS
. "$(dirname "$0")/cli_lib.sh"

server_bin=${1:?usage: greeter_cli_test.sh SERVER CALLBACK_SERVER CLIENT STREAMS}
callback_bin=${2:?}
client_bin=${3:?}
streams_bin=${4:?}
programs=("$server_bin" "$callback_bin" "$client_bin" "$streams_bin")

# ---- --help, -h, --version: stdout, exit 0, nothing served or called -----------
for prog in "${programs[@]}"; do
  name=$(basename "$prog")
  for h in --help -h; do
    # A server that ignored --help would serve until the timeout (rc 124).
    run 10 "$prog" "$h"
    [ "$rc" = 0 ] || fail "$name $h: exit status $rc, expected 0"
    head -n 1 "$tmp/run.out" | grep -q "^usage: $name" || fail "$name $h: no usage on stdout: $(cat "$tmp/run.out")"
    grep -q "^listening on" "$tmp/run.out" && fail "$name $h: started a server"
    [ -s "$tmp/run.err" ] && fail "$name $h: wrote on stderr: $(cat "$tmp/run.err")"
  done
  grep -q "^Exit status: " "$tmp/run.out" || fail "$name --help does not document its exit status"
  run 10 "$prog" --version
  [ "$rc" = 0 ] || fail "$name --version: exit status $rc"
  grep -Eqx "$name \(wheelrpc\) [0-9]+\.[0-9]+\.[0-9]+" "$tmp/run.out" ||
    fail "$name --version printed: $(cat "$tmp/run.out" "$tmp/run.err")"
done
# --help wins over the other words, even bad ones: no call is made.
run 10 "$client_bin" --server 127.0.0.1:1 --help --bogus
[ "$rc" = 0 ] && head -n 1 "$tmp/run.out" | grep -q "^usage: greeter_client" ||
  fail "greeter_client --server ... --help --bogus: exit status $rc: $(cat "$tmp/run.out" "$tmp/run.err")"

# ---- usage errors: one line naming the problem, exit status 2 --------------------
for prog in "${programs[@]}"; do
  name=$(basename "$prog")
  run 10 "$prog" --bogus 1
  expect_usage_error "$name --bogus 1" "$name: unknown flag '--bogus'"
  run 10 "$prog" stray
  expect_usage_error "$name stray" "$name: unexpected argument 'stray'"
done
for prog in "$server_bin" "$callback_bin"; do
  name=$(basename "$prog")
  run 10 "$prog" --port 70000
  expect_usage_error "$name --port 70000" "$name: --port: expected 0\.\.65535, got 70000"
  run 10 "$prog" --port=x
  expect_usage_error "$name --port=x" "$name: --port: expected a number, got 'x'"
  run 10 "$prog" --port
  expect_usage_error "$name --port" "$name: --port: missing value"
done
for bad in not-an-address 127.0.0.1 127.0.0.1:0 127.0.0.1:65536 localhost: :50051 'bad_host:1'; do
  run 10 "$client_bin" --server "$bad"
  expect_usage_error "greeter_client --server '$bad'" "greeter_client: --server: invalid server address '$bad': .*"
done
run 10 "$client_bin" --name
expect_usage_error "greeter_client --name" "greeter_client: --name: missing value"

# ---- a host name that does not resolve: one line, exit 1, never an abort ---------
run 30 "$client_bin" --server no-such-host.invalid:50051
[ "$rc" = 1 ] || fail "unresolvable --server: exit status $rc, expected 1: $(cat "$tmp/run.out" "$tmp/run.err")"
[ "$(wc -l <"$tmp/run.err")" = 1 ] &&
  grep -q "^greeter_client: cannot resolve no-such-host\.invalid:50051: " "$tmp/run.err" ||
  fail "unresolvable --server: expected one line naming it on stderr, got: $(cat "$tmp/run.err")"

# ---- both server forms, called by an IP literal, by localhost, with --flag=value --
for prog in "$server_bin" "$callback_bin"; do
  name=$(basename "$prog")
  start_server srv "$prog" --port=0
  port=${srv_addr##*:}
  for target in "127.0.0.1:$port" "localhost:$port"; do
    run 30 "$client_bin" --server "$target" --name world
    [ "$rc" = 0 ] || fail "$name: greeter_client --server $target: exit status $rc: $(cat "$tmp/run.out" "$tmp/run.err")"
    grep -q "^Hello, world " "$tmp/run.out" || fail "$name: --server $target: no greeting: $(cat "$tmp/run.out")"
  done
  run 30 "$client_bin" --server="localhost:$port" --name=flags
  [ "$rc" = 0 ] && grep -q "^Hello, flags " "$tmp/run.out" ||
    fail "$name: greeter_client --server=... --name=...: exit status $rc: $(cat "$tmp/run.out" "$tmp/run.err")"
  # A port in use: one line, exit status 1.
  run 30 "$prog" --port "$port"
  [ "$rc" = 1 ] || fail "$name on a port in use: exit status $rc, expected 1"
  grep -qx "$name: cannot listen on 127\.0\.0\.1:$port: Address already in use" "$tmp/run.err" &&
    [ "$(wc -l <"$tmp/run.err")" = 1 ] || fail "$name on a port in use: $(cat "$tmp/run.err")"
  stop_server srv
  [ "$rc" = 0 ] || fail "$name: exit status $rc after SIGTERM"
done

# ---- a server that is gone: the call fails with its status, exit 1 -------------
run 30 "$client_bin" --server "localhost:$port" --name world
[ "$rc" = 1 ] || fail "greeter_client against a stopped server: exit status $rc, expected 1"
grep -q "^UNAVAILABLE: .*calling '/helloworld.Greeter/SayHello' on 127\.0\.0\.1:$port" "$tmp/run.out" ||
  fail "greeter_client against a stopped server: $(cat "$tmp/run.out" "$tmp/run.err")"

finish greeter_cli
