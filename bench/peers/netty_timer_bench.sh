#!/usr/bin/env bash
# Runs bench/peers/NettyTimerBench.java, as built by bench/peers/build.sh into
# build/peers/java, on the JVM settings of every run: a fixed 1 GiB heap and
# G1, so runs are alike from machine to machine. The arguments are the
# benchmark's:
#   bench/peers/netty_timer_bench.sh churn P K | accuracy N | idle TICK_MS SECONDS
# Environment: NETTY_JAR (default /usr/share/java/netty-common.jar, Debian's
# libnetty-java), JAVA (default java).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
classes="$repo/build/peers/java"
[ -f "$classes/NettyTimerBench.class" ] || { echo "netty_timer_bench.sh: run bench/peers/build.sh first" >&2; exit 1; }
exec "${JAVA:-java}" -Xms1g -Xmx1g -XX:+UseG1GC \
  -cp "$classes:${NETTY_JAR:-/usr/share/java/netty-common.jar}" NettyTimerBench "$@"
