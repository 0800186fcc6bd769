#!/usr/bin/env bash
# bench/plot.py on the committed benchmark results (registered with CTest by
# tests/CMakeLists.txt as bench_plot): the three charts are written, non-empty
# PNGs; a bad argument exits 2, a file with nothing to chart exits 1.
# Skipped (77) when /usr/bin/python3 has no matplotlib (Debian's
# python3-matplotlib, which scripts/install_deps.sh installs).
#
#   bench_plot_test.sh PATH/TO/bench/plot.py PATH/TO/bench/results OUT_DIR
set -euo pipefail

plot=${1:?usage: bench_plot_test.sh PLOT_PY RESULTS_DIR OUT_DIR}
results=${2:?usage: bench_plot_test.sh PLOT_PY RESULTS_DIR OUT_DIR}
out=${3:?usage: bench_plot_test.sh PLOT_PY RESULTS_DIR OUT_DIR}

if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 cannot import matplotlib (install python3-matplotlib)"
  exit 77
fi

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

rm -rf "$out"
mkdir -p "$out"
if ! timeout 120 "$plot" --out "$out" "$results"/*.jsonl; then
  fail "plot.py exited non-zero on $results"
fi
for name in rpc-calls-per-s rpc-p99 timer-lateness; do
  png="$out/$name.png"
  if [ ! -s "$png" ]; then
    fail "$png is missing or empty"
  elif [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
    fail "$png is not a PNG"
  fi
done

set +e
timeout 60 "$plot" --no-such-flag >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "a bad argument: exit $rc, expected 2"
timeout 60 "$plot" --out "$out/none" "$results"/registry-*.jsonl >/dev/null 2>"$out/none.err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "nothing to chart: exit $rc, expected 1"
grep -q 'skipped' "$out/none.err" || fail "nothing to chart: no 'skipped' message: $(cat "$out/none.err")"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
