#!/usr/bin/env bash
# Instructions per stream message in the client, counted by callgrind, on
# rpc_bench's stream workload (`rpc_bench client --stream MODE`,
# bench/stream_bench.cc): only in the client's measured window, so the
# connection, the streams' opening and closing and the warm-up are left
# out, and only in its event loop's handlers, so the loop's waiting (the
# reactor's epoll_wait), which varies from run to run, is left out. What
# is counted: the stream engine, the transport (the channel's reads,
# frames and writes; HTTP/2 for grpc) and the bench's own handlers (which
# a change of the library does not touch), / the messages the client
# counted in that window. Repeatable to a fraction of a percent where
# messages/s on a shared 2-core machine spread by 20 % from round to round:
# the way to see a change of a few instructions per message. Needs valgrind.
#
#   bench/callgrind_per_message.sh RPC_BENCH [native|grpc] [STREAMS] [DURATION]
#   bench/callgrind_per_message.sh build/release/bench/rpc_bench native 128 3
#   # -> protocol native messages 79934 Ir 390998479 Ir/message 4891.5
#
# The server runs natively; only the client runs under callgrind:
#   client --stream MODE --streams STREAMS --payload PAYLOAD --warmup WARMUP --duration DURATION
# with MODE echo (or oneway), PAYLOAD 64 and WARMUP 1 unless set in the
# environment; grpc adds --protocol grpc (native adds nothing: it is the
# client's default). CLIENT_FLAGS adds flags to the client.
#
# How: collection is on inside `main` and off inside
# boost::asio::detail::epoll_reactor::run (a toggle flips on each entry and
# exit; the timer's worker thread never enters main). The window is cut by
# --dump-before=getrusage: the client reads its CPU time (getrusage) twice,
# as its window opens and as it closes, and the second dump holds the
# window. No toggles on the library's classes (StreamCore::*, the
# transports, ClientStream): those nest (a transport calls the stream
# engine, which calls the transport and runs completions inline, which call
# the stream again), and a toggled function entered inside another turns
# collection off until it returns, so names that move or get inlined would
# change the count.
set -euo pipefail
bin=${1:?usage: callgrind_per_message.sh RPC_BENCH [native|grpc] [STREAMS] [DURATION]}
protocol=${2:-native}
s=${3:-128}
d=${4:-3}
mode=${MODE:-echo}
payload=${PAYLOAD:-64}
warmup=${WARMUP:-1}
case $protocol in
  native) protocol_flags=() ;;
  grpc) protocol_flags=(--protocol grpc) ;;
  *) echo "callgrind_per_message.sh: the protocol is native or grpc (got '$protocol')" >&2; exit 2 ;;
esac
case $mode in
  echo|oneway) ;;
  *) echo "callgrind_per_message.sh: MODE is echo or oneway (got '$mode')" >&2; exit 2 ;;
esac
for v in "$s" "$d" "$payload" "$warmup"; do
  case $v in ''|*[!0-9]*) echo "callgrind_per_message.sh: STREAMS, DURATION, PAYLOAD and WARMUP take whole numbers" >&2; exit 2 ;; esac
done
command -v valgrind >/dev/null || { echo "callgrind_per_message.sh: valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
"$bin" server --port 0 --port-file "$tmp/port" --lifetime $((warmup + d + 300)) &
server_pid=$!
for _ in $(seq 100); do  # up to 10 s; give up at once if the server died
  if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
[ -s "$tmp/port" ] || { echo "callgrind_per_message.sh: $bin server did not start" >&2; exit 1; }
# Valgrind's messages go to $tmp/vg, the client's to stderr.
# shellcheck disable=SC2086  # CLIENT_FLAGS are words
line=$(valgrind --tool=callgrind --log-file="$tmp/vg" --callgrind-out-file="$tmp/cg" --collect-atstart=no \
  '--toggle-collect=main' \
  '--toggle-collect=boost::asio::detail::epoll_reactor::run*' \
  '--dump-before=*getrusage' \
  "$bin" client --port "$(cat "$tmp/port")" --stream "$mode" --streams "$s" --payload "$payload" \
  --warmup "$warmup" --duration "$d" "${protocol_flags[@]}" ${CLIENT_FLAGS:-}) || {
  rc=$?
  echo "callgrind_per_message.sh: the client failed (exit status $rc)" >&2
  exit "$rc"
}
# The dumps made at getrusage, in order: [0] up to the window, [1] the window.
/usr/bin/python3 - "$protocol" "$line" "$tmp" <<'EOF'
import glob, json, sys
protocol, line, tmp = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
dumps = []
for path in glob.glob(tmp + "/cg*"):
    part = ir = trigger = None
    with open(path) as f:
        for text in f:
            if text.startswith("part:"):
                part = int(text.split()[1])
            elif text.startswith("desc: Trigger:"):
                trigger = text
            elif text.startswith("summary:"):
                ir = int(text.split()[1])
    if trigger is not None and "getrusage" in trigger:
        dumps.append((part, ir))
dumps.sort()
if len(dumps) != 2 or dumps[1][1] is None:
    sys.exit(f"callgrind_per_message.sh: {len(dumps)} dumps at getrusage, not the window's 2 edges")
messages, ir = line["messages"], dumps[1][1]
print(f"protocol {protocol} messages {messages} Ir {ir} Ir/message {ir / messages:.1f}")
EOF
