#!/usr/bin/python3
"""grpc.health.v1 against a real gRPC client: Python grpcio (Debian's, under
/usr/bin/python3), its stubs generated at test time from Debian's
/usr/share/grpc-proto/grpc/health/v1/health.proto, against examples'
echo_server through a rolling restart:

  server A serving; a Watch on A sees SERVING; SIGTERM to A: the Watch sees
  NOT_SERVING, then ends cleanly (OK); server B started: Check on B is SERVING.

Usage: python_health_test.py ECHO_SERVER. Exit 0 on success, 1 on failure,
77 (skipped) without grpcio or grpc_tools. It signals only the servers it
started and leaves none behind.
"""
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
LIMIT = 30.0  # every wait's bound, generous on a loaded machine


def log(*args):
    print(*args, flush=True)


class EchoServer:
    """One echo_server on 127.0.0.1, port 0; its port read from its first line."""

    def __init__(self, binary, workdir, name, started):
        self.name = name
        self.stderr_path = os.path.join(workdir, name + ".stderr")
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "--port", "0", "--host", "127.0.0.1", "--drain-timeout-ms", "10000"],
            stdout=subprocess.PIPE, stderr=self.stderr)
        started.append(self)  # from now on the test's finally ends it
        self.port = self._read_port()
        # Whatever else it prints is read, so it never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()

    def _read_port(self):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + LIMIT
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise RuntimeError(f"{self.name}: no 'listening on' line within {LIMIT} s")
            chunk = os.read(self.proc.stdout.fileno(), 1)
            if not chunk:
                raise RuntimeError(f"{self.name}: exited before listening ({self.proc.wait()})")
            line += chunk
        sel.close()
        text = line.decode().strip()
        if not text.startswith("listening on "):
            raise RuntimeError(f"{self.name}: unexpected first line {text!r}")
        log(f"{self.name}: {text}")
        return int(text.rsplit(":", 1)[1])

    def _drain(self):
        while self.proc.stdout.read(4096):
            pass

    def terminate_and_wait(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=LIMIT)
        log(f"{self.name}: exited {code} after SIGTERM")
        return code

    def kill(self):
        """The finally of the test: only this process, only if still running."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=LIMIT)
        self.stderr.close()


def generate_stubs(workdir):
    out = os.path.join(workdir, "stubs")
    os.mkdir(out)
    subprocess.run(["/usr/bin/python3", "-m", "grpc_tools.protoc", "-I/usr/share/grpc-proto",
                    "--python_out=" + out, "--grpc_python_out=" + out, "grpc/health/v1/health.proto"],
                   check=True, timeout=LIMIT)
    # The stubs live in grpc/health/v1/, inside grpcio's own package `grpc`:
    # its search path gets our directory too (grpc.health is a namespace part).
    import grpc
    grpc.__path__.append(os.path.join(out, "grpc"))
    from grpc.health.v1 import health_pb2, health_pb2_grpc
    return health_pb2, health_pb2_grpc


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import grpc  # noqa: F401
        import grpc_tools  # noqa: F401
    except ImportError as e:
        log(f"skipped: {e} (Debian: python3-grpcio, python3-grpc-tools)")
        return SKIP
    import grpc

    workdir = tempfile.mkdtemp(prefix="wheelrpc_python_health_")
    servers = []
    try:
        pb2, pb2_grpc = generate_stubs(workdir)
        name = pb2.HealthCheckResponse.ServingStatus.Name

        a = EchoServer(sys.argv[1], workdir, "server A", servers)
        with grpc.insecure_channel(f"127.0.0.1:{a.port}") as channel:
            stub = pb2_grpc.HealthStub(channel)
            reply = stub.Check(pb2.HealthCheckRequest(service=""), timeout=LIMIT)
            log(f"Check('') on A: {name(reply.status)}")
            assert reply.status == pb2.HealthCheckResponse.SERVING, reply
            watch = stub.Watch(pb2.HealthCheckRequest(service=""), timeout=LIMIT * 2)
            first = next(watch)
            log(f"Watch('') on A: {name(first.status)}")
            assert first.status == pb2.HealthCheckResponse.SERVING, first

            log("SIGTERM to A")
            a.proc.send_signal(signal.SIGTERM)
            second = next(watch)
            log(f"Watch('') on A: {name(second.status)}")
            assert second.status == pb2.HealthCheckResponse.NOT_SERVING, second
            try:
                extra = next(watch)
                raise AssertionError(f"the Watch went on after NOT_SERVING: {extra}")
            except StopIteration:
                log(f"Watch('') on A: ended, {watch.code().name}")
            assert watch.code() == grpc.StatusCode.OK, watch.code()
        code = a.proc.wait(timeout=LIMIT)
        log(f"server A: exited {code}")
        assert code == 0, code

        b = EchoServer(sys.argv[1], workdir, "server B", servers)
        with grpc.insecure_channel(f"127.0.0.1:{b.port}") as channel:
            stub = pb2_grpc.HealthStub(channel)
            reply = stub.Check(pb2.HealthCheckRequest(service=""), timeout=LIMIT)
            log(f"Check('') on B: {name(reply.status)}")
            assert reply.status == pb2.HealthCheckResponse.SERVING, reply
            try:
                stub.Check(pb2.HealthCheckRequest(service="no.such.Service"), timeout=LIMIT)
                raise AssertionError("Check of an unknown service answered")
            except grpc.RpcError as e:
                log(f"Check('no.such.Service') on B: {e.code().name}")
                assert e.code() == grpc.StatusCode.NOT_FOUND, e.code()
        assert b.terminate_and_wait() == 0
        log("ok")
        return 0
    except (AssertionError, RuntimeError, grpc.RpcError, subprocess.SubprocessError) as e:
        log(f"FAILED: {type(e).__name__}: {e}")
        for s in servers:
            try:
                with open(s.stderr_path, "rb") as f:
                    log(f"--- {s.name} stderr ---\n{f.read().decode(errors='replace')}")
            except OSError:
                pass
        return 1
    finally:
        for s in servers:
            s.kill()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
