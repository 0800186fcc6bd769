#!/usr/bin/env bash
# wheelctl against the typed greeter (examples/greeter/greeter_server), on
# both wires: list, describe and call through the server's reflection and
# through --proto; the errors: a method the server does not serve
# (UNIMPLEMENTED, exit 1), one the descriptors do not have (exit 5), a
# malformed request (exit 2, naming the field), an application error
# (INVALID_ARGUMENT), metadata (-H) accepted.
#
#   wheelctl_greeter_test.sh WHEELCTL GREETER_SERVER SOURCE_DIR CLI_LIB
wheelctl=${1:?usage: wheelctl_greeter_test.sh WHEELCTL GREETER_SERVER SOURCE_DIR CLI_LIB}
server_bin=${2:?}
src=${3:?}
# shellcheck source=/dev/null
. "${4:?}"

proto=(--proto "$src/examples/greeter/greeter.proto")
extra=(--proto "$src/tests/wheelctl/protos/greeter_extra.proto")
start_server srv "$server_bin" --port 0

for protocol in grpc native; do
  for how in reflection proto; do
    d=()
    [ "$how" = proto ] && d=("${proto[@]}")
    what="$protocol/$how"

    run 60 "$wheelctl" list "$srv_addr" --protocol "$protocol" "${d[@]}"
    [ "$rc" = 0 ] || fail "$what list: exit $rc: $(cat "$tmp/run.err")"
    grep -qx "helloworld.Greeter" "$tmp/run.out" || fail "$what list: $(cat "$tmp/run.out")"
    sort -c "$tmp/run.out" 2>/dev/null || fail "$what list not sorted: $(cat "$tmp/run.out")"

    run 60 "$wheelctl" describe "$srv_addr" helloworld.Greeter --protocol "$protocol" "${d[@]}"
    [ "$rc" = 0 ] || fail "$what describe: exit $rc: $(cat "$tmp/run.err")"
    grep -qx "helloworld.Greeter is a service:" "$tmp/run.out" || fail "$what describe: $(cat "$tmp/run.out")"
    grep -qx "  rpc SayHello ( .helloworld.HelloRequest ) returns ( .helloworld.HelloReply );" "$tmp/run.out" ||
      fail "$what describe: $(cat "$tmp/run.out")"
    run 60 "$wheelctl" describe "$srv_addr" .helloworld.HelloReply --protocol "$protocol" "${d[@]}"
    [ "$(cat "$tmp/run.out")" = $'helloworld.HelloReply is a message:\nmessage HelloReply {\n  string message = 1;\n}' ] ||
      fail "$what describe message: $(cat "$tmp/run.out") $(cat "$tmp/run.err")"

    run 60 "$wheelctl" call "$srv_addr" /helloworld.Greeter/SayHello '{"name": "ada"}' -H 'x-user: ada' \
      --protocol "$protocol" "${d[@]}"
    [ "$rc" = 0 ] || fail "$what call: exit $rc: $(cat "$tmp/run.err")"
    grep -Eqx '\{"message":"Hello, ada \(from [^)]+\)"\}' "$tmp/run.out" || fail "$what call: $(cat "$tmp/run.out")"

    run 60 "$wheelctl" call "$srv_addr" helloworld.Greeter.SayHello '{}' --protocol "$protocol" "${d[@]}"
    [ "$rc" = 1 ] || fail "$what application error: exit $rc"
    grep -q "^INVALID_ARGUMENT: .*name is empty" "$tmp/run.err" || fail "$what application error: $(cat "$tmp/run.err")"

    run 60 "$wheelctl" call "$srv_addr" helloworld.Greeter/SayHello '{"nmae": "ada"}' --protocol "$protocol" "${d[@]}"
    [ "$rc" = 2 ] || fail "$what malformed JSON: exit $rc"
    grep -q "request #1 is not a valid helloworld.HelloRequest: .*nmae" "$tmp/run.err" ||
      fail "$what malformed JSON: $(cat "$tmp/run.err")"

    run 60 "$wheelctl" call "$srv_addr" helloworld.Greeter/SayGoodbye --protocol "$protocol" "${d[@]}"
    [ "$rc" = 5 ] || fail "$what method not in the descriptors: exit $rc"
    grep -q "has no method 'SayGoodbye' (its methods: SayHello)" "$tmp/run.err" ||
      fail "$what method not in the descriptors: $(cat "$tmp/run.err")"
  done

  # A method the descriptors have and the server does not serve.
  run 60 "$wheelctl" call "$srv_addr" helloworld.Greeter/SayGoodbye '{"name": "x"}' --protocol "$protocol" "${extra[@]}"
  [ "$rc" = 1 ] || fail "$protocol unserved method: exit $rc: $(cat "$tmp/run.err")"
  grep -q "^UNIMPLEMENTED: " "$tmp/run.err" || fail "$protocol unserved method: $(cat "$tmp/run.err")"
done

stop_server srv
finish wheelctl_greeter
