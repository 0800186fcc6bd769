#!/usr/bin/env bash
# Runs gRPC's interop test cases between the foreign peers of
# tests/interop/peers (README.md there), every server with every client,
# plaintext and over TLS: each pair runs the client with --test_case=all
# against a server started for it. Proves the peers against each other, so
# that they can be trusted as references for wheelrpc's gRPC protocol.
#
#   tests/interop/peer_matrix.sh GRPCPP_BIN_DIR
#   GRPCPP_PEERS_DIR=/path/to/build tests/interop/peer_matrix.sh
#
# GRPCPP_BIN_DIR (or $GRPCPP_PEERS_DIR): where grpcpp_interop_server and
# grpcpp_interop_client were built (tests/interop/peers/cpp/CMakeLists.txt);
# this script builds nothing. The Node client needs its packages installed
# first: (cd tests/interop/peers/node && npm ci --no-audit --no-fund).
#
# Environment:
#   SERVERS   servers to run   (default "python grpcpp")
#   CLIENTS   clients to run   (default "python grpcpp node")
#   MODES     transports       (default "plaintext tls")
#   PYTHON    a Python with grpcio (default /usr/bin/python3)
#   NODE      node             (default: node on the PATH)
#   NODE_PATH where the Node client's packages are, if not in peers/node/node_modules
#   WHEELRPC_BIN_DIR  where interop_server and interop_client are: the server and
#             client named "wheelrpc" (SERVERS="wheelrpc" CLIENTS="python grpcpp node";
#             SERVERS="python grpcpp" CLIENTS="wheelrpc")
#   GRPC_OWN_DIR  where build_grpc_own_interop.sh built gRPC's own interop_client
#             and interop_server (grpc_own_interop_*): the server and client named
#             "grpc_own", run through grpc_own/server.sh and grpc_own/client.sh
#             (SERVERS="wheelrpc" CLIENTS="grpc_own"; SERVERS="grpc_own" CLIENTS="wheelrpc";
#             a manual run: not in CTest, docs/grpc_interop.md)
#   VERBOSE=1 prints every case's line, not only the ones that did not pass
#
# The certificates come from tests/interop/certs.sh in a temporary directory;
# over TLS the clients trust its CA and expect the name foo.test.google.fr.
# Each server is started on a free port (--port=0) and the script waits for
# its "listening on 127.0.0.1:PORT" line (read from a FIFO, at most 60 s),
# then stops it with SIGTERM. No process is left behind, even on failure.
# Exit status 0 only if every case of every pair passed (or was skipped with
# a reason); 1 otherwise; 2 on a usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
peers="$here/peers"
grpcpp_dir=${1:-${GRPCPP_PEERS_DIR:-}}
servers=(${SERVERS:-python grpcpp})
clients=(${CLIENTS:-python grpcpp node})
modes=(${MODES:-plaintext tls})
python=${PYTHON:-/usr/bin/python3}
node=${NODE:-node}
override=foo.test.google.fr

usage() { echo "peer_matrix.sh: $*" >&2; exit 2; }
uses() { local x; for x in "${servers[@]}" "${clients[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
if uses grpcpp; then
  [ -n "$grpcpp_dir" ] || usage "usage: peer_matrix.sh GRPCPP_BIN_DIR (or GRPCPP_PEERS_DIR=...)"
  for b in grpcpp_interop_server grpcpp_interop_client; do
    [ -x "$grpcpp_dir/$b" ] || usage "no $grpcpp_dir/$b (build tests/interop/peers/cpp first)"
  done
fi
if uses python; then
  "$python" -c 'import grpc, google.protobuf' 2>/dev/null ||
    usage "$python has no grpcio (scripts/install_deps.sh interop)"
fi
if uses wheelrpc; then
  for b in interop_server interop_client; do
    [ -x "${WHEELRPC_BIN_DIR:-}/$b" ] || usage "no ${WHEELRPC_BIN_DIR:-\$WHEELRPC_BIN_DIR}/$b"
  done
fi
if uses grpc_own; then
  for b in grpc_own_interop_server grpc_own_interop_client; do
    [ -x "${GRPC_OWN_DIR:-}/$b" ] ||
      usage "no ${GRPC_OWN_DIR:-\$GRPC_OWN_DIR}/$b (tests/interop/build_grpc_own_interop.sh builds it)"
  done
fi
if uses node; then
  command -v "$node" >/dev/null || usage "no $node (scripts/install_deps.sh interop)"
  [ -d "$peers/node/node_modules/@grpc/grpc-js" ] || [ -d "${NODE_PATH:-/nonexistent}/@grpc/grpc-js" ] ||
    usage "the Node client's packages are missing: (cd $peers/node && npm ci --no-audit --no-fund)"
fi
for m in "${modes[@]}"; do
  case $m in plaintext | tls) ;; *) usage "MODES: plaintext and/or tls, not '$m'" ;; esac
done

tmp=$(mktemp -d)
server_pid=""
stop_server() {  # SIGTERM to the server this script started, then reap it
  [ -n "$server_pid" ] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
on_exit() {
  if [ -n "$server_pid" ]; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap on_exit EXIT
trap 'exit 143' TERM INT HUP

"$here/certs.sh" "$tmp/certs"

server_command() {  # NAME MODE: sets cmd
  case $1 in
    python) cmd=("$python" "$peers/python/interop_server.py") ;;
    grpcpp) cmd=("$grpcpp_dir/grpcpp_interop_server") ;;
    wheelrpc) cmd=("$WHEELRPC_BIN_DIR/interop_server") ;;
    grpc_own) cmd=(bash "$here/grpc_own/server.sh" "$GRPC_OWN_DIR/grpc_own_interop_server") ;;
    *) usage "unknown server '$1' (python, grpcpp, wheelrpc, grpc_own)" ;;
  esac
  cmd+=(--port=0)
  if [ "$2" = tls ]; then
    cmd+=(--use_tls=true "--tls_cert_file=$tmp/certs/server.pem" "--tls_key_file=$tmp/certs/server.key")
  else
    cmd+=(--use_tls=false)
  fi
}

client_command() {  # NAME MODE PORT: sets cmd
  case $1 in
    python) cmd=("$python" "$peers/python/interop_client.py") ;;
    grpcpp) cmd=("$grpcpp_dir/grpcpp_interop_client") ;;
    node) cmd=("$node" "$peers/node/interop_client.js") ;;
    wheelrpc) cmd=("$WHEELRPC_BIN_DIR/interop_client") ;;
    grpc_own) cmd=(bash "$here/grpc_own/client.sh" "$GRPC_OWN_DIR/grpc_own_interop_client") ;;
    *) usage "unknown client '$1' (python, grpcpp, node, wheelrpc, grpc_own)" ;;
  esac
  cmd+=(--server_host=127.0.0.1 "--server_port=$3" --test_case=all)
  if [ "$2" = tls ]; then
    cmd+=(--use_tls=true "--ca_file=$tmp/certs/ca.pem" "--server_host_override=$override")
  else
    cmd+=(--use_tls=false)
  fi
}

# Starts a server; sets server_pid and port. The server's stdout goes to a
# FIFO that stays open here, so that its first line can be read as soon as
# it is written (and later lines never meet a closed pipe).
listen_fd=""
start_server() {  # NAME MODE
  local fifo="$tmp/server.fifo" line
  server_command "$1" "$2"
  rm -f "$fifo"
  mkfifo "$fifo"
  "${cmd[@]}" >"$fifo" 2>"$tmp/server.err" &
  server_pid=$!
  exec {listen_fd}<"$fifo"
  if ! read -r -t 60 -u "$listen_fd" line || [[ $line != "listening on 127.0.0.1:"* ]]; then
    echo "peer_matrix.sh: the $1 server ($2) did not listen: ${line:-no line}" >&2
    cat "$tmp/server.err" >&2
    exit 1
  fi
  port=${line##*:}
}
close_server() {
  stop_server
  if [ -n "$listen_fd" ]; then exec {listen_fd}<&-; listen_fd=""; fi
}

failures=0
summary=()
for mode in "${modes[@]}"; do
  for server in "${servers[@]}"; do
    start_server "$server" "$mode"
    for client in "${clients[@]}"; do
      pair="$server server, $client client, $mode"
      client_command "$client" "$mode" "$port"
      rc=0
      "${cmd[@]}" >"$tmp/client.out" 2>"$tmp/client.err" || rc=$?
      passed=$(grep -c '^PASS ' "$tmp/client.out" || true)
      skipped=$(grep -c '^SKIP ' "$tmp/client.out" || true)
      failed=$(grep -c '^FAIL ' "$tmp/client.out" || true)
      if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$passed" -gt 0 ]; then
        result="ok   $pair: $passed passed, $skipped skipped"
      else
        failures=$((failures + 1))
        result="FAIL $pair: $passed passed, $skipped skipped, $failed failed, exit status $rc"
      fi
      summary+=("$result")
      echo "$result"
      if [ "${VERBOSE:-0}" = 1 ]; then
        sed 's/^/    /' "$tmp/client.out"
      else
        grep -v '^PASS ' "$tmp/client.out" | sed 's/^/    /' || true
      fi
      if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then sed 's/^/    stderr: /' "$tmp/client.err" | tail -20; fi
      # A failed pair shows what the server said meanwhile (its log so far).
      if [ "$rc" != 0 ] || [ "$failed" != 0 ]; then sed 's/^/    server: /' "$tmp/server.err" | tail -20; fi
      kill -0 "$server_pid" 2>/dev/null || {
        echo "peer_matrix.sh: the $server server ($mode) died during the $client client's run" >&2
        sed 's/^/    server: /' "$tmp/server.err" | tail -20 >&2
        server_pid=""
        exit 1
      }
    done
    close_server
  done
done

echo
echo "peer matrix: ${#summary[@]} pairs, $failures failed"
[ "$failures" = 0 ]
