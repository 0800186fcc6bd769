#!/usr/bin/env bash
# Makes the certificates of the gRPC interop runs in OUTDIR, with openssl:
#   ca.pem                    a self-signed CA (EC P-256)
#   server.pem, server.key    a server certificate signed by that CA, for
#                             foo.test.google.fr (the name gRPC's interop
#                             clients pass as --server_host_override), localhost
#                             and the IP address 127.0.0.1
# The CA's key is not kept. Certificates are valid for 30 days from now.
#
#   tests/interop/certs.sh OUTDIR
set -euo pipefail

out=${1:?usage: certs.sh OUTDIR}
command -v openssl >/dev/null || { echo "certs.sh: no openssl tool" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$work/ca.key" -out "$work/ca.pem" -days 30 -subj "/CN=wheelrpc interop test CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=foo.test.google.fr"
  printf '%s\n' 'subjectAltName=DNS:foo.test.google.fr,DNS:*.test.google.fr,DNS:localhost,IP:127.0.0.1' \
    'extendedKeyUsage=serverAuth' >"$work/server.ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -days 30 -extfile "$work/server.ext" -out "$work/server.pem"
} >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log" >&2; echo "certs.sh: openssl failed" >&2; exit 1; }

cp "$work/ca.pem" "$work/server.pem" "$work/server.key" "$out/"
chmod 600 "$out/server.key"
