#!/usr/bin/env bash
# echo_server and echo_client over TLS, with certificates made by the openssl
# commands of docs/security.md: a round trip, mTLS with and without a client
# certificate, a plaintext client on the TLS port (and the server serving on),
# a server name that does not match, and the TLS flags' usage errors (exit 2).
# Skipped (77) without the openssl tool. Every wait is bounded; no process is
# left behind.
#
#   echo_tls_test.sh PATH/TO/echo_server PATH/TO/echo_client
set -euo pipefail

server_bin=${1:?usage: echo_tls_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?usage: echo_tls_test.sh ECHO_SERVER ECHO_CLIENT}
command -v openssl >/dev/null || { echo "SKIP: no openssl tool"; exit 77; }

tmp=$(mktemp -d)
server_pid=""
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# Stops the server (SIGTERM: its graceful shutdown; KILL on the way out).
stop_server() {
  kill "-${1:-TERM}" "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
on_exit() {
  [ -z "$server_pid" ] || stop_server KILL
  rm -rf "$tmp"
}
trap on_exit EXIT
trap 'exit 143' TERM INT HUP

# ---- certificates (docs/security.md, "Making certificates") --------------------
cd "$tmp"
{
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -days 365 -subj "/CN=wheelrpc example CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout server.key -out server.csr -subj "/CN=localhost"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 365 -extfile server.ext -out server.pem
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout client.key -out client.csr -subj "/CN=echo client"
  printf 'extendedKeyUsage=clientAuth\n' > client.ext
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 365 -extfile client.ext -out client.pem
} >openssl.log 2>&1 || { cat openssl.log >&2; echo "FAIL: openssl could not make the certificates" >&2; exit 1; }

# Starts echo_server with the given flags; sets server_pid and endpoint.
start_server() {
  rm -f server.out  # not the last server's line
  "$server_bin" --port 0 "$@" >server.out 2>server.err &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q '^listening on ' server.out 2>/dev/null && break
    sleep 0.1
  done
  endpoint=$(sed -n 's/^listening on //p' server.out)
  [ -n "$endpoint" ] || { cat server.err >&2; echo "FAIL: echo_server did not listen" >&2; exit 1; }
}
# Runs echo_client (bounded); its output in client.out, its status in rc.
client() {
  rc=0
  timeout 30 "$client_bin" --server "$endpoint" --retries 0 "$@" >client.out 2>&1 || rc=$?
}

# ---- TLS ---------------------------------------------------------------------------
start_server --tls-cert server.pem --tls-key server.key
client --calls 50 --fail-on-error --tls-ca ca.pem
[ "$rc" = 0 ] || fail "TLS round trip: status $rc: $(cat client.out)"
client --calls 50 --fail-on-error --tls-ca ca.pem --tls-server-name localhost
[ "$rc" = 0 ] || fail "TLS with --tls-server-name localhost: status $rc: $(cat client.out)"
client --calls 1 --fail-on-error
[ "$rc" = 1 ] || fail "plaintext client on the TLS port: status $rc, expected 1"
grep -q 'the peer requires TLS' client.out || fail "plaintext client: no 'the peer requires TLS' in: $(cat client.out)"
client --calls 1 --fail-on-error --tls-ca ca.pem --tls-server-name other.example
grep -q 'name mismatch' client.out || fail "wrong server name: no 'name mismatch' in: $(cat client.out)"
client --calls 10 --fail-on-error --tls-ca ca.pem
[ "$rc" = 0 ] || fail "the server did not go on after the failures: $(cat client.out)"
stop_server
grep -q 'plaintext peer on a TLS port' server.err || fail "no server log line for the plaintext client: $(cat server.err)"

# ---- mTLS --------------------------------------------------------------------------
start_server --tls-cert server.pem --tls-key server.key --tls-ca ca.pem --tls-require-client-cert
client --calls 20 --fail-on-error --tls-ca ca.pem --tls-cert client.pem --tls-key client.key
[ "$rc" = 0 ] || fail "mTLS with a client certificate: status $rc: $(cat client.out)"
client --calls 1 --fail-on-error --tls-ca ca.pem
grep -q 'missing client certificate' client.out || fail "mTLS without a certificate: $(cat client.out)"
stop_server

# ---- usage errors: exit 2, one line naming the problem ------------------------------
usage() {  # EXPECTED-TEXT PROGRAM ARGS...
  local want=$1 rc=0
  shift
  "$@" >usage.out 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "'$*': status $rc, expected 2"
  grep -q -- "$want" usage.out || fail "'$*': no '$want' in: $(cat usage.out)"
}
usage "--tls-cert and --tls-key go together" "$server_bin" --port 0 --tls-cert server.pem
usage "needs --tls-cert and --tls-key" "$server_bin" --port 0 --tls-ca ca.pem
usage "--tls-require-client-cert needs --tls-ca" "$server_bin" --port 0 --tls-cert server.pem --tls-key server.key \
  --tls-require-client-cert
usage "'$tmp/missing.pem' cannot be read" "$server_bin" --port 0 --tls-cert "$tmp/missing.pem" --tls-key server.key
usage "does not match" "$server_bin" --port 0 --tls-cert server.pem --tls-key client.key
usage "--tls-cert needs --tls-ca" "$client_bin" --server 127.0.0.1:1 --calls 1 --tls-cert client.pem \
  --tls-key client.key
usage "--tls-server-name needs --tls-ca" "$client_bin" --server 127.0.0.1:1 --calls 1 --tls-server-name x
usage "TLS CA file" "$client_bin" --server 127.0.0.1:1 --calls 1 --tls-ca "$tmp/none.pem"
usage "server_name 'bad name!' is neither a DNS name" "$client_bin" --server 127.0.0.1:1 --calls 1 --tls-ca ca.pem \
  --tls-server-name 'bad name!'

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "echo TLS CLI: all checks passed"
