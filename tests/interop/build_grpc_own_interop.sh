#!/usr/bin/env bash
# Builds gRPC's OWN C++ interop programs (grpc/grpc's test/cpp/interop:
# interop_client and interop_server) from Debian's grpc source package, the
# release of the installed libgrpc++-dev (Debian 12: 1.51.1), against Debian's
# gRPC C++, protobuf and abseil. They are the reference peers of
# docs/grpc_interop.md, "gRPC's own interop programs"; peer_matrix.sh runs
# them as the peer "grpc_own".
#
#   tests/interop/build_grpc_own_interop.sh [BUILD_DIR]
#
# BUILD_DIR (default build/grpc-own-interop at the repository's top) gets:
#   src/grpc-1.51.1/         the source, from `apt-get source grpc=VERSION`
#   grpc_own_interop_client  gRPC's interop_client
#   grpc_own_interop_server  gRPC's interop_server
# then, to run them (GRPC_OWN_DIR is what peer_matrix.sh reads):
#   GRPC_OWN_DIR=BUILD_DIR WHEELRPC_BIN_DIR=build/dev/examples/interop \
#     SERVERS=wheelrpc CLIENTS=grpc_own tests/interop/peer_matrix.sh
#
# As root it installs what is missing (apt-get: libgrpc++-dev,
# protobuf-compiler-grpc, libabsl-dev, cmake, ninja-build, dpkg-dev, g++) and,
# when apt has no source entries, adds Debian bookworm's deb-src entry
# (/etc/apt/sources.list.d/wheelrpc-deb-src.sources) and runs apt-get update.
# Not root: it only checks, and says what to install.
#
# Environment:
#   JOBS                 parallel compile jobs (default 2)
#   WHEELRPC_BUILD_LOCK  a file to flock around the compile (a machine whose
#                        builds are serialized: build/.build.lock)
#
# About a minute on 2 cores (72 CPU-seconds of compiling), and it fetches a
# source package and may change apt's sources: not in the default CI run, a
# documented manual run. The source is fetched once; running the script again
# rebuilds only what changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build=${1:-$root/build/grpc-own-interop}
jobs=${JOBS:-2}

say() { echo "build_grpc_own_interop.sh: $*" >&2; }
die() { say "$*"; exit 1; }

packages=(libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
          cmake ninja-build dpkg-dev g++ pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (apt-get install ${missing[*]})"
  say "installing ${missing[*]}"
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi

# The source of exactly the release installed: its private headers must match the library.
version=$(dpkg-query -W -f='${source:Version}' libgrpc++-dev)
upstream=${version%-*}
upstream=${upstream#*:}
src="$build/src/grpc-$upstream"
mkdir -p "$build/src"
if [ ! -f "$src/test/cpp/interop/interop_client.cc" ]; then
  if ! apt-get source --print-uris --only-source "grpc=$version" >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "apt has no source entry for grpc $version: add a deb-src line for bookworm"
    say "adding Debian bookworm's deb-src entry and updating apt's lists"
    cat >/etc/apt/sources.list.d/wheelrpc-deb-src.sources <<'EOF'
# Added by wheelrpc's tests/interop/build_grpc_own_interop.sh: source packages (apt-get source grpc).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update >/dev/null
  fi
  say "fetching grpc $version's source into $build/src"
  rm -rf "$src"
  (cd "$build/src" && apt-get source --only-source "grpc=$version" >"$build/src/apt-get-source.log" 2>&1) ||
    { cat "$build/src/apt-get-source.log" >&2; die "apt-get source grpc=$version failed"; }
  [ -f "$src/test/cpp/interop/interop_client.cc" ] || die "no $src/test/cpp/interop/interop_client.cc after apt-get source"
fi

cmake -S "$here/grpc_own" -B "$build" -G Ninja -DGRPC_SOURCE_DIR="$src" >"$build/cmake.log" 2>&1 ||
  { cat "$build/cmake.log" >&2; die "cmake failed"; }
compile=(ninja -C "$build" -j "$jobs" grpc_own_interop_client grpc_own_interop_server)
if [ -n "${WHEELRPC_BUILD_LOCK:-}" ]; then compile=(flock "$WHEELRPC_BUILD_LOCK" "${compile[@]}"); fi
nice "${compile[@]}"
echo "$build/grpc_own_interop_client"
echo "$build/grpc_own_interop_server"
