#!/usr/bin/env bash
# The typed greeter (examples/greeter) called by other languages' gRPC stacks,
# with the commands and snippets of docs/grpc.md, "Typed services from other
# languages", run as they are written there (the doc's port 50051 replaced by
# the server's):
#   python  the client copy of greeter.proto (--wheelrpc_out=client_proto),
#           Python stubs from it with Debian's grpc_tools.protoc, SayHello
#           from /usr/bin/python3 (a greeting, then INVALID_ARGUMENT);
#   node    the same copy loaded by @grpc/proto-loader, SayHello from grpc-js;
#           then greeter.proto as it is, with the installed options.proto's
#           include directory. Exits 77 (skipped) when node or npm is missing
#           or npm cannot install the packages (tests/interop/peers/node's
#           lock file, as tests/examples/echo_grpc_test.sh installs them).
# The doc's commands run in a scratch directory laid out as the repository
# (examples/, protobuf/ and build/release/ are links to the real ones). The
# server is started on port 0 and its "listening on" line read through a
# FIFO; every wait is bounded and no process is left behind.
#
#   foreign_greeter_test.sh python|node GREETER_SERVER PROTOC PLUGIN SOURCE_DIR BUILD_DIR
set -euo pipefail

usage="usage: foreign_greeter_test.sh python|node GREETER_SERVER PROTOC PLUGIN SOURCE_DIR BUILD_DIR"
mode=${1:?$usage}
server_bin=${2:?$usage}
protoc=${3:?$usage}
plugin=${4:?$usage}
src=${5:?$usage}
build=${6:?$usage}
doc="$src/docs/grpc.md"
case $mode in python | node) ;; *) echo "$usage" >&2; exit 2 ;; esac

skip() {
  echo "SKIP: the Node client of the typed greeter: $*"
  exit 77
}
if [ "$mode" = node ]; then
  command -v node >/dev/null || skip "no node on the PATH (scripts/install_deps.sh installs nodejs and npm)"
  command -v npm >/dev/null || skip "no npm on the PATH (scripts/install_deps.sh installs nodejs and npm)"
fi

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  exec 3<&- 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# The doc's paths are the repository's: build/release/protobuf/protoc-gen-wheelrpc.
[ "$plugin" -ef "$build/protobuf/protoc-gen-wheelrpc" ] ||
  { echo "FAIL: the plugin is not where docs/grpc.md says (build/release/protobuf/): $plugin" >&2; exit 1; }
ln -s "$src/examples" "$tmp/examples"
ln -s "$src/protobuf" "$tmp/protobuf"
mkdir "$tmp/build"
ln -s "$build" "$tmp/build/release"  # the doc's build directory
ln -s "$build" "$tmp/build/dev"
export PATH="$(dirname "$protoc"):$(dirname "$(command -v cmake || echo /usr/bin/cmake)"):$PATH"

# The section's Nth fenced block in LANG.
block() {
  awk '$0 == "## Typed services from other languages" {on=1; next} on && /^## / {exit} on {print}' "$doc" |
    awk -v lang="$1" -v n="$2" '$0 == "```" lang {k++; if (k == n) {on=1; next}} on && $0 == "```" {exit} on {print}'
}

# greeter_server on port 0; its first line says where it listens.
mkfifo "$tmp/server.out"
"$server_bin" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
exec 3<"$tmp/server.out"
line=""
IFS= read -r -t 60 line <&3 || true
case $line in
  "listening on 127.0.0.1:"*) port=${line##*:} ;;
  *) echo "FAIL: greeter_server did not start: '$line' $(cat "$tmp/server.err")" >&2; exit 1 ;;
esac

# The client copy (and, for Python, the stubs): the section's first sh block.
commands=$(block sh 1)
[ -n "$commands" ] || { echo "FAIL: no sh block in docs/grpc.md's section" >&2; exit 1; }
[ "$mode" = node ] && commands=$(grep -v grpc_tools <<<"$commands")  # Node loads the .proto itself
if ! out=$(cd "$tmp" && bash -euo pipefail -c "$commands" 2>&1); then
  echo "FAIL: docs/grpc.md's commands failed: $out" >&2
  exit 1
fi
if [ ! -f "$tmp/client/greeter.proto" ]; then
  fail "no client/greeter.proto was written"
elif grep -Eq '^import "wheelrpc/|\(wheelrpc\.' "$tmp/client/greeter.proto"; then
  fail "client/greeter.proto still has wheelrpc's import or option: $(grep -En 'wheelrpc/|\(wheelrpc\.' "$tmp/client/greeter.proto")"
fi

# A fenced block with the doc's port replaced by the server's.
snippet() { block "$1" 1 | sed "s/50051/$port/g"; }

if [ "$mode" = python ]; then
  snippet python >"$tmp/hello.py"
  [ -s "$tmp/hello.py" ] || fail "no python snippet in docs/grpc.md's section"
  if py_out=$(cd "$tmp" && PYTHONPATH=client timeout 60 /usr/bin/python3 hello.py 2>&1); then
    first=$(sed -n 1p <<<"$py_out")
    second=$(sed -n 2p <<<"$py_out")
    case $first in "Hello, python (from 127.0.0.1:"*")") ;; *) fail "python: unexpected greeting: $py_out" ;; esac
    case $second in "INVALID_ARGUMENT "*"name is empty"*) ;; *) fail "python: unexpected error line: $py_out" ;; esac
    echo "python: $py_out"
  else
    fail "python snippet: $py_out"
  fi
else
  cp "$src/tests/interop/peers/node/package.json" "$src/tests/interop/peers/node/package-lock.json" "$tmp/"
  if ! (cd "$tmp" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
    skip "npm could not install @grpc/grpc-js and @grpc/proto-loader: $(tail -n 5 "$tmp/npm.log")"
  fi
  snippet js >"$tmp/hello.js"
  [ -s "$tmp/hello.js" ] || fail "no js snippet in docs/grpc.md's section"
  if js_out=$(cd "$tmp" && timeout 60 node hello.js 2>&1); then
    case $js_out in "Hello, node (from 127.0.0.1:"*")") ;; *) fail "node: unexpected greeting: $js_out" ;; esac
    echo "node: $js_out"
  else
    fail "js snippet: $js_out"
  fi

  # greeter.proto as it is, with the installed options.proto (the doc's
  # includeDirs for proto-loader).
  cmake --install "$build" --prefix "$tmp/prefix" --component proto >"$tmp/install.log" 2>&1 ||
    fail "cmake --install --component proto: $(cat "$tmp/install.log")"
  sed -e "s#includeDirs: \['client'\]#includeDirs: ['examples/greeter', '$tmp/prefix/include']#" \
      -e "s/name: 'node'/name: 'node, with options.proto'/" "$tmp/hello.js" >"$tmp/hello_installed.js"
  grep -q "prefix/include" "$tmp/hello_installed.js" || fail "the js snippet's includeDirs changed; update this test"
  if js_out=$(cd "$tmp" && timeout 60 node hello_installed.js 2>&1); then
    case $js_out in "Hello, node, with options.proto (from 127.0.0.1:"*")") ;;
      *) fail "node with the installed options.proto: unexpected greeting: $js_out" ;;
    esac
    echo "node: $js_out"
  else
    fail "node with the installed options.proto: $js_out"
  fi
fi

kill -TERM "$server_pid"
for _ in $(seq 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done  # up to 30 s
if kill -0 "$server_pid" 2>/dev/null; then
  fail "greeter_server did not stop within 30 s of SIGTERM"
  kill -KILL "$server_pid"
fi
rc=0
wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" -eq 0 ] || fail "greeter_server exited $rc after SIGTERM"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "typed_foreign ($mode): the typed greeter answers a foreign client built from docs/grpc.md"
