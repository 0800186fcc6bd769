#!/usr/bin/env bash
# greeter.proto as it is (with `import "wheelrpc/options.proto";`) through
# other languages' protoc runs, with the installed options.proto's include
# directory: docs/grpc.md's commands ("Typed services from other languages",
# the section's second sh block, /tmp/wheelrpc replaced by a scratch prefix):
# `cmake --install BUILD --component proto`, then protoc --python_out and
# Debian's grpc_tools.protoc (libprotoc 3.5) with -I <prefix>/include. The
# Python modules import, and the method's (wheelrpc.method) option reads back
# through them. Without that -I, protoc fails as the section says a client's
# run would.
#
#   installed_options_test.sh PROTOC SOURCE_DIR BUILD_DIR
set -euo pipefail

usage="usage: installed_options_test.sh PROTOC SOURCE_DIR BUILD_DIR"
protoc=${1:?$usage}
src=${2:?$usage}
build=${3:?$usage}
doc="$src/docs/grpc.md"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

ln -s "$src/examples" "$tmp/examples"
ln -s "$src/protobuf" "$tmp/protobuf"
mkdir "$tmp/build"
ln -s "$build" "$tmp/build/release"  # the doc's build directory
ln -s "$build" "$tmp/build/dev"
export PATH="$(dirname "$protoc"):$(dirname "$(command -v cmake || echo /usr/bin/cmake)"):$PATH"

# Without the include directory: the failure a client's protoc run has.
if out=$(cd "$tmp" && protoc -I examples/greeter --python_out=. examples/greeter/greeter.proto 2>&1); then
  fail "protoc without wheelrpc's include directory succeeded: the test proves nothing"
else
  case $out in *'Import "wheelrpc/options.proto" was not found'*) ;; *) fail "unexpected protoc error: $out" ;; esac
fi

# The section's second sh block.
commands=$(awk '$0 == "## Typed services from other languages" {on=1; next} on && /^## / {exit} on {print}' "$doc" |
  awk '$0 == "```sh" {k++; if (k == 2) {on=1; next}} on && $0 == "```" {exit} on {print}' |
  sed "s#/tmp/wheelrpc#$tmp/prefix#g")
case $commands in
  *"--component proto"*"--python_out"*"grpc_tools.protoc"*) ;;
  *) echo "FAIL: docs/grpc.md's second sh block is not the install and protoc commands: $commands" >&2; exit 1 ;;
esac
if ! out=$(cd "$tmp" && bash -euo pipefail -c "$commands" 2>&1); then
  echo "FAIL: docs/grpc.md's commands failed: $out" >&2
  exit 1
fi
[ -f "$tmp/prefix/include/wheelrpc/options.proto" ] || fail "the install put no include/wheelrpc/options.proto"
for f in greeter_pb2.py greeter_pb2_grpc.py wheelrpc/options_pb2.py; do
  [ -f "$tmp/out/$f" ] || fail "no out/$f"
done

# Each generator's modules import, and the option reads back through them.
check_modules() {
  (cd "$tmp/out" && /usr/bin/python3 - <<'EOF'
import greeter_pb2
from wheelrpc import options_pb2

method = greeter_pb2.DESCRIPTOR.services_by_name["Greeter"].methods_by_name["SayHello"]
policy = method.GetOptions().Extensions[options_pb2.method]
assert (policy.timeout_ms, policy.idempotent, policy.retries) == (200, True, 2), policy
print(greeter_pb2.HelloRequest(name="x").SerializeToString().hex())
EOF
  )
}
if out=$(check_modules 2>&1); then
  [ "$out" = 0a0178 ] || fail "grpc_tools' modules: unexpected output: $out"
else
  fail "grpc_tools' modules: $out"
fi
rm -rf "$tmp/out" && mkdir "$tmp/out"
protoc_line=$(grep -- "--python_out" <<<"$commands" | grep -v grpc_tools)
if ! out=$(cd "$tmp" && bash -euo pipefail -c "$protoc_line" 2>&1); then
  fail "protoc --python_out: $out"
elif out=$(check_modules 2>&1); then
  [ "$out" = 0a0178 ] || fail "protoc's modules: unexpected output: $out"
else
  fail "protoc's modules: $out"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "typed_foreign (installed options.proto): protoc and grpc_tools compile greeter.proto as it is"
