#!/usr/bin/env bash
# Checks that every ```cpp block of a guide is a verbatim run of whole lines
# of the example named last before it in the text (`examples/DIR/NAME.cc`),
# so the guide shows the code the tests run. Uses only bash and awk.
#
#   guide_excerpts_test.sh REPO_ROOT [DOC [DIR]]
#   (defaults: docs/writing_a_service.md and examples/guide)
set -euo pipefail

root=${1:?usage: guide_excerpts_test.sh REPO_ROOT}
doc_name=${2:-docs/writing_a_service.md}
dir_name=${3:-examples/guide}
doc=$root/$doc_name
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Block N goes to $tmp/N.block, the file it comes from to $tmp/N.source.
awk -v dir="$tmp" -v pattern="${dir_name//\//\\/}/[a-z_]+\\.cc" -v examples="$dir_name" '
  /^```cpp[ \t]*$/ {
    if (source == "") {
      print "line " NR ": a cpp block with no " examples "/*.cc named before it" > "/dev/stderr"
      bad = 1
    }
    n++
    inside = 1
    out = dir "/" n
    print source > (out ".source")
    close(out ".source")
    printf "" > (out ".block")
    next
  }
  inside && /^```[ \t]*$/ { inside = 0; close(out ".block"); next }
  inside { print > (out ".block"); next }
  {
    line = $0
    while (match(line, pattern)) {
      source = substr(line, RSTART, RLENGTH)
      line = substr(line, RSTART + RLENGTH)
    }
  }
  END { exit bad }
' "$doc"

blocks=0
failed=0
for block in "$tmp"/*.block; do
  [ -e "$block" ] || break
  blocks=$((blocks + 1))
  source=$(cat "${block%.block}.source")
  if ! awk 'FNR == NR { text = text $0 "\n"; next }
            { want = want $0 "\n" }
            END { exit !(index("\n" text, "\n" want) > 0) }' "$root/$source" "$block"; then
    echo "$doc_name: this excerpt is not in $source:" >&2
    sed 's/^/    /' "$block" >&2
    failed=1
  fi
done
if [ "$blocks" -eq 0 ]; then
  echo "$doc_name: no cpp excerpts found" >&2
  exit 1
fi
[ "$failed" -eq 0 ] && echo "guide excerpts: $blocks blocks, all verbatim"
exit "$failed"
