#!/usr/bin/python3
"""ORCA load reports and a real gRPC client: Debian's grpcio (under
/usr/bin/python3) against a wheelrpc server (gRPC wire) whose replies carry
`endpoint-load-metrics-bin`, and the report's bytes decoded by protobuf's
own runtime with stubs generated at run time (grpc_tools.protoc) from
orca_load_report.proto beside this script (xds.data.orca.v3's names and field
numbers).

gRPC's core (grpcio's) takes `endpoint-load-metrics-bin` for itself: it is a
metadata key it knows (for its ORCA load-balancing policies), and it does not
hand such keys to the application, so `call.trailing_metadata()` never shows
it. The bytes therefore come from the test (what a reply carried on the wire),
and grpcio shows that a gRPC client calls the server with reports on.

Usage: load_report_grpcio.py PORT REPORT_HEX. Prints `calls=N`,
`grpcio-publishes-key=0|1`, `report-bytes=N`, then the decoded report, one
`name=value` line per field (named metrics as `named_metrics.KEY=value`).
Exit 0 when grpcio's calls succeeded and the report decoded, 1 otherwise, 77
(skipped) without grpcio or grpc_tools. Starts no process.
"""
import os
import sys
import tempfile

SKIP = 77
KEY = "endpoint-load-metrics-bin"
CALLS = 50


def main():
    try:
        import grpc
        from grpc_tools import protoc
    except ImportError as e:
        print(f"skipped: {e}", flush=True)
        return SKIP
    port = int(sys.argv[1])
    raw = bytes.fromhex(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))

    published = False
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        echo = channel.unary_unary("/echo")
        for _ in range(CALLS):
            reply, call = echo.with_call(b"hi", timeout=30)
            if reply != b"hi":
                print(f"echo answered {reply!r}", flush=True)
                return 1
            published = published or any(k == KEY for k, _ in call.trailing_metadata())
    print(f"calls={CALLS}")
    print(f"grpcio-publishes-key={int(published)}")

    with tempfile.TemporaryDirectory(prefix="wheelrpc-orca-") as out:
        rc = protoc.main(["protoc", f"-I{here}", f"--python_out={out}", "orca_load_report.proto"])
        if rc != 0:
            print(f"protoc failed: {rc}", flush=True)
            return 1
        sys.path.insert(0, out)
        import orca_load_report_pb2 as orca

        report = orca.OrcaLoadReport.FromString(raw)
    print(f"report-bytes={len(raw)}")
    for field in ("cpu_utilization", "mem_utilization", "rps_fractional", "eps", "application_utilization"):
        print(f"{field}={getattr(report, field)!r}")
    for k in sorted(report.named_metrics):
        print(f"named_metrics.{k}={report.named_metrics[k]!r}")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
