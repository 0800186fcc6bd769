#!/usr/bin/env bash
# scripts/etcd.sh start / status / stop against the real /usr/bin/etcd, in a
# state directory of its own (so it runs in parallel with anything else).
# Exits 77 (skipped) when etcd is not installed.
#
#   etcd_script_test.sh PATH/TO/scripts/etcd.sh
set -euo pipefail

script=${1:?usage: etcd_script_test.sh PATH/TO/etcd.sh}
fail() { echo "FAIL: $*" >&2; exit 1; }

# Without etcd the script must say how to install it, whether or not it is here.
out=$(WHEELRPC_ETCD_BIN=/nonexistent/etcd WHEELRPC_ETCD_STATE_DIR=/nonexistent/state bash "$script" start 2>&1) &&
  fail "start without etcd succeeded"
grep -q "apt-get install etcd-server" <<<"$out" || fail "no install hint without etcd: $out"

if [ ! -x /usr/bin/etcd ]; then
  echo "SKIP: /usr/bin/etcd not installed"
  exit 77
fi

state=$(mktemp -d "${TMPDIR:-/tmp}/wheelrpc-etcd-test.XXXXXX")
export WHEELRPC_ETCD_STATE_DIR=$state/state
cleanup() {
  bash "$script" stop >/dev/null 2>&1 || true
  rm -rf -- "$state"
}
trap cleanup EXIT

bash "$script" status >/dev/null 2>&1 && fail "status before start succeeded"

out=$(bash "$script" start) || fail "start failed: $out"
[[ $out =~ ^etcd\ on\ etcd://127\.0\.0\.1:([0-9]+)$ ]] || fail "unexpected start output: '$out'"
port=${BASH_REMATCH[1]}
curl -s --max-time 5 "http://127.0.0.1:$port/health" | grep -q '"health": *"true"' || fail "not healthy on $port"

# shellcheck disable=SC1091
. "$WHEELRPC_ETCD_STATE_DIR/state"
[ -d "$DATA_DIR" ] || fail "no data directory $DATA_DIR"
kill -0 "$PID" 2>/dev/null || fail "pid $PID not running"

[ "$(bash "$script" status)" = "$out" ] || fail "status does not print the start line"
[ "$(bash "$script" start)" = "$out" ] || fail "a second start did not find the running etcd"

bash "$script" stop >/dev/null || fail "stop failed"
# Gone, or a zombie its new parent has not reaped yet; a reused pid is not etcd.
running() {
  local stat
  stat=$(cat "/proc/$PID/stat" 2>/dev/null) || return 1
  [[ $stat == *"(etcd) "[!Z]* ]]
}
for _ in $(seq 50); do running || break; sleep 0.1; done
running && fail "etcd $PID still runs after stop"
[ ! -e "$DATA_DIR" ] || fail "data directory $DATA_DIR left behind"
[ ! -e "$WHEELRPC_ETCD_STATE_DIR" ] || fail "state directory left behind"
bash "$script" status >/dev/null 2>&1 && fail "status after stop succeeded"
bash "$script" stop >/dev/null || fail "a second stop failed"
echo "PASS"
