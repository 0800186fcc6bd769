#!/usr/bin/env bash
# Loads the admin pages in headless Chromium and checks what they rendered.
#
#   browser_test.sh BASE_URL OUT_DIR        e.g. browser_test.sh http://127.0.0.1:9100 /tmp/out
#
# For /status, /connections and /timeouts: dumps the DOM after the page's
# first refresh (OUT_DIR/<page>.dom.html) and saves a 1280x900 screenshot
# (OUT_DIR/<page>.png); Chromium's own log is OUT_DIR/<page>.*.log.
# Checks, with grep on the dumped DOM:
#   /status       "last updated" filled in, no error banner, a tr.method-row
#                 for $EXPECT_METHOD (default echo) whose calls cell is a
#                 non-zero number, #timer-pending holding a number, and
#                 svg#lateness-chart with at least one rect.bar
#   /connections  "last updated" filled in, no error banner, at least one
#                 tr.conn-row and a #conn-summary
#   /timeouts     "last updated" filled in, no error banner, tr.timeout-row
#                 rows or the "no timeouts yet" row
# and, in the browser's console log, no uncaught exception and nothing blocked
# by a Content-Security-Policy.
#
# With LAYOUT_CHECKS set (only the fixture server has the harness), e.g.
# LAYOUT_CHECKS="connections:td.in-flight timeouts", also loads each
# BASE_URL/layout-check?page=PAGE&cells=SELECTOR in a 1280x900 window: the
# harness (tests/admin/fixture_server.py) measures the page in a 1280x900 frame
# and fails when it, or its .scroll table container, scrolls sideways, or an
# element matching SELECTOR is not wholly in view (OUT_DIR/<page>.layout.html).
#
# Exits 0 when all pass, 1 with a FAIL: line per problem, 77 ("SKIP:") when
# chromium is not installed. $CHROMIUM overrides the binary (default chromium).
#
# Each Chromium run gets a private profile and HOME under OUT_DIR, so parallel
# runs share nothing. --virtual-time-budget makes the dump wait for 3 s of
# page time; virtual time does not advance while a fetch is in flight, so the
# dump comes after the load-time fetch has been rendered (and a few 1 s
# refreshes). Every run is bounded: after 60 s this script kills that PID
# (and the helper processes that carry its private profile path) and fails.
set -euo pipefail

usage="usage: browser_test.sh BASE_URL OUT_DIR"
base=${1:?$usage}
out=${2:?$usage}
base=${base%/}
expect=${EXPECT_METHOD:-echo}
chromium=${CHROMIUM:-chromium}

if ! command -v "$chromium" >/dev/null 2>&1; then
  echo "SKIP: chromium not installed"
  exit 77
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
profiles=$(mktemp -d "$out/chromium-profiles.XXXXXX")
browser_pid=""
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Processes of ours still holding a profile path: Chromium's helpers carry
# --user-data-dir (or the crashpad database) on their command line, and the
# path is unique to this run, so this matches nothing of anyone else's.
kill_leftovers() {
  local pattern pids
  # shellcheck disable=SC2001  # a bracket expression, not a plain substitution
  pattern=$(sed 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$1")  # the path, literally
  pids=$(pgrep -f -- "$pattern" || true)
  [ -z "$pids" ] && return 0
  echo "note: killing chromium helpers left behind: ${pids//$'\n'/ }" >&2
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

kill_browser() {
  local pid=$1 _
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  if [ -n "$browser_pid" ]; then
    kill_browser "$browser_pid"
  fi
  kill_leftovers "$profiles"
  rm -rf -- "$profiles"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_chromium NAME STDOUT ARGS...: one headless run, bounded by 60 s.
run_chromium() {
  local name=$1 stdout=$2
  shift 2
  local profile="$profiles/$name"
  mkdir -p "$profile/home"
  HOME="$profile/home" XDG_CONFIG_HOME="$profile/home/.config" XDG_CACHE_HOME="$profile/home/.cache" \
    "$chromium" --headless --no-sandbox --disable-gpu \
      --user-data-dir="$profile" \
      --no-first-run --no-default-browser-check --disable-extensions --disable-sync \
      --disable-background-networking --disable-component-update --disable-breakpad \
      --disable-dev-shm-usage --mute-audio --hide-scrollbars \
      --enable-logging=stderr --v=0 \
      --virtual-time-budget=3000 \
      "$@" >"$stdout" 2>"$out/$name.log" &
  browser_pid=$!
  local deadline=$((SECONDS + 60))
  while kill -0 "$browser_pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      kill_browser "$browser_pid"
      browser_pid=""
      kill_leftovers "$profile"
      fail "chromium ($name) still running after 60 s; killed it (log: $out/$name.log)"
      return 1
    fi
    sleep 0.1
  done
  local rc=0
  wait "$browser_pid" || rc=$?
  browser_pid=""
  kill_leftovers "$profile"
  if ((rc != 0)); then
    fail "chromium ($name) exited with status $rc (log: $out/$name.log)"
    return 1
  fi
}

# dump PAGE: the DOM of BASE_URL/PAGE after the first refresh, in OUT_DIR/PAGE.dom.html.
dump() {
  local page=$1 dom="$out/$1.dom.html"
  run_chromium "$page.dump" "$dom" --dump-dom "$base/$page" || return 1
  if [ ! -s "$dom" ]; then
    fail "/$page: chromium dumped an empty DOM (log: $out/$page.dump.log)"
    return 1
  fi
  # The page's console (--enable-logging): an exception in its script, or
  # something its Content-Security-Policy (when the server sends one) blocked.
  local console
  console=$(grep -E ':CONSOLE[:(]' "$out/$page.dump.log" | grep -E 'Uncaught|Content Security Policy' || true)
  [ -z "$console" ] || fail "/$page: the browser console says:"$'\n'"$console"
}

screenshot() {
  local page=$1 png="$out/$1.png"
  rm -f -- "$png"
  run_chromium "$page.screenshot" /dev/null --run-all-compositor-stages-before-draw \
    --window-size=1280,900 --screenshot="$png" "$base/$page" || return 0
  if [ ! -s "$png" ] || [ "$(head -c 4 "$png" | tail -c 3)" != "PNG" ]; then
    fail "/$page: no screenshot in $png (log: $out/$page.screenshot.log)"
  fi
}

# The checks common to every page: the first refresh happened and succeeded.
check_refreshed() {
  local page=$1 dom="$out/$1.dom.html" updated banner
  updated=$(grep -oP '<span id="updated">\K[^<]*' "$dom" || true)
  [[ $updated =~ ^[0-9]{2}:[0-9]{2}:[0-9]{2}$ ]] ||
    fail "/$page: \"last updated\" is '$updated', not HH:MM:SS: the page never rendered its JSON (DOM: $dom)"
  banner=$(grep -oP '<div id="error"[^>]*>' "$dom" || true)
  if [ -z "$banner" ]; then
    fail "/$page: no #error element (DOM: $dom)"
  elif [[ $banner != *hidden* ]]; then
    fail "/$page: error banner shown: '$(grep -oP '<div id="error"[^>]*>\K[^<]*' "$dom" || true)'"
  fi
}

# As Chromium serializes an attribute value.
html_attr() {
  local s=$1
  s=${s//&/&amp;}
  s=${s//\"/&quot;}
  s=${s//</&lt;}
  s=${s//>/&gt;}
  printf '%s' "$s"
}

check_status() {
  local dom="$out/status.dom.html" rows calls row found=0 seen="" pending chart bars=0
  check_refreshed status
  rows=$(grep -oP '<tr class="method-row" data-method="\Q'"$(html_attr "$expect")"'\E">.*?</tr>' "$dom" || true)
  if [ -z "$rows" ]; then
    fail "/status: no tr.method-row with data-method=\"$expect\" (methods shown: $(grep -oP '<tr class="method-row" data-method="\K[^"]*' "$dom" | sort -u | tr '\n' ' '))"
  else
    while IFS= read -r row; do
      calls=$(grep -oP '<td class="[^"]*\bcalls\b[^"]*">\K[^<]*' <<<"$row" || true)
      seen+="'$calls' "
      if [[ $calls =~ ^[0-9,]+$ && $calls =~ [1-9] ]]; then found=1; fi
    done <<<"$rows"
    ((found)) || fail "/status: method '$expect' has no row with a non-zero calls cell (calls: $seen)"
  fi
  pending=$(grep -oP '<dd id="timer-pending">\K[^<]*' "$dom" || true)
  [[ $pending =~ ^[0-9,]+$ ]] || fail "/status: #timer-pending is '$pending', not a number"
  chart=$(grep -oP '<svg id="lateness-chart".*?</svg>' "$dom" || true)
  if [ -z "$chart" ]; then
    fail "/status: no svg#lateness-chart"
  else
    bars=$({ grep -oP '<rect class="bar"' <<<"$chart" || true; } | wc -l)
    ((bars >= 1)) || fail "/status: svg#lateness-chart has no rect.bar"
  fi
  echo "/status: '$expect' calls ${seen:-none}; timer pending '$pending'; ${bars:-0} lateness bars"
}

check_connections() {
  local dom="$out/connections.dom.html" rows summary
  check_refreshed connections
  rows=$({ grep -oP '<tr class="conn-row[ "]' "$dom" || true; } | wc -l)
  ((rows >= 1)) || fail "/connections: no tr.conn-row"
  summary=$(grep -oP '<div id="conn-summary">\K[^<]*' "$dom" || true)
  [[ $summary =~ [0-9]+\ connection ]] || fail "/connections: #conn-summary is '$summary'"
  echo "/connections: $rows rows; $summary"
}

check_timeouts() {
  local dom="$out/timeouts.dom.html" rows
  check_refreshed timeouts
  rows=$({ grep -oP '<tr class="timeout-row"' "$dom" || true; } | wc -l)
  if ((rows == 0)) && ! grep -q '<tr id="no-timeouts">' "$dom"; then
    fail "/timeouts: neither tr.timeout-row nor the \"no timeouts yet\" row"
  fi
  echo "/timeouts: $rows rows"
}

# layout SPEC: SPEC is PAGE or PAGE:SELECTOR (see LAYOUT_CHECKS above).
layout() {
  local page=${1%%:*} cells="" dom result
  [[ $1 == *:* ]] && cells=${1#*:}
  dom="$out/$page.layout.html"
  run_chromium "$page.layout" "$dom" --window-size=1280,900 \
    --dump-dom "$base/layout-check?page=$page&cells=$cells" || return 0
  result=$(grep -oP '<pre id="layout-result">\K[^<]*' "$dom" || true)
  if [[ $result == "LAYOUT OK"* ]]; then
    echo "/$page: $result"
  elif [[ $result != "LAYOUT FAIL"* ]]; then
    fail "/$page: the layout check gave no verdict within 3 s of page time ('$result'; DOM: $dom)"
  else
    fail "/$page: $result (DOM: $dom)"
  fi
}

echo "chromium: $("$chromium" --version 2>/dev/null | tail -n 1)"
if dump status; then check_status; fi
if dump connections; then check_connections; fi
if dump timeouts; then check_timeouts; fi
screenshot status
screenshot connections
screenshot timeouts
for spec in ${LAYOUT_CHECKS:-}; do layout "$spec"; done

if ((failures)); then
  echo "FAIL: $failures problem(s) in the admin pages at $base (output in $out)" >&2
  exit 1
fi
echo "PASS: admin pages at $base (DOM dumps and screenshots in $out)"
