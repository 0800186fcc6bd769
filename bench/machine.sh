# Sourced by the compare scripts: describes this machine and run.
#   machine_info REPO    sets model, ncpu, when, kernel, commit
#   machine_line K=V...  prints the results file's first JSON line: the machine
#                        (no "workload" field, so table scripts skip it) plus
#                        the given fields (values that look like integers stay
#                        numbers)
machine_info() {
  model="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
  ncpu="$(nproc)"
  when="$(date '+%F %T %Z')"
  kernel="$(uname -r)"
  commit="$(git -C "$1" rev-parse --short HEAD 2>/dev/null || echo none)"
}

machine_line() {
  MODEL="$model" NCPU="$ncpu" WHEN="$when" KERNEL="$kernel" COMMIT="$commit" python3 -c '
import json, os, sys
e = os.environ
line = {"meta": "machine", "cpu": e["MODEL"], "nproc": int(e["NCPU"]), "date": e["WHEN"],
        "kernel": e["KERNEL"], "wheelrpc_commit": e["COMMIT"]}
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    line[k] = int(v) if v.lstrip("-").isdigit() else v
print(json.dumps(line))
' "$@"
}
