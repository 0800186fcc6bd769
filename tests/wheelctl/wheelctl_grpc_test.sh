#!/usr/bin/env bash
# wheelctl against real gRPC servers. The gRPC C++ interop server with gRPC's
# own reflection (--reflection=true; grpc++ 1.51 serves v1alpha only, so
# wheelctl's fallback from v1 is what finds it): list, describe, call
# UnaryCall, a stream, a second of bench; the same server without
# reflection: exit 5 naming --proto. A Python grpcio interop server: calls
# and a second of bench with --proto, and health (it serves none:
# UNIMPLEMENTED, exit 1). Exits 77 (skipped) when neither
# server can run.
#
#   wheelctl_grpc_test.sh WHEELCTL SOURCE_DIR CLI_LIB [GRPCPP_INTEROP_SERVER]
wheelctl=${1:?usage: wheelctl_grpc_test.sh WHEELCTL SOURCE_DIR CLI_LIB [GRPCPP_INTEROP_SERVER]}
src=${2:?}
lib=${3:?}
grpcpp_bin=${4:-}
python=/usr/bin/python3  # Debian's grpcio is installed for its own interpreter
have_python=0
"$python" -c 'import grpc, grpc_tools' 2>/dev/null && have_python=1
if [ -z "$grpcpp_bin" ] && [ "$have_python" = 0 ]; then
  echo "SKIP: neither the gRPC C++ interop server nor /usr/bin/python3 with grpcio and grpc_tools"
  exit 77
fi

# Expects the last run to have been a clean `wheelctl bench --json`: exit 0,
# one JSON line with calls > 0 and no error.
expect_clean_bench() {  # WHAT
  [ "$rc" = 0 ] || fail "$1 bench: exit $rc: $(cat "$tmp/run.err") $(cat "$tmp/run.out")"
  /usr/bin/python3 -c 'import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
sys.exit(0 if r["calls"] > 0 and r["errors"] == 0 and r["p99_us"] > 0 else 1)' "$tmp/run.out" ||
    fail "$1 bench: $(cat "$tmp/run.out")"
}
# shellcheck source=/dev/null
. "$lib"
protos=(--import-path "$src/interop/proto" --proto grpc/testing/test.proto)

if [ -n "$grpcpp_bin" ]; then
  start_server cpp "$grpcpp_bin" --port=0 --reflection=true
  run 60 "$wheelctl" list "$cpp_addr"
  [ "$rc" = 0 ] || fail "grpc++ list: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = $'grpc.reflection.v1alpha.ServerReflection\ngrpc.testing.TestService' ] ||
    fail "grpc++ list: $(cat "$tmp/run.out")"
  run 60 "$wheelctl" describe "$cpp_addr" grpc.testing.TestService
  [ "$rc" = 0 ] || fail "grpc++ describe: exit $rc: $(cat "$tmp/run.err")"
  grep -qx "grpc.testing.TestService is a service:" "$tmp/run.out" || fail "grpc++ describe: $(cat "$tmp/run.out")"
  grep -qx "  rpc UnaryCall ( .grpc.testing.SimpleRequest ) returns ( .grpc.testing.SimpleResponse );" "$tmp/run.out" ||
    fail "grpc++ describe: $(cat "$tmp/run.out")"
  grep -qx "  rpc FullDuplexCall ( stream .grpc.testing.StreamingOutputCallRequest ) returns ( stream .grpc.testing.StreamingOutputCallResponse );" \
    "$tmp/run.out" || fail "grpc++ describe: $(cat "$tmp/run.out")"
  run 60 "$wheelctl" describe "$cpp_addr" grpc.testing.Payload
  grep -q "^  bytes body = 2;" "$tmp/run.out" || fail "grpc++ describe message: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
  run 60 "$wheelctl" call "$cpp_addr" grpc.testing.TestService/UnaryCall '{"responseSize": 4}'
  [ "$rc" = 0 ] || fail "grpc++ call: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = '{"payload":{"body":"AAAAAA=="}}' ] || fail "grpc++ call: $(cat "$tmp/run.out")"
  run 60 "$wheelctl" call "$cpp_addr" grpc.testing.TestService/StreamingOutputCall \
    '{"responseParameters": [{"size": 1}, {"size": 2}]}'
  [ "$(cat "$tmp/run.out")" = $'{"payload":{"body":"AA=="}}\n{"payload":{"body":"AAA="}}' ] ||
    fail "grpc++ stream: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
  run 60 "$wheelctl" bench "$cpp_addr" grpc.testing.TestService/UnaryCall '{"responseSize": 4}' \
    --concurrency 8 --duration-s 1 --json --no-progress
  expect_clean_bench "grpc++"
  run 60 "$wheelctl" call "$cpp_addr" grpc.testing.TestService/UnimplementedCall '{}'
  [ "$rc" = 1 ] || fail "grpc++ UnimplementedCall: exit $rc"
  grep -q "^UNIMPLEMENTED: " "$tmp/run.err" || fail "grpc++ UnimplementedCall: $(cat "$tmp/run.err")"
  stop_server cpp

  start_server bare "$grpcpp_bin" --port=0
  run 60 "$wheelctl" list "$bare_addr"
  [ "$rc" = 5 ] || fail "no reflection: exit $rc: $(cat "$tmp/run.err")"
  grep -q "does not serve server reflection.*--proto FILE" "$tmp/run.err" || fail "no reflection: $(cat "$tmp/run.err")"
  run 60 "$wheelctl" call "$bare_addr" grpc.testing.TestService/UnaryCall '{"responseSize": 1}' "${protos[@]}"
  [ "$(cat "$tmp/run.out")" = '{"payload":{"body":"AA=="}}' ] || fail "grpc++ --proto call: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
  stop_server bare
fi

if [ "$have_python" = 1 ]; then
  start_server py "$python" "$src/tests/interop/peers/python/interop_server.py" --port=0 --stubs_dir="$tmp/stubs"
  run 60 "$wheelctl" call "$py_addr" /grpc.testing.TestService/UnaryCall '{"responseSize": 2}' "${protos[@]}"
  [ "$rc" = 0 ] || fail "grpcio call: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = '{"payload":{"body":"AAA="}}' ] || fail "grpcio call: $(cat "$tmp/run.out")"
  set +e
  printf '%s\n' '{"payload": {"body": "AAAA"}}' '{"payload": {"body": "AA=="}}' |
    timeout 60 "$wheelctl" call "$py_addr" grpc.testing.TestService/StreamingInputCall -d @ "${protos[@]}" \
      >"$tmp/run.out" 2>"$tmp/run.err"
  rc=$?
  set -e
  [ "$(cat "$tmp/run.out")" = '{"aggregatedPayloadSize":4}' ] || fail "grpcio client stream: $rc $(cat "$tmp/run.out") $(cat "$tmp/run.err")"
  run 60 "$wheelctl" bench "$py_addr" grpc.testing.TestService/UnaryCall '{"responseSize": 2}' "${protos[@]}" \
    --concurrency 4 --duration-s 1 --json --no-progress
  expect_clean_bench grpcio
  run 60 "$wheelctl" health "$py_addr"
  [ "$rc" = 1 ] || fail "grpcio health (none served): exit $rc"
  grep -q "^UNIMPLEMENTED: " "$tmp/run.err" || fail "grpcio health: $(cat "$tmp/run.err")"
  stop_server py
fi
finish wheelctl_grpc
