#!/usr/bin/python3
"""Server reflection from a real gRPC client: Python grpcio against the typed
greeter example (examples/greeter/greeter_server, which turns reflection on).

Stubs for grpc.reflection.v1alpha and v1 are generated at test time from
gRPC's own reflection.proto (Debian's grpc-proto package) with
`/usr/bin/python3 -m grpc_tools.protoc`, into a temporary directory of this
run (the files are copied there under names of their own first, so that the
generated modules do not collide with grpcio's `grpc` package; the packages,
and so the wire paths, are gRPC's). The server is started on port 0; its first
line says where it listens. For each version: list the services, fetch the
file containing helloworld.HelloRequest, rebuild the message from the answer
with google.protobuf's descriptor_pool and check its fields, call SayHello
with a message built from those descriptors alone, and ask for a symbol that
is not there (NOT_FOUND). The server is signalled (SIGTERM, then SIGKILL) and
waited for; nothing is left behind.

  python_reflection_test.py GREETER_SERVER GRPC_PROTO_DIR
Exit status: 0 passed, 1 failed, 77 skipped (no grpc_tools or grpcio).
"""
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: python_reflection_test.py GREETER_SERVER GRPC_PROTO_DIR", file=sys.stderr)
        return 2
    server_bin, proto_dir = sys.argv[1], sys.argv[2]
    try:
        import grpc  # noqa: F401
        import grpc_tools.protoc  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e} (Debian: python3-grpcio python3-grpc-tools, for /usr/bin/python3)")
        return SKIP

    tmp = tempfile.mkdtemp(prefix="wheelrpc-reflection-")
    server = None
    try:
        versions = ("v1alpha", "v1")
        for v in versions:
            shutil.copyfile(os.path.join(proto_dir, "grpc", "reflection", v, "reflection.proto"),
                            os.path.join(tmp, f"reflection_{v}.proto"))
        protoc = subprocess.run(
            ["/usr/bin/python3", "-m", "grpc_tools.protoc", "-I", tmp, f"--python_out={tmp}",
             f"--grpc_python_out={tmp}"] + [os.path.join(tmp, f"reflection_{v}.proto") for v in versions],
            capture_output=True, text=True, timeout=120)
        if protoc.returncode != 0:
            print(f"FAIL: grpc_tools.protoc: {protoc.stderr}", file=sys.stderr)
            return 1
        sys.path.insert(0, tmp)

        server = subprocess.Popen([server_bin, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        port = read_port(server, deadline=time.monotonic() + 60)
        failures = 0
        for v in versions:
            failures += check_version(v, port)
        print(f"{len(versions) - failures} passed, {failures} failed")
        return 1 if failures else 0
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(tmp, ignore_errors=True)


def read_port(server: subprocess.Popen, deadline: float) -> int:
    """The port of the server's first line, "listening on 127.0.0.1:PORT"."""
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([server.stdout], [], [], left)[0]:
            raise RuntimeError("greeter_server said nothing within 60 s")
        chunk = os.read(server.stdout.fileno(), 1)
        if not chunk:
            raise RuntimeError(f"greeter_server ended: {server.stderr.read().decode(errors='replace')}")
        line += chunk
    text = line.decode().strip()
    if not text.startswith("listening on 127.0.0.1:"):
        raise RuntimeError(f"greeter_server's first line: {text!r}")
    return int(text.rsplit(":", 1)[1])


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    server.stdout.close()
    server.stderr.close()


def check_version(version: str, port: int) -> int:
    """Returns the number of failed checks (0 or 1: the first failure ends it)."""
    import grpc
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pb2 = __import__(f"reflection_{version}_pb2")
    pb2_grpc = __import__(f"reflection_{version}_pb2_grpc")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb2_grpc.ServerReflectionStub(channel)
            requests = [
                pb2.ServerReflectionRequest(host="localhost", list_services="*"),
                pb2.ServerReflectionRequest(file_containing_symbol="helloworld.HelloRequest"),
                pb2.ServerReflectionRequest(file_containing_symbol="helloworld.Nope"),
            ]
            responses = list(stub.ServerReflectionInfo(iter(requests), timeout=30))
            assert len(responses) == 3, f"{len(responses)} responses to 3 requests"
            listed, found, missing = responses

            names = [s.name for s in listed.list_services_response.service]
            for expected in ("helloworld.Greeter", "grpc.reflection.v1.ServerReflection",
                             "grpc.reflection.v1alpha.ServerReflection"):
                assert expected in names, f"{expected} not in list_services: {names}"
            assert listed.valid_host == "localhost", listed.valid_host
            assert listed.original_request.list_services == "*"

            files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                     for b in found.file_descriptor_response.file_descriptor_proto]
            assert files and files[0].name == "greeter.proto", [f.name for f in files]
            pool = descriptor_pool.DescriptorPool()
            by_name = {f.name: f for f in files}
            added = set()

            def add(name):  # imports first, as the pool wants them
                if name in added:
                    return
                added.add(name)
                for imported in by_name[name].dependency:
                    add(imported)
                pool.Add(by_name[name])

            add("greeter.proto")
            request_type = pool.FindMessageTypeByName("helloworld.HelloRequest")
            fields = [(f.name, f.number, f.type) for f in request_type.fields]
            assert fields == [("name", 1, request_type.fields[0].TYPE_STRING)], fields
            method = pool.FindServiceByName("helloworld.Greeter").methods_by_name["SayHello"]
            assert method.input_type.full_name == "helloworld.HelloRequest"
            assert method.output_type.full_name == "helloworld.HelloReply"

            # A call with messages built from the answered descriptors alone.
            factory = message_factory.MessageFactory(pool)
            request_class = factory.GetPrototype(request_type)
            reply_class = factory.GetPrototype(method.output_type)
            say_hello = channel.unary_unary("/helloworld.Greeter/SayHello",
                                            request_serializer=lambda m: m.SerializeToString(),
                                            response_deserializer=reply_class.FromString)
            reply = say_hello(request_class(name="reflection"), timeout=30)
            assert reply.message.startswith("Hello, reflection"), reply.message

            assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0], missing
            assert missing.error_response.error_message == "Symbol not found.", missing
        print(f"ok: {version}: list_services {names}; greeter.proto and {len(files) - 1} imports; "
              f"HelloRequest fields {[f[0] for f in fields]}; SayHello -> {reply.message!r}")
        return 0
    except (AssertionError, grpc.RpcError) as e:
        print(f"FAIL: {version}: {e!r}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
