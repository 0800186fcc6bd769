#!/usr/bin/env bash
# The admin pages of a real echo_server in headless Chromium (ctest:
# admin_browser): starts echo_server --admin-port 0, makes traffic with
# echo_client (echo calls, timed-out sleeps), keeps one client connected
# while browser_test.sh loads /status, /connections and /timeouts and checks
# the rendered DOM (method rows with non-zero counts, the timer's chart, a
# connection row), and saves screenshots under OUT_DIR. Stops every process
# it started, by PID.
#
#   admin_browser_test.sh EXAMPLES_DIR OUT_DIR
#
# Exits 77 (skipped) when chromium is not installed.
set -euo pipefail

bin=${1:?usage: admin_browser_test.sh EXAMPLES_DIR OUT_DIR}
out=${2:?usage: admin_browser_test.sh EXAMPLES_DIR OUT_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v "${CHROMIUM:-chromium}" >/dev/null 2>&1; then
  echo "SKIP: chromium not installed"
  exit 77
fi
mkdir -p "$out"

pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

"$bin/echo_server" --port 0 --admin-port 0 --drain-timeout-ms 0 >"$out/server.out" 2>"$out/server.err" &
pids+=($!)
# Wait (bounded) for both lines.
for _ in $(seq 1 300); do
  grep -q '^admin on ' "$out/server.out" 2>/dev/null && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "FAIL: echo_server exited"; cat "$out/server.err"; exit 1; }
  sleep 0.1
done
server=$(sed -n 's/^listening on //p' "$out/server.out")
admin=$(sed -n 's/^admin on //p' "$out/server.out")
[ -n "$server" ] && [ -n "$admin" ] || { echo "FAIL: no 'listening on' / 'admin on' line"; cat "$out/server.out"; exit 1; }
echo "server $server, admin $admin"

"$bin/echo_client" --server "$server" --calls 200 --concurrency 4 --fail-on-error >"$out/client_echo.out"
"$bin/echo_client" --server "$server" --method sleep --sleep-ms 300 --timeout-ms 50 --retries 0 --calls 3 \
  >"$out/client_timeouts.out" || true
# One client stays connected (a slow trickle of calls) while the browser looks.
"$bin/echo_client" --server "$server" --method sleep --sleep-ms 200 --timeout-ms 5000 --duration-s 120 \
  >"$out/client_trickle.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -sf "$admin/connections.json" | grep -q '"state":"ready"' && break
  sleep 0.1
done

EXPECT_METHOD=echo bash "$here/browser_test.sh" "$admin" "$out"

# The timeouts page lists the timed-out sleeps.
grep -q "timeout-row" "$out/timeouts.dom.html" ||
  { echo "FAIL: /timeouts shows no timeout row"; exit 1; }
echo "PASS: the admin pages of a live echo_server render its methods, timer and connections"
