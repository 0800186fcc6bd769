#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the repository's .clang-format.
#   scripts/format.sh          # rewrites the files that differ, in place
#   scripts/format.sh --check  # changes nothing; lists the files that differ
#                              # and exits non-zero if there are any
# Covers every *.h and *.cc under the source directories (not build/).
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format is not installed (Debian: apt-get install clang-format)" >&2
  exit 2
fi
dirs=(common timer transport rpc protobuf registry admin examples tests bench)
mapfile -t files < <(find "${dirs[@]}" \( -name '*.h' -o -name '*.cc' \) -not -path '*/build/*' | sort)
if ! $check; then
  clang-format --style=file -i "${files[@]}"
  exit 0
fi
differ=()
for f in "${files[@]}"; do
  clang-format --style=file "$f" | cmp -s "$f" - || differ+=("$f")
done
if [ ${#differ[@]} -gt 0 ]; then
  printf '%s\n' "${differ[@]}"
  echo "format: ${#differ[@]} of ${#files[@]} files differ from .clang-format (scripts/format.sh rewrites them)" >&2
  exit 1
fi
