#!/usr/bin/env bash
# Runs bench/registry_bench against an etcd of its own (scripts/etcd.sh in a
# private state directory, stopped at the end) and appends its JSON lines,
# with the date and machine, to $OUT (default
# bench/results/registry-YYYY-MM-DD.jsonl).
#
#   bench/registry.sh [BUILD_DIR] [registry_bench flags...]
#   bench/registry.sh build/release --trials 20 --kill-ttls 2,10 --kill-trials 5
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/release}
shift || true
bench=$build/bench/registry_bench
server=$build/examples/echo_server
[ -x "$bench" ] && [ -x "$server" ] ||
  { echo "registry.sh: build $bench and $server first (cmake --build $build --target registry_bench echo_server)" >&2; exit 2; }
state=$(mktemp -d "${TMPDIR:-/tmp}/wheelrpc-registry-bench.XXXXXX")
export WHEELRPC_ETCD_STATE_DIR=$state/etcd
cleanup() {
  bash "$here/../scripts/etcd.sh" stop >/dev/null 2>&1 || true
  rm -rf -- "$state"
}
trap cleanup EXIT
line=$(bash "$here/../scripts/etcd.sh" start)
url=${line#etcd on }
out=${OUT:-$here/results/registry-$(date -u +%F).jsonl}
# shellcheck disable=SC1091
. "$here/machine.sh"
machine_info "$here/.."
machine_line bench=registry_bench lease_ttl_default_s=10 | tee -a "$out"
"$bench" --etcd "$url" --echo-server "$server" "$@" | tee -a "$out"
echo "registry.sh: appended to $out" >&2
