#!/usr/bin/env bash
# Builds the peer benchmarks (bench/peers/README.md) into <repo>/build/peers:
#   asio_echo, grpc_echo, grpc_stream,
#   asio_timer_bench                         (g++ -std=c++20 -O2)
#   java/NettyTimerBench.class               (javac; run it with bench/peers/netty_timer_bench.sh)
# First installs the Debian 12 packages they need if any is missing (as root,
# or through sudo), as scripts/install_deps.sh does for wheelrpc itself. A
# target is rebuilt only when it is missing or older than one of its sources
# (or this script), so the compare scripts run this before every comparison.
# Prints where the binaries are.
#
#   bench/peers/build.sh
#   CXX=clang++ JOBS=1 bench/peers/build.sh
#
# Environment: CXX (default g++), JOBS (builds at once, default 2),
# NETTY_JAR (default /usr/share/java/netty-common.jar).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/build/peers"
jobs="${JOBS:-2}"
case $jobs in ''|*[!0-9]*|0) echo "build.sh: JOBS takes a number >= 1" >&2; exit 2 ;; esac
netty_jar="${NETTY_JAR:-/usr/share/java/netty-common.jar}"

# ---- Debian packages ---------------------------------------------------------
PKGS=(g++ pkg-config libboost1.81-dev libboost-json1.81-dev  # the C++ peers (Asio; JsonLine on Boost.JSON)
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # gRPC 1.51, protobuf 3.21
      default-jdk-headless libnetty-java)  # OpenJDK 17, Netty 4.1.48 (netty-common.jar)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build.sh: installing: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[ -f "$netty_jar" ] || { echo "build.sh: $netty_jar not found (libnetty-java; or set NETTY_JAR)" >&2; exit 1; }

# ---- targets -----------------------------------------------------------------
cxx="${CXX:-g++}"
cxxflags=(-std=c++20 -O2 -Wall -Wextra -Wpedantic -pthread -I"$here" -I"$repo/bench" -I"$repo/examples")
# bench_util.h's JsonLine writes through Boost.JSON.
libs=(-lboost_json)
common=("$here/peer_util.h" "$repo/bench/bench_util.h" "$repo/examples/support/latency_histogram.h"
        "$repo/examples/support/json_line.h" "$here/build.sh")
mkdir -p "$out/gen" "$out/java"

stale() {  # target sources...: true when the target is missing or older than a source
  local target=$1 src
  shift
  [ -e "$target" ] || return 0
  for src in "$@"; do [ "$src" -nt "$target" ] && return 0; done
  return 1
}

# The gRPC code protoc generates from echo.proto and stream.proto, first:
# grpc_echo and grpc_stream need it.
gen="$out/gen"
for proto in echo stream; do
  if stale "$gen/$proto.grpc.pb.cc" "$here/$proto.proto" "$here/build.sh"; then
    echo "build.sh: protoc $proto.proto" >&2
    protoc -I "$here" --cpp_out="$gen" --grpc_out="$gen" \
      --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" "$here/$proto.proto"
  fi
done

# Each build writes NAME.tmp and renames it, so a failed one leaves no binary.
build_asio_echo() {
  "$cxx" "${cxxflags[@]}" "$here/asio_echo.cc" "${libs[@]}" -o "$out/asio_echo.tmp" && mv "$out/asio_echo.tmp" "$out/asio_echo"
}
build_asio_timer_bench() {
  "$cxx" "${cxxflags[@]}" "$here/asio_timer_bench.cc" "${libs[@]}" -o "$out/asio_timer_bench.tmp" &&
    mv "$out/asio_timer_bench.tmp" "$out/asio_timer_bench"
}
build_grpc() {  # NAME PROTO: NAME.cc with PROTO's generated code
  local flags
  read -r -a flags <<<"$(pkg-config --cflags --libs grpc++ protobuf)"
  "$cxx" "${cxxflags[@]}" -I"$gen" "$here/$1.cc" "$gen/$2.pb.cc" \
    "$gen/$2.grpc.pb.cc" "${flags[@]}" "${libs[@]}" -o "$out/$1.tmp" && mv "$out/$1.tmp" "$out/$1"
}
build_grpc_echo() { build_grpc grpc_echo echo; }
build_grpc_stream() { build_grpc grpc_stream stream; }
build_netty_timer_bench() {
  javac -encoding UTF-8 -Xlint:all -d "$out/java" -cp "$netty_jar" "$here/NettyTimerBench.java"
}

steps=()
stale "$out/asio_echo" "$here/asio_echo.cc" "${common[@]}" && steps+=(asio_echo)
stale "$out/grpc_echo" "$here/grpc_echo.cc" "$gen/echo.grpc.pb.cc" "${common[@]}" && steps+=(grpc_echo)
stale "$out/grpc_stream" "$here/grpc_stream.cc" "$gen/stream.grpc.pb.cc" "${common[@]}" && steps+=(grpc_stream)
stale "$out/asio_timer_bench" "$here/asio_timer_bench.cc" "${common[@]}" && steps+=(asio_timer_bench)
stale "$out/java/NettyTimerBench.class" "$here/NettyTimerBench.java" "$here/build.sh" && steps+=(netty_timer_bench)

# At most $jobs builds at once; every one runs even if another fails.
failed=()
running=()  # "pid:name"
reap_one() {
  local done_pid rc=0 i
  wait -n -p done_pid "${running[@]%%:*}" || rc=$?
  for i in "${!running[@]}"; do
    if [ "${running[$i]%%:*}" = "$done_pid" ]; then
      [ "$rc" = 0 ] || failed+=("${running[$i]#*:}")
      unset "running[$i]"
    fi
  done
  running=("${running[@]}")
}
for step in "${steps[@]}"; do
  echo "build.sh: building $step" >&2
  "build_$step" &
  running+=("$!:$step")
  if [ ${#running[@]} -ge "$jobs" ]; then reap_one; fi
done
while [ ${#running[@]} -gt 0 ]; do reap_one; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "build.sh: failed: ${failed[*]}" >&2
  exit 1
fi
[ ${#steps[@]} -gt 0 ] || echo "build.sh: everything is up to date" >&2

echo "peers in $out:"
echo "  $out/asio_echo          server|client  (boost_asio_tcp_echo)"
echo "  $out/grpc_echo          server|client  (grpc_cpp)"
echo "  $out/grpc_stream        server|client  (grpc_cpp, workload stream)"
echo "  $out/asio_timer_bench   churn|accuracy|idle  (boost_asio_steady_timer)"
echo "  $out/java/NettyTimerBench.class, run by $here/netty_timer_bench.sh  (netty_hashedwheeltimer)"
