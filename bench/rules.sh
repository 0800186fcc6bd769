#!/usr/bin/env bash
# Runs bench/rules_bench against an etcd of its own (scripts/etcd.sh in a
# private state directory, stopped at the end) and appends its JSON line,
# after the machine line, to $OUT (default bench/results/rules-YYYY-MM-DD.jsonl):
# how soon a rule written to etcd is in force in every client following the
# service (p50/p99/max over the writes), and that no call fails or is lost
# while the rules change under load. Exits with rules_bench's status (1: a
# call failed or was lost, or the p99 is over 500 ms).
#
#   bench/rules.sh [BUILD_DIR] [rules_bench flags...]
#   bench/rules.sh build/release --clients 4 --concurrency 8 --changes 50 --interval-ms 200
#   OUT=$(mktemp) bench/rules.sh build/dev --changes 10   # a quick check, kept out of results/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/release}
shift || true
bench=$build/bench/rules_bench
[ -x "$bench" ] || { echo "rules.sh: build $bench first (cmake --build $build --target rules_bench)" >&2; exit 2; }
state=$(mktemp -d "${TMPDIR:-/tmp}/wheelrpc-rules-bench.XXXXXX")
export WHEELRPC_ETCD_STATE_DIR=$state/etcd
cleanup() {
  bash "$here/../scripts/etcd.sh" stop >/dev/null 2>&1 || true
  rm -rf -- "$state"
}
trap cleanup EXIT
line=$(bash "$here/../scripts/etcd.sh" start)
url=${line#etcd on }
out=${OUT:-$here/results/rules-$(date -u +%F).jsonl}
# shellcheck disable=SC1091
. "$here/machine.sh"
machine_info "$here/.."
machine_line bench=rules_bench build="$(basename "$build")" | tee -a "$out"
status=0
"$bench" --etcd "$url" "$@" | tee -a "$out" || status=$?
echo "rules.sh: appended to $out" >&2
exit "$status"
