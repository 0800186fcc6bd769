#!/usr/bin/env bash
# gRPC's own interop_server (build_grpc_own_interop.sh) as peer_matrix.sh's
# servers are driven: the peers' flags in, `listening on 127.0.0.1:PORT` out
# once it accepts connections, a graceful stop on SIGTERM or SIGINT.
#
#   server.sh SERVER_BINARY --port=0 [--use_tls=true --tls_cert_file=PATH --tls_key_file=PATH]
#
# gRPC's server takes no port 0 (it asserts) and prints no port: this picks a
# free one on 127.0.0.1, starts the server on it (it listens on 0.0.0.0), and
# says so once a connection to 127.0.0.1:PORT succeeds (at most 30 s; a
# server that loses the port to another process meanwhile is tried again on
# another, three times). SIGTERM or SIGINT becomes the SIGINT gRPC's server
# stops on (within 5 s: it checks every 5 s); the script then exits 0.
set -uo pipefail

server=${1:?usage: server.sh SERVER_BINARY FLAGS...}
shift
[ -x "$server" ] || { echo "server.sh: no $server" >&2; exit 2; }
args=()
port=0
for a in "$@"; do
  case $a in
    --port=*) port=${a#*=} ;;
    --use_tls=* | --tls_cert_file=* | --tls_key_file=*) args+=("$a") ;;
    *) echo "server.sh: unknown flag $a" >&2; exit 2 ;;
  esac
done

pid=""
stop() {
  if [ -n "$pid" ]; then
    kill -INT "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  exit 0
}
trap stop TERM INT HUP

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

for attempt in 1 2 3; do
  p=$port
  [ "$p" = 0 ] && p=$(free_port)
  "$server" "--port=$p" "${args[@]}" &
  pid=$!
  for _ in $(seq 300); do
    listening "$p" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null && listening "$p"; then
    echo "listening on 127.0.0.1:$p"
    # Waits for the server (or the signal, whose trap stops it), one wait at a time.
    while kill -0 "$pid" 2>/dev/null; do wait "$pid"; done
    exit 0
  fi
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=""
  [ "$port" = 0 ] || break
  echo "server.sh: gRPC's server did not listen on port $p (attempt $attempt)" >&2
done
echo "server.sh: gRPC's server did not start" >&2
exit 1
