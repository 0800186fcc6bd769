#!/usr/bin/env bash
# gRPC's own interop_client (build_grpc_own_interop.sh) as peer_matrix.sh's
# clients are driven: the peers' flags in, one line per case out.
#
#   client.sh CLIENT_BINARY --server_host=H --server_port=N --test_case=all|NAME
#             [--use_tls=true --ca_file=PATH --server_host_override=NAME]
#
# gRPC's client runs one case per process and says nothing when it passes (a
# failed case aborts on its assertion): each case runs in a process of its
# own, bounded by CASE_TIMEOUT seconds (default 60), and prints `PASS <case>`
# or `FAIL <case>: <why>` (its last error line). --test_case=all runs the 18
# cases of gRPC's interop descriptions that the other peers run (GRPC_OWN_CASES
# overrides the list). Its TLS flags: --ca_file becomes
# GRPC_DEFAULT_SSL_ROOTS_FILE_PATH with --use_test_ca=false (gRPC's client
# has no CA flag); without it, --use_test_ca=true (gRPC's own test CA).
# Exit status 0 only if every case passed; 2 on a usage error.
set -uo pipefail

client=${1:?usage: client.sh CLIENT_BINARY FLAGS...}
shift
[ -x "$client" ] || { echo "client.sh: no $client" >&2; exit 2; }
args=()
test_case=large_unary
ca_file=""
use_tls=false
for a in "$@"; do
  case $a in
    --test_case=*) test_case=${a#*=} ;;
    --ca_file=*) ca_file=${a#*=} ;;
    --use_tls=*) use_tls=${a#*=}; args+=("$a") ;;
    --server_host=* | --server_port=* | --server_host_override=*) args+=("$a") ;;
    *) echo "client.sh: unknown flag $a" >&2; exit 2 ;;
  esac
done
env=()
if [ "$use_tls" = true ]; then
  if [ -n "$ca_file" ]; then
    env=(GRPC_DEFAULT_SSL_ROOTS_FILE_PATH="$ca_file")
    args+=(--use_test_ca=false)
  else
    args+=(--use_test_ca=true)
  fi
fi
if [ "$test_case" = all ]; then
  cases=(${GRPC_OWN_CASES:-empty_unary large_unary client_streaming server_streaming ping_pong empty_stream
    cancel_after_begin cancel_after_first_response timeout_on_sleeping_server custom_metadata
    status_code_and_message special_status_message unimplemented_method unimplemented_service
    client_compressed_unary server_compressed_unary client_compressed_streaming server_compressed_streaming})
else
  cases=("$test_case")
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
for c in "${cases[@]}"; do
  rc=0
  # In a subshell, so that the shell's "Aborted" for a failed case goes to the log too.
  (env "${env[@]}" timeout "${CASE_TIMEOUT:-60}" "$client" "${args[@]}" "--test_case=$c") >"$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    echo "PASS $c"
  else
    failed=$((failed + 1))
    why=$(grep -E '^E[0-9]{4} |assertion failed|Error|error' "$log" | tail -1)
    [ "$rc" = 124 ] && why="no end within ${CASE_TIMEOUT:-60} s${why:+; $why}"
    echo "FAIL $c: exit status $rc${why:+: $why}"
  fi
done
[ "$failed" = 0 ]
