#!/usr/bin/env bash
# The admin pages against the fixture server (ctest: admin_pages_browser):
# starts tests/admin/fixture_server.py on a free loopback port, runs
# browser_test.sh against it (with its layout checks: at 1280x900 no page
# scrolls sideways and /connections shows its "in flight", "open streams" and
# "protocol" columns), checks what the fixtures' rows rendered (the server's
# and the client's compression ratios, errors by gRPC status with their
# reasons and the stream methods' table on /status; a connection's protocol
# and open streams, a null heartbeats_sent as "-" on /connections; the caller
# and the provider labelled on /timeouts), checks that the pages polled, runs it
# again against pages whose first fetch fails, and stops the server on the way
# out.
#
#   pages_fixture_test.sh OUT_DIR
#
# Exits 77 (skipped) when chromium is not installed, as browser_test.sh does,
# after the checks that need no browser.
set -euo pipefail

out=${1:?usage: pages_fixture_test.sh OUT_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# First, without a browser: the pages must be self-contained and write data
# as text only (no external scripts, styles, fonts or images, no innerHTML;
# the only absolute URL allowed is the SVG namespace).
pages_dir="$here/../../admin/src/pages"
bad=$(grep -nHE '(src|href|action)="(https?:)?//|@import|url\(|innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(' \
        "$pages_dir"/*.html "$pages_dir"/*.js "$pages_dir"/*.css || true)
bad+=$(grep -nHoE 'https?://[^"'"'"' ]*' "$pages_dir"/*.html "$pages_dir"/*.js "$pages_dir"/*.css |
       grep -v 'http://www.w3.org/2000/svg$' || true)
if [ -n "$bad" ]; then
  echo "FAIL: the pages load something from elsewhere or write HTML from data:" >&2
  echo "$bad" >&2
  exit 1
fi

# The fixture server sends the same Content-Security-Policy as the C++ side
# offers (pages_content_security_policy()), so what passes here passes there.
python3 - "$here/../../admin/src/pages.cc.in" "$here/fixture_server.py" <<'PY' || exit 1
import ast, re, sys
cc = open(sys.argv[1]).read()
m = re.search(r'kContentSecurityPolicy =\s*((?:"[^"]*"\s*)+);', cc)
ours = "".join(re.findall(r'"([^"]*)"', m.group(1))) if m else None
py = open(sys.argv[2]).read()
m = re.search(r'^CONTENT_SECURITY_POLICY = (\(.*?\))$', py, re.S | re.M)
theirs = ast.literal_eval(m.group(1)) if m else None
if ours is None or ours != theirs:
    sys.exit(f"FAIL: Content-Security-Policy differs:\n  pages.cc.in:       {ours}\n  fixture_server.py: {theirs}")
PY

if ! command -v "${CHROMIUM:-chromium}" >/dev/null 2>&1; then
  echo "SKIP: chromium not installed"
  exit 77
fi

mkdir -p "$out"
port_file="$out/fixture_server.port"
rm -f -- "$port_file"

# --max-seconds: even if this script is killed hard, the server goes away.
python3 "$here/fixture_server.py" "$port_file" --max-seconds 300 >"$out/fixture_server.log" 2>&1 &
server_pid=$!
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq 100); do
  [ -s "$port_file" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "FAIL: fixture_server.py exited before writing its port:" >&2
    cat "$out/fixture_server.log" >&2
    exit 1
  fi
  sleep 0.1
done
[ -s "$port_file" ] || { echo "FAIL: fixture_server.py wrote no port in 10 s" >&2; exit 1; }
port=$(<"$port_file")

base="http://127.0.0.1:$port"
# And the layout at 1280x900: no sideways scrolling, "in flight" in view.
LAYOUT_CHECKS="status connections:td.in-flight connections:td.streams connections:td.protocol timeouts" \
  bash "$here/browser_test.sh" "$base" "$out"

# What the fixtures hold, as the pages above rendered it (their DOM dumps).
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# cell ROW CLASS: the text (tags dropped) of the first td of ROW with CLASS in its class list.
cell() {
  { grep -oP '<td class="(?:[^"]* )?\Q'"$2"'\E(?: [^"]*)?"[^>]*>\K.*?(?=</td>)' <<<"$1" || true; } |
    head -n 1 | sed 's/<[^>]*>//g'
}
# role ROW: the role tag in ROW's peer cell.
role() {
  { grep -oP '<td class="(?:[^"]* )?peer(?: [^"]*)?"[^>]*>.*?</td>' <<<"$1" || true; } |
    { grep -oP '<span class="(?:[^"]* )?role(?: [^"]*)?">\K[^<]*' || true; } | head -n 1
}
# /status: each side's compression ratios, the server's box first, then the client's.
ratios=$(grep -oP '<span class="compression"[^>]*>\K[^<]*' "$out/status.dom.html" || true)
expected=$'compression sent 4.21×, received 3.80×\ncompression sent 3.80×, received 4.21×'
[ "$ratios" = "$expected" ] ||
  fail "/status: the compression lines (server, then client) are '${ratios//$'\n'/' | '}', not '${expected//$'\n'/' | '}'"
# /status: errors by gRPC status, each with the framework's detail (none for the application's own status).
status_rows=$(grep -oP '<tr class="method-row[ "].*?</tr>' "$out/status.dom.html" || true)
row=$(grep -F 'data-method="echo"' <<<"$status_rows" | head -n 1 || true)
expected="DEADLINE_EXCEEDED 4 (timeout 3, server_timeout 1), UNAUTHENTICATED 2"
[ "$(cell "$row" errors)" = "$expected" ] ||
  fail "/status: the server's echo row shows errors '$(cell "$row" errors)', not '$expected'"
# /status: a stream method's streams, in their own table under the methods.
row=$(grep -oP '<tr class="stream-row" data-method="chat">.*?</tr>' "$out/status.dom.html" | head -n 1 || true)
[ "$(cell "$row" streams-open)" = "1" ] && [ "$(cell "$row" streams-opened)" = "6" ] &&
  [ "$(cell "$row" stream-messages)" = "1,500 / 2,200" ] && [ "$(cell "$row" ended)" = "ok 3, message_idle 1, error 1" ] ||
  fail "/status: the chat stream row is '$(sed 's/<[^>]*>/|/g' <<<"$row")', not open 1, opened 6, 1,500 / 2,200 messages, ended ok 3, message_idle 1, error 1"
grep -qF '<span class="streams" title="stream messages in 1,500, out 2,200">streams open 1, opened 6</span>' "$out/status.dom.html" ||
  fail "/status: the server box does not show 'streams open 1, opened 6'"
# One conn-row per line, as the page builds them.
conn_rows=$(grep -oP '<tr class="conn-row[ "].*?</tr>' "$out/connections.dom.html" || true)
row=$(grep -F '>127.0.0.1:40124<' <<<"$conn_rows" || true)
# heartbeats_sent null: this side sends no heartbeats on it (a server with them off).
[ "$(cell "$row" heartbeats-sent)" = "-" ] ||
  fail "/connections: the server row with heartbeats_sent null (remote 127.0.0.1:40124) shows '$(cell "$row" heartbeats-sent)' heartbeats sent, not '-'"
row=$(grep -F '>127.0.0.1:40312<' <<<"$conn_rows" || true)
[ "$(cell "$row" heartbeats-sent)" = "492" ] ||
  fail "/connections: the server row with remote 127.0.0.1:40312 shows '$(cell "$row" heartbeats-sent)' heartbeats sent, not '492'"
# Its protocol and its open streams (the JSON's `protocol` and `streams`).
[ "$(cell "$row" protocol)" = "grpc" ] && [ "$(cell "$row" streams)" = "1" ] ||
  fail "/connections: the server row with remote 127.0.0.1:40312 shows protocol '$(cell "$row" protocol)' and '$(cell "$row" streams)' open streams, not grpc and 1"
# /timeouts: the peer of a server row is its caller, of a client row the provider, each labelled.
timeout_rows=$(grep -oP '<tr class="timeout-row".*?</tr>' "$out/timeouts.dom.html" || true)
row=$(grep -F '<td class="side">server</td>' <<<"$timeout_rows" | head -n 1 || true)
if [ "$(cell "$row" peer)" != "caller 127.0.0.1:51234" ] || [ "$(role "$row")" != "caller" ]; then
  fail "/timeouts: the server row's peer is '$(cell "$row" peer)' (role tag '$(role "$row")'), not the caller 127.0.0.1:51234 tagged 'caller'"
fi
row=$(grep -F '4bf92f3577b34da6a3ce929d0e0e4736' <<<"$timeout_rows" || true)
if [ "$(cell "$row" peer)" != "provider 127.0.0.1:7001" ] || [ "$(role "$row")" != "provider" ]; then
  fail "/timeouts: the client row's peer is '$(cell "$row" peer)' (role tag '$(role "$row")'), not the provider 127.0.0.1:7001 tagged 'provider'"
fi
# Its timeline (where the call's time went) under its phase.
grep -qF 'class="timeline muted">timeline: queued 0.0 ms, sent 0.0, socket wrote 0.1, timer fired 51.1 (1.1 late), completed 51.2<' <<<"$row" ||
  fail "/timeouts: the client row does not show its timeline: $row"
((failures == 0)) || exit 1
echo "fixtures: /status shows both sides' compression ratios, errors by status with their reasons and the stream methods; /connections the protocol, open streams and a null heartbeats_sent as '-'; /timeouts labels the caller and the provider and shows the timeline"

# Each page fetched its JSON on load and then every second: every Chromium
# run above (a DOM dump and a screenshot per page, 3 s of page time each)
# should have asked at least twice.
counts=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
           "$base/fixture/requests.json")
echo "requests: $counts"
for page in status connections timeouts; do
  n=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], 0))' "$counts" "/$page.json")
  ((n >= 4)) || { echo "FAIL: /$page.json asked for $n times by 2 page loads of 3 s; the page does not refresh every second" >&2; exit 1; }
done

# The same pages where each JSON answers 503 once: they must retry and recover
# (the checks include "no error banner").
bash "$here/browser_test.sh" "$base/flaky" "$out/flaky"
