#!/usr/bin/python3
"""A grpcio client calling a wheelrpc server whose connections have a maximum
age (tests/rpc/max_connection_age_test.cc): unary calls one after the other
for a few seconds, across the GOAWAYs that retire its connections. Prints
calls=, failed= and the first failure; exit 0 if none failed, 77 without
grpcio. Usage: max_age_grpcio.py PORT [SECONDS]"""
import sys
import time

try:
    import grpc
except ImportError as e:  # Debian's python3-grpcio is not installed
    print(f"skip: {e}")
    sys.exit(77)


def main():
    port = int(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.5
    calls = failed = 0
    first = ""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        echo = channel.unary_unary("/test.Age/Echo")  # bytes in, bytes out
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            payload = f"p{calls}".encode()
            calls += 1
            try:
                reply = echo(payload, timeout=20)
                if reply != payload:
                    raise RuntimeError(f"echoed {reply!r} for {payload!r}")
            except Exception as e:  # an RpcError, or a wrong echo
                failed += 1
                if not first:
                    first = f"call {calls}: {e}"
    print(f"calls={calls}")
    print(f"failed={failed}")
    if first:
        print(f"first={first}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
