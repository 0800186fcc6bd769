#!/usr/bin/env bash
# wheelctl call, every kind of method, against wheelrpc's interop_server
# (grpc.testing.TestService) on both wires, with the .proto files given by
# --proto: unary, server streaming, client streaming (requests from stdin
# with -d @), bidi streaming; a status the server fails with; a stream's
# deadline (--timeout-ms); bench (the verb's command line into the engine).
#
#   wheelctl_interop_test.sh WHEELCTL INTEROP_SERVER SOURCE_DIR CLI_LIB
wheelctl=${1:?usage: wheelctl_interop_test.sh WHEELCTL INTEROP_SERVER SOURCE_DIR CLI_LIB}
server_bin=${2:?}
src=${3:?}
# shellcheck source=/dev/null
. "${4:?}"

protos=(--import-path "$src/interop/proto" --proto grpc/testing/test.proto)
start_server srv "$server_bin" --port=0

for protocol in grpc native; do
  w=("$wheelctl" call "$srv_addr" --protocol "$protocol" "${protos[@]}")

  run 60 "${w[@]}" grpc.testing.TestService/UnaryCall '{"responseSize": 4}'
  [ "$rc" = 0 ] || fail "$protocol unary: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = '{"payload":{"body":"AAAAAA=="}}' ] || fail "$protocol unary: $(cat "$tmp/run.out")"

  run 60 "${w[@]}" /grpc.testing.TestService/StreamingOutputCall \
    -d '{"responseParameters": [{"size": 3}, {"size": 5}, {"size": 1}]}'
  [ "$rc" = 0 ] || fail "$protocol server streaming: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = $'{"payload":{"body":"AAAA"}}\n{"payload":{"body":"AAAAAAA="}}\n{"payload":{"body":"AA=="}}' ] ||
    fail "$protocol server streaming: $(cat "$tmp/run.out")"

  set +e
  printf '%s\n' '{"payload": {"body": "AAAA"}}' '{"payload":' ' {"body": "AAAAAAA="}}' |
    timeout 60 "${w[@]}" grpc.testing.TestService.StreamingInputCall -d @ >"$tmp/run.out" 2>"$tmp/run.err"
  rc=$?
  set -e
  [ "$rc" = 0 ] || fail "$protocol client streaming: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = '{"aggregatedPayloadSize":8}' ] || fail "$protocol client streaming: $(cat "$tmp/run.out")"

  set +e
  printf '%s\n' '{"responseParameters": [{"size": 1}]}' '{"responseParameters": [{"size": 2}, {"size": 3}]}' |
    timeout 60 "${w[@]}" grpc.testing.TestService/FullDuplexCall -d @ >"$tmp/run.out" 2>"$tmp/run.err"
  rc=$?
  set -e
  [ "$rc" = 0 ] || fail "$protocol bidi: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = $'{"payload":{"body":"AA=="}}\n{"payload":{"body":"AAA="}}\n{"payload":{"body":"AAAA"}}' ] ||
    fail "$protocol bidi: $(cat "$tmp/run.out")"

  # A unary method takes one request.
  run 60 "${w[@]}" grpc.testing.TestService/UnaryCall -d '{} {}'
  [ "$rc" = 2 ] || fail "$protocol two requests to a unary method: exit $rc"
  grep -q "takes exactly one request" "$tmp/run.err" || fail "$protocol two requests: $(cat "$tmp/run.err")"

  # The status the server fails with, as the library prints it.
  run 60 "${w[@]}" grpc.testing.TestService/UnaryCall '{"responseStatus": {"code": 9, "message": "not today"}}'
  [ "$rc" = 1 ] || fail "$protocol failed call: exit $rc"
  grep -q "^FAILED_PRECONDITION: .*not today" "$tmp/run.err" || fail "$protocol failed call: $(cat "$tmp/run.err")"
  [ -s "$tmp/run.out" ] && fail "$protocol failed call wrote on stdout: $(cat "$tmp/run.out")"

  # A stream past --timeout-ms: DEADLINE_EXCEEDED; what came before it was printed.
  run 60 "${w[@]}" --timeout-ms 300 grpc.testing.TestService/StreamingOutputCall \
    '{"responseParameters": [{"size": 1}, {"size": 1, "intervalUs": 5000000}]}'
  [ "$rc" = 1 ] || fail "$protocol stream deadline: exit $rc: $(cat "$tmp/run.err")"
  [ "$(cat "$tmp/run.out")" = '{"payload":{"body":"AA=="}}' ] || fail "$protocol stream deadline: $(cat "$tmp/run.out")"
  grep -q "^DEADLINE_EXCEEDED: " "$tmp/run.err" || fail "$protocol stream deadline: $(cat "$tmp/run.err")"
done

# bench: the method and request resolved as call does, then the load engine.
for protocol in grpc native; do
  run 120 "$wheelctl" bench "$srv_addr" grpc.testing.TestService/UnaryCall '{"responseSize": 4}' --concurrency 2 \
    --duration-s 1 --protocol "$protocol" --json --no-progress "${protos[@]}"
  [ "$rc" = 0 ] || fail "$protocol bench: exit $rc: $(cat "$tmp/run.err")"
  expect_json "$protocol bench" "$last" 'd["errors"]' 0
  expect_json "$protocol bench" "$last" 'd["protocol"]' "\"$protocol\""
  expect_json "$protocol bench" "$last" 'd["ok"] > 0 and d["ok"] == d["calls"]' true
done
run 60 "$wheelctl" bench "$srv_addr" grpc.testing.TestService/FullDuplexCall --concurrency 1 --duration-s 1 "${protos[@]}"
[ "$rc" = 2 ] || fail "bench of a streaming method: exit $rc"
grep -q "is a streaming method: bench calls unary methods" "$tmp/run.err" || fail "bench of a stream: $(cat "$tmp/run.err")"
run 60 "$wheelctl" bench "$srv_addr" grpc.testing.TestService/UnaryCall --concurrency 0 --duration-s 1 "${protos[@]}"
[ "$rc" = 2 ] || fail "bench --concurrency 0: exit $rc"

stop_server srv
[ "$rc" = 0 ] || fail "interop_server exit status $rc"
finish wheelctl_interop
