#!/usr/bin/env bash
# Installs the Debian 12 packages wheelrpc builds with, if any is missing.
# Needs root (or sudo) only when something has to be installed; does nothing
# when everything is present.
#   scripts/install_deps.sh         # what the build and the tests need
#   scripts/install_deps.sh fuzz    # plus clang and libFuzzer (scripts/fuzz.sh)
#   scripts/install_deps.sh clang   # plus clang and clang-format (the clang-tsa preset; scripts/format.sh)
#   scripts/install_deps.sh callgrind # plus valgrind and clang (bench/callgrind_guard.sh)
#   scripts/install_deps.sh interop # the same: the gRPC interop peers' stacks are in the default set
set -euo pipefail

PKGS=(g++ cmake ninja-build pkg-config libboost1.81-dev libspdlog-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      libboost-json1.81-dev libboost-program-options1.81-dev
      protobuf-compiler libprotobuf-dev libprotoc-dev  # protoc, and protoc-gen-wheelrpc's libraries
      libssl-dev openssl  # TLS (Asio SSL over OpenSSL 3); openssl: the TLS tests' certificates
      libzstd-dev liblz4-dev zlib1g-dev  # the payload compression codecs (zstd, lz4, gzip/deflate)
      libnghttp2-dev        # HTTP/2 for the gRPC wire (docs/grpc.md)
      etcd-server etcd-client curl  # etcd 3.4 (/usr/bin/etcd, etcdctl) for the registry tests; curl: scripts/etcd.sh
      prometheus            # promtool: the admin tests check the /metrics exposition with it
      chromium              # headless: the admin pages' browser tests
      python3-matplotlib    # bench/plot.py (and its test)
      # The gRPC interop tests' peers (tests/interop/peers/README.md): gRPC C++ 1.51 and
      # grpc_cpp_plugin, grpcio for /usr/bin/python3 and grpc_python_plugin
      libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-protobuf
      # grpc_tools.protoc: the typed greeter's Python client (docs/grpc.md, tests/typed_foreign)
      python3-grpc-tools
      grpc-proto            # gRPC's own .proto files: health and reflection (services/)
      iproute2              # ss and ip: the rolling-restart and partition tests watch connections and routes
)
# Node and npm for the grpc-js peer, unless an npm is already there (Debian's would conflict with it)
command -v npm >/dev/null || PKGS+=(nodejs npm)
case "${1:-}" in
  fuzz) PKGS+=(clang libclang-rt-14-dev) ;;
  clang) PKGS+=(clang clang-format) ;;  # clang 14 over libstdc++ 12: the clang-tsa preset; the format check
  callgrind) PKGS+=(valgrind clang) ;;  # the instruction-count guard (bench/callgrind_guard.sh)
  interop) ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
