#!/usr/bin/env bash
# echo_server --bearer-token guards every way in from a foreign gRPC client
# too: Python grpcio (Debian's python3-grpcio, run by /usr/bin/python3) calls
# the unary method and opens each stream kind (server streaming "count",
# client streaming "sum", bidi "chat") without a token, with a wrong one
# (UNAUTHENTICATED, no message served) and with the right one (served).
#
#   echo_auth_grpcio_test.sh PATH/TO/echo_server
set -euo pipefail
server_bin=${1:?usage: echo_auth_grpcio_test.sh ECHO_SERVER}
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import grpc' 2>/dev/null; then
  echo "SKIP: $python has no grpcio (Debian: apt-get install python3-grpcio)"
  exit 77
fi
. "$(dirname "$0")/cli_lib.sh"

start_server srv "$server_bin" --port 0 --bearer-token s3cret

cat >"$tmp/guard.py" <<'PY'
import sys
import grpc

addr = sys.argv[1]
failures = []

def check(what, fn, token, want):
    md = [] if token is None else [("authorization", "Bearer " + token)]
    try:
        got = fn(md)
        code = "OK"
    except grpc.RpcError as e:
        got, code = e.details(), e.code().name
    if code != want[0] or (want[1] is not None and got != want[1]):
        failures.append(f"{what} token={token!r}: got {code} {got!r}, want {want}")

with grpc.insecure_channel(addr) as ch:
    echo = ch.unary_unary("/echo")
    count = ch.unary_stream("/count")
    total = ch.stream_unary("/sum")
    chat = ch.stream_stream("/chat")
    ways = {
        "unary echo": (lambda md: echo(b"hi", metadata=md, timeout=10), b"hi"),
        "server-streaming count": (lambda md: list(count(b"3 0", metadata=md, timeout=10)), [b"0", b"1", b"2"]),
        "client-streaming sum": (lambda md: total(iter([b"40", b"2"]), metadata=md, timeout=10), b"42"),
        "bidi chat": (lambda md: list(chat(iter([b"a", b"b"]), metadata=md, timeout=10)), [b"a", b"b"]),
    }
    for what, (fn, served) in ways.items():
        check(what, fn, None, ("UNAUTHENTICATED", None))
        check(what, fn, "guess", ("UNAUTHENTICATED", None))
        check(what, fn, "s3cret", ("OK", served))
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
PY

run 120 "$python" "$tmp/guard.py" "$srv_addr"
[ "$rc" = 0 ] || fail "grpcio against echo_server --bearer-token: $(cat "$tmp/run.out" "$tmp/run.err")"
stop_server srv
finish "echo_bearer_auth_grpcio"
