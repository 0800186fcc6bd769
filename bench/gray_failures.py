#!/usr/bin/env python3
"""Gray failures: a slow, a flaky and a CPU-starved provider among healthy
ones, called by real echo_client processes (docs/load_balancing.md).

Every scenario starts three echo_server processes (one behind a fault_proxy
when it needs a toxic), runs the clients for DURATION seconds with a warm-up
of WARMUP seconds (echo_client --warmup-s: the shares, rates and p99 below
count only what came after it) and prints one JSON line per run:

  slow     one provider behind +50 ms of latency; 8 clients at C = 1, then
           1 client at C = 32; every policy (round_robin, least_active, p2c,
           load_aware, round_robin with --outlier) and the same run with no
           latency (healthy, for the p99 baseline)
  flaky    one provider failing 30 % of calls (echo_server --fail-percent 30);
           clients with --outlier and retries; then one client at C = 8 for
           HEAL_S seconds (default 45), the flaky server replaced by a
           healthy one on the same port at 5 s: its share from 30 s after
           the heal to the end, and the ejections of the whole run (no
           flapping once healed)
  healthy  three healthy providers, --outlier, HEALTHY_S seconds: ejections
           must stay 0 (no flapping)
  cpu      one provider sharing a CPU with a busy loop (taskset); 8 clients
           at C = 1, round_robin against load_aware (with load reports), and
           the ceiling: the same clients given only the two other providers
  scaleout clients behind an L4 balancer (one address; each new connection
           goes to the next server in turn, as a TCP load balancer or a
           Kubernetes Service does; in this script): 2 servers, then 2 more
           at SCALE_AT s; each server's share of the calls from SCALE_AT + 40
           to SCALE_AT + 50 s, with --max-connection-age-ms 20000 (native and
           gRPC wires) and without (the connections never move)

  bench/gray_failures.py                       # all scenarios
  SCENARIOS=slow,flaky DURATION=12 bench/gray_failures.py
  BUILD=build/release OUT=file.jsonl bench/gray_failures.py

Needs the release build (BUILD, default build/release) and, for `cpu`,
taskset. Any python3 runs it.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(REPO, os.environ.get("BUILD", "build/release"))
SERVER = os.path.join(BUILD, "examples", "echo_server")
CLIENT = os.path.join(BUILD, "examples", "echo_client")
PROXY = os.path.join(BUILD, "examples", "fault_proxy")
DURATION = float(os.environ.get("DURATION", "12"))
WARMUP = float(os.environ.get("WARMUP", "2"))
HEALTHY_S = float(os.environ.get("HEALTHY_S", "300"))
HEAL_S = float(os.environ.get("HEAL_S", "45"))
SCENARIOS = os.environ.get("SCENARIOS", "slow,flaky,healthy,cpu,scaleout").split(",")
SCALE_AT = float(os.environ.get("SCALE_AT", "5"))
OUT = os.environ.get("OUT", os.path.join(REPO, "bench", "results", "gray-failures-%s.jsonl" % time.strftime("%F")))

children = []


def start(args, lines=1, cpu=None):
    """Starts a process; returns it and its first `lines` stdout lines."""
    cmd = (["taskset", "-c", str(cpu)] if cpu is not None else []) + args
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    children.append(p)
    got = [p.stdout.readline().strip() for _ in range(lines)]
    return p, got


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in children:
        children.remove(p)


def port_of(line):
    return int(line.rsplit(":", 1)[1])


def servers(n, extra=None, cpu=None):
    """n echo_servers on free ports; extra[i]: more flags for server i."""
    out = []
    for i in range(n):
        flags = (extra or {}).get(i, [])
        p, (line,) = start([SERVER, "--port", "0", "--load-reports"] + flags, cpu=cpu if i == 0 else None)
        out.append((p, port_of(line)))
    return out


def proxy(upstream_port):
    p, lines = start([PROXY, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:%d" % upstream_port,
                      "--control-port", "0"], lines=2)
    return p, port_of(lines[0]), port_of(lines[1])


def toxic(control_port, body):
    req = urllib.request.Request("http://127.0.0.1:%d/toxics" % control_port, data=json.dumps(body).encode(),
                                 method="POST")
    urllib.request.urlopen(req, timeout=5).read()


def clients(ports, n, concurrency, flags, duration=None):
    """n echo_clients of `ports`; their JSON summaries."""
    procs = []
    for _ in range(n):
        args = [CLIENT, "--server", ",".join("127.0.0.1:%d" % p for p in ports), "--duration-s",
                str(duration or DURATION), "--warmup-s", str(WARMUP), "--concurrency", str(concurrency),
                "--timeout-ms", "2000", "--json", "--report-interval-ms", "3600000"] + flags
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        children.append(p)
        procs.append(p)
    return summaries(procs)


def summaries(procs):
    """Waits for the echo_clients `procs`; their last JSON lines."""
    out = []
    for p in procs:
        lines = [l for l in p.stdout.read().splitlines() if l.startswith("{")]
        p.wait()
        children.remove(p)
        out.append(json.loads(lines[-1]))
    return out


def summarize(runs, odd_port, label, **extra):
    """One line: calls/s after the warm-up, the odd provider's share, the worst p99."""
    rate = sum(r["after_warmup"]["ok_per_s"] for r in runs if r["after_warmup"])
    odd = total = 0
    for r in runs:
        for peer, n in (r["after_warmup"] or {"attempts": {}})["attempts"].items():
            total += n
            if odd_port is not None and peer.endswith(":%d" % odd_port):
                odd += n
    line = dict(scenario=label, calls_per_s=round(rate), odd_share=round(odd / total, 4) if total else None,
                p99_us=max(r["p99_us"] for r in runs), failed=sum(r["failed"] + r["timeout"] for r in runs),
                ejections=sum(p["ejections"] for r in runs for p in r["providers"]), **extra)
    print(json.dumps(line), flush=True)
    with open(OUT, "a") as f:
        f.write(json.dumps(line) + "\n")
    return line


POLICIES = [("round_robin", ["--lb", "round_robin"]), ("least_active", ["--lb", "least_active"]),
            ("p2c", ["--lb", "p2c"]), ("load_aware", ["--lb", "load_aware"]),
            ("outlier", ["--lb", "round_robin", "--outlier", "--outlier-base-ms", "30000"])]


def slow():
    fleet = servers(3)
    px, px_port, control = proxy(fleet[0][1])
    ports = [px_port, fleet[1][1], fleet[2][1]]
    for shape, n, c in (("8xC1", 8, 1), ("1xC32", 1, 32)):
        summarize(clients(ports, n, c, ["--lb", "round_robin"]), px_port, "slow/healthy", shape=shape,
                  policy="round_robin")
    toxic(control, {"name": "lat", "type": "latency", "stream": "downstream", "attributes": {"latency": 50}})
    for shape, n, c in (("8xC1", 8, 1), ("1xC32", 1, 32)):
        for name, flags in POLICIES:
            summarize(clients(ports, n, c, flags), px_port, "slow", shape=shape, policy=name)
    stop(px)
    for p, _ in fleet:
        stop(p)


def flaky():
    fleet = servers(3, extra={0: ["--fail-percent", "30"]})
    ports = [p for _, p in fleet]
    flags = ["--outlier", "--outlier-base-ms", "5000", "--outlier-max-ms", "20000", "--idempotent", "--retries",
             "2", "--retry-budget-ratio", "1"]
    summarize(clients(ports, 8, 1, flags), ports[0], "flaky", shape="8xC1", policy="outlier")
    summarize(clients(ports, 1, 32, flags), ports[0], "flaky", shape="1xC32", policy="outlier")
    # Heal: one long client run; the flaky server is replaced by a healthy one
    # on the same port at heal_at s.
    heal_at = 5.0
    proc = subprocess.Popen([CLIENT, "--server", ",".join("127.0.0.1:%d" % p for p in ports), "--duration-s", str(HEAL_S),
                             "--warmup-s", str(heal_at + 30), "--concurrency", "8", "--json", "--timeout-ms", "2000",
                             "--report-interval-ms", "3600000"] + flags, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    children.append(proc)
    time.sleep(heal_at)
    stop(fleet[0][0])
    healed, _ = start([SERVER, "--port", str(ports[0]), "--load-reports"])
    lines = [l for l in proc.stdout.read().splitlines() if l.startswith("{")]
    proc.wait()
    children.remove(proc)
    r = json.loads(lines[-1])
    summarize([r], ports[0], "flaky/healed", shape="1xC8", policy="outlier",
              seconds=HEAL_S, note="shares from 30 s after the heal to the end; ejections of the whole run")
    stop(healed)
    for p, _ in fleet[1:]:
        stop(p)


def healthy():
    fleet = servers(3)
    ports = [p for _, p in fleet]
    summarize(clients(ports, 1, 1, ["--outlier"], duration=HEALTHY_S), None, "healthy", shape="1xC1",
              policy="outlier", seconds=HEALTHY_S)
    for p, _ in fleet:
        stop(p)


def cpu():
    fleet = servers(3, cpu=1)
    busy = subprocess.Popen(["taskset", "-c", "1", "sh", "-c", "while :; do :; done"])
    children.append(busy)
    ports = [p for _, p in fleet]
    for name, flags in (("round_robin", ["--lb", "round_robin"]), ("load_aware", ["--lb", "load_aware"])):
        summarize(clients(ports, 8, 1, flags), ports[0], "cpu", shape="8xC1", policy=name)
    # The ceiling: nothing sent to the starved provider at all.
    summarize(clients(ports[1:], 8, 1, ["--lb", "round_robin"]), ports[0], "cpu/ceiling", shape="8xC1",
              policy="round_robin", note="the two other providers only")
    stop(busy)
    for p, _ in fleet:
        stop(p)


class RoundRobinProxy:
    """An L4 balancer on 127.0.0.1: each new connection is piped to the next
    of `backends` (ports) in turn; the list may change while it runs."""

    def __init__(self, backends):
        self.backends = list(backends)
        self.next = 0
        self.accepted = {}
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait()

    async def handle(self, reader, writer):
        backends = self.backends
        port = backends[self.next % len(backends)]
        self.next += 1
        self.accepted[port] = self.accepted.get(port, 0) + 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return

        async def pipe(r, w):
            try:
                while True:
                    data = await r.read(65536)
                    if not data:
                        break
                    w.write(data)
                    await w.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                w.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)


def served(admin_port):
    """Calls a server answered, from its /metrics."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % admin_port, timeout=10).read().decode()
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("wheelrpc_server_handled_total{"))


def scaleout_run(protocol, age_ms):
    extra = ["--admin-port", "0"] + (["--max-connection-age-ms", str(age_ms)] if age_ms else [])
    fleet = []
    for _ in range(2):
        p, (line, admin) = start([SERVER, "--port", "0"] + extra, lines=2)
        fleet.append((p, port_of(line), port_of(admin)))
    lb = RoundRobinProxy([f[1] for f in fleet])
    window = (SCALE_AT + 40, SCALE_AT + 50)
    procs = []
    for _ in range(8):
        args = [CLIENT, "--server", "127.0.0.1:%d" % lb.port, "--protocol", protocol, "--duration-s", str(window[1]),
                "--concurrency", "2", "--timeout-ms", "5000", "--json", "--report-interval-ms", "3600000"]
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        children.append(procs[-1])
    t0 = time.monotonic()
    time.sleep(SCALE_AT)
    for _ in range(2):
        p, (line, admin) = start([SERVER, "--port", "0"] + extra, lines=2)
        fleet.append((p, port_of(line), port_of(admin)))
    lb.backends = [f[1] for f in fleet]
    time.sleep(max(0.0, window[0] - (time.monotonic() - t0)))
    before = [served(f[2]) for f in fleet]
    time.sleep(max(0.0, window[1] - 0.5 - (time.monotonic() - t0)))
    after = [served(f[2]) for f in fleet]
    runs = summaries(procs)
    lb.close()
    deltas = [a - b for a, b in zip(after, before)]
    total = sum(deltas) or 1
    line = dict(scenario="scaleout", protocol=protocol, max_connection_age_ms=age_ms, shape="8xC2",
                window_s=list(window), shares=[round(d / total, 4) for d in deltas],
                calls_per_s=round(sum(r["calls_per_s"] for r in runs)),
                failed=sum(r["failed"] + r["timeout"] for r in runs),
                connections_by_server=[lb.accepted.get(f[1], 0) for f in fleet])
    print(json.dumps(line), flush=True)
    with open(OUT, "a") as f:
        f.write(json.dumps(line) + "\n")
    for p, _, _ in fleet:
        stop(p)


def scaleout():
    scaleout_run("native", 20000)
    scaleout_run("grpc", 20000)
    scaleout_run("native", 0)


def main():
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    try:
        for s in SCENARIOS:
            {"slow": slow, "flaky": flaky, "healthy": healthy, "cpu": cpu, "scaleout": scaleout}[s]()
    finally:
        for p in list(children):
            stop(p)


if __name__ == "__main__":
    sys.exit(main())
