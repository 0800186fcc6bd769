#!/usr/bin/env bash
# echo_server --bearer-token and echo_client --bearer-token (registered with
# CTest twice, by tests/examples/CMakeLists.txt):
#
#   calls    (echo_bearer_auth): unary calls on both wires without the token
#            and with another one fail with UNAUTHENTICATED, which the
#            client's summary (JSON and text) and exit status 1 say; with
#            the token they succeed; a server without --bearer-token takes
#            any call; the token never shows in the server's output; both
#            programs document the flag; an empty token is a usage error.
#   streams  (echo_bearer_auth_streams): the streaming methods count, sum and
#            chat are refused (UNAUTHENTICATED, exit 1) without the token and
#            with another one, and run with it.
#
#   echo_auth_test.sh ECHO_SERVER ECHO_CLIENT calls|streams
. "$(dirname "$0")/cli_lib.sh"

server_bin=${1:?usage: echo_auth_test.sh ECHO_SERVER ECHO_CLIENT calls|streams}
client_bin=${2:?}
mode=${3:?}
token=tok-7f3a9c  # unlikely to appear in any output by chance

start_server srv "$server_bin" --port 0 --bearer-token "$token"

# Runs echo_client against the server with --json and ARGS; `last` is its summary.
client() { run 60 "$client_bin" --server "$srv_addr" --json "$@"; }
# The last run was refused: exit status 1, every call or stream UNAUTHENTICATED.
expect_refused() {  # WHAT COUNT
  [ "$rc" = 1 ] || fail "$1: exit status $rc, expected 1: $last $(cat "$tmp/run.err")"
  expect_json "$1" "$last" 'd["errors"]' "{\"UNAUTHENTICATED\":$2}"
  json "$last" 'd["error_examples"]["UNAUTHENTICATED"]' | grep -q "missing or invalid bearer token for " ||
    fail "$1: the example message does not say why: $last"
}

case $mode in
  calls)
    for protocol in native grpc; do
      client --protocol "$protocol" --calls 3
      expect_refused "$protocol, no token" 3
      expect_json "$protocol, no token" "$last" 'd["ok"]' 0
      client --protocol "$protocol" --calls 3 --bearer-token wrong-token
      expect_refused "$protocol, another token" 3
      client --protocol "$protocol" --calls 20 --concurrency 4 --bearer-token "$token" --fail-on-error
      [ "$rc" = 0 ] || fail "$protocol, the token: exit status $rc: $last $(cat "$tmp/run.err")"
      expect_json "$protocol, the token" "$last" 'd["ok"]' 20
      expect_json "$protocol, the token" "$last" 'd["errors"]' '{}'
    done
    # The sleep method too (every method), and --flag=value.
    client --method sleep --sleep-ms 1 --calls 2 --bearer-token="$token" --fail-on-error
    [ "$rc" = 0 ] || fail "sleep with --bearer-token=: exit status $rc: $last"
    client --method sleep --sleep-ms 1 --calls 2
    expect_refused "sleep, no token" 2
    # The text summary names the code and gives the reason.
    run 60 "$client_bin" --server "$srv_addr" --calls 2
    [ "$rc" = 1 ] || fail "text, no token: exit status $rc, expected 1"
    grep -q "^  errors by code: UNAUTHENTICATED=2$" "$tmp/run.out" ||
      fail "text, no token: no 'errors by code: UNAUTHENTICATED=2': $(cat "$tmp/run.out")"
    grep -q "^    UNAUTHENTICATED: .*missing or invalid bearer token for 'echo'$" "$tmp/run.out" ||
      fail "text, no token: no example message: $(cat "$tmp/run.out")"
    # A server without --bearer-token takes calls with or without one.
    start_server open "$server_bin" --port 0
    for args in "" "--bearer-token $token"; do
      # shellcheck disable=SC2086 # $args: zero or two words
      run 60 "$client_bin" --server "$open_addr" --json --calls 3 --fail-on-error $args
      [ "$rc" = 0 ] || fail "server without a token, client '$args': exit status $rc: $last"
    done
    stop_server open
    # Both programs document the flag; an empty token is a usage error.
    for prog in "$server_bin" "$client_bin"; do
      name=$(basename "$prog")
      run 10 "$prog" --help
      grep -q -- "--bearer-token T" "$tmp/run.out" || fail "$name --help does not document --bearer-token"
    done
    run 10 "$server_bin" --port 0 --bearer-token ""
    expect_usage_error "echo_server --bearer-token ''" "echo_server: --bearer-token: expected a token, got an empty one"
    run 10 "$client_bin" --server 127.0.0.1:7 --calls 1 --bearer-token=
    expect_usage_error "echo_client --bearer-token=" "echo_client: --bearer-token: missing value"
    ;;
  streams)
    for method in count sum chat; do
      client --method "$method" --streams 2 --count 5
      expect_refused "$method, no token" 2
      expect_json "$method, no token" "$last" 'd["streams_ok"]' 0
      client --method "$method" --streams 2 --count 5 --bearer-token wrong-token
      expect_refused "$method, another token" 2
      client --method "$method" --streams 2 --count 5 --bearer-token "$token"
      [ "$rc" = 0 ] || fail "$method, the token: exit status $rc: $last $(cat "$tmp/run.err")"
      expect_json "$method, the token" "$last" 'd["streams_ok"]' 2
      expect_json "$method, the token" "$last" 'd["errors"]' '{}'
    done
    ;;
  *)
    echo "usage: echo_auth_test.sh ECHO_SERVER ECHO_CLIENT calls|streams" >&2
    exit 2
    ;;
esac

stop_server srv
[ "$rc" = 0 ] || fail "echo_server: exit status $rc after SIGTERM"
grep -q -- "$token" "$tmp/srv.out" "$tmp/srv.err" && fail "the server's output shows the token"
finish "echo_bearer_auth ($mode)"
