#!/usr/bin/env bash
# echo_server answers gRPC clients on its port (docs/grpc.md): echo_client
# --protocol grpc (unary and the three streaming methods), and the two
# snippets docs/grpc.md shows, run as they are written there: Python grpcio
# (Debian's python3-grpcio, run by /usr/bin/python3) and grpc-js (installed
# with npm ci from tests/interop/peers/node's lock file into a temporary
# directory); and grpc-js reading echo_server --load-reports' ORCA trailer.
# Every wait is bounded; no process is left behind.
#
#   echo_grpc_test.sh PATH/TO/echo_server PATH/TO/echo_client SOURCE_DIR
set -euo pipefail

server_bin=${1:?usage: echo_grpc_test.sh ECHO_SERVER ECHO_CLIENT SOURCE_DIR}
client_bin=${2:?usage: echo_grpc_test.sh ECHO_SERVER ECHO_CLIENT SOURCE_DIR}
src=${3:?usage: echo_grpc_test.sh ECHO_SERVER ECHO_CLIENT SOURCE_DIR}
doc="$src/docs/grpc.md"

tmp=$(mktemp -d)
server_pid=""
orca_pid=""
cleanup() {
  for pid in $server_pid $orca_pid; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

"$server_bin" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
line=""
for _ in $(seq 300); do
  line=$(head -n 1 "$tmp/server.out" 2>/dev/null || true)
  [ -n "$line" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
case $line in
  "listening on 127.0.0.1:"*) addr=${line#listening on } ;;
  *) echo "FAIL: echo_server did not start: '$line' $(cat "$tmp/server.err")" >&2; exit 1 ;;
esac
port=${addr##*:}

# A JSON summary's top-level number.
field() { sed -e 's/"errors":{[^}]*}//' -e 's/"providers":\[[^]]*\]//' <<<"$1" | grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }

# echo_client on the gRPC wire: unary calls, then each streaming method.
out=$("$client_bin" --server "$addr" --protocol grpc --json --calls 200 --concurrency 8 --fail-on-error 2>"$tmp/client.err" | tail -n 1) ||
  fail "echo_client --protocol grpc: $(cat "$tmp/client.err")"
[ "$(field "$out" ok)" = 200 ] || fail "unary on gRPC: expected ok 200: $out"
for method in count sum chat; do
  out=$("$client_bin" --server "$addr" --protocol grpc --json --method $method --streams 3 --count 20 2>"$tmp/client.err" |
        tail -n 1) || fail "echo_client --protocol grpc --method $method: $(cat "$tmp/client.err")"
  [ "$(field "$out" streams_ok)" = 3 ] || fail "$method on gRPC: expected streams_ok 3: $out"
done

# A fenced block of docs/grpc.md (the first one in LANG), with the doc's port replaced by ours.
snippet() { awk -v lang="$1" '$0 == "```" lang {on=1; next} on && $0 == "```" {exit} on {print}' "$doc" | sed "s/50051/$port/g"; }

# Python grpcio, as docs/grpc.md writes it.
snippet python >"$tmp/echo.py"
[ -s "$tmp/echo.py" ] || fail "no python snippet in docs/grpc.md"
if py_out=$(/usr/bin/python3 "$tmp/echo.py" 2>&1); then
  [ "$py_out" = "b'hello'" ] || fail "python snippet printed '$py_out', expected b'hello'"
else
  fail "python snippet: $py_out"
fi

# grpc-js, as docs/grpc.md writes it, with the peers' pinned packages.
snippet js >"$tmp/echo.js"
[ -s "$tmp/echo.js" ] || fail "no js snippet in docs/grpc.md"
mkdir "$tmp/node"
cp "$src/tests/interop/peers/node/package.json" "$src/tests/interop/peers/node/package-lock.json" "$tmp/node/"
if (cd "$tmp/node" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
  cp "$tmp/echo.js" "$tmp/node/echo.js"
  if js_out=$(cd "$tmp/node" && node echo.js 2>&1); then
    [ "$js_out" = "hello" ] || fail "js snippet printed '$js_out', expected hello"
  else
    fail "js snippet: $js_out"
  fi
  # Load reports (docs/load_balancing.md): grpc-js, which nobody here wrote,
  # reads echo_server --load-reports' endpoint-load-metrics-bin trailer.
  cat >"$tmp/node/orca.js" <<'JS'
// Reads the endpoint-load-metrics-bin trailer (ORCA's OrcaLoadReport) of echo
// calls with grpc-js and prints its CPU utilization and named metrics.
const grpc = require('@grpc/grpc-js');
const port = process.argv[2];
const client = new grpc.Client('127.0.0.1:' + port, grpc.credentials.createInsecure());
const bytes = (b) => b;
// OrcaLoadReport: 1 cpu_utilization (double), 8 named_metrics (map<string,double>), 9 application_utilization.
function parse(buf) {
  const out = { named: {} };
  let i = 0;
  const varint = () => { let v = 0, s = 0, b; do { b = buf[i++]; v += (b & 0x7f) * 2 ** s; s += 7; } while (b & 0x80); return v; };
  while (i < buf.length) {
    const key = varint(), field = Math.floor(key / 8), type = key % 8;
    if (type === 1) { const d = buf.readDoubleLE(i); i += 8; if (field === 1) out.cpu = d; if (field === 6) out.rps = d; if (field === 9) out.app = d; }
    else if (type === 2) {
      const len = varint(), end = i + len;
      if (field === 8) { let k = '', v = 0; while (i < end) { const kk = varint(); if (kk === 10) { const l = varint(); k = buf.toString('utf8', i, i + l); i += l; } else if (kk === 17) { v = buf.readDoubleLE(i); i += 8; } else { throw new Error('bad map entry'); } } out.named[k] = v; }
      i = end;
    } else if (type === 0) { varint(); }
    else if (type === 5) { i += 4; }
    else throw new Error('bad wire type ' + type);
  }
  return out;
}
let seen = 0, calls = 0;
function one() {
  const call = client.makeUnaryRequest('/echo', bytes, bytes, Buffer.from('x'), { deadline: Date.now() + 5000 }, (err) => {
    if (err) { console.error('call failed: ' + err.message); process.exit(1); }
  });
  call.on('status', (status) => {
    const v = status.metadata.get('endpoint-load-metrics-bin');
    if (v.length > 0) {
      const r = parse(v[0]);
      if (!(r.cpu >= 0 && r.cpu <= 1) || !('inflight' in r.named)) { console.error('bad report ' + JSON.stringify(r)); process.exit(1); }
      if (seen++ === 0) console.log('report ' + JSON.stringify(r));
    }
    if (++calls < 200 && seen < 3) setTimeout(one, 5); else { console.log('reports ' + seen + ' of ' + calls + ' calls'); client.close(); }
  });
}
one();
JS
  "$server_bin" --port 0 --load-reports --load-report-interval-ms 10 >"$tmp/orca_server.out" 2>"$tmp/orca_server.err" &
  orca_pid=$!
  orca_line=""
  for _ in $(seq 300); do
    orca_line=$(head -n 1 "$tmp/orca_server.out" 2>/dev/null || true)
    [ -n "$orca_line" ] && break
    kill -0 "$orca_pid" 2>/dev/null || break
    sleep 0.1
  done
  if orca_out=$(cd "$tmp/node" && node orca.js "${orca_line##*:}" 2>&1); then
    grep -q '^reports 3 of ' <<<"$orca_out" || fail "grpc-js read no load report trailer: $orca_out"
    grep -q '"cpu":' <<<"$orca_out" || fail "grpc-js: the report carries no cpu_utilization: $orca_out"
  else
    fail "grpc-js load reports: $orca_out"
  fi
  kill -TERM "$orca_pid"
  wait "$orca_pid" || fail "echo_server --load-reports exited with $? after SIGTERM"
  orca_pid=""
else
  fail "npm ci for @grpc/grpc-js failed: $(tail -n 5 "$tmp/node/npm.log")"
fi

kill -TERM "$server_pid"
for _ in $(seq 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
wait "$server_pid" || fail "echo_server exited with $? after SIGTERM"
server_pid=""

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "echo_grpc: ok"
