#!/usr/bin/python3
"""gRPC interop test server on Python grpcio (Debian's python3-grpcio 1.51).

Serves grpc.testing.TestService as gRPC's doc/interop-test-descriptions.md
describes it (the "Server" features: echo of metadata and status, response
sizes and intervals, compressed responses on request, the compressed-request
check) on 127.0.0.1. Prints "listening on 127.0.0.1:PORT" once it accepts
calls; SIGTERM or SIGINT stops it (exit status 0).

  /usr/bin/python3 interop_server.py --port=0 [--use_tls=true \
      --tls_cert_file=server.pem --tls_key_file=server.key] [--proto_root=DIR] [--stubs_dir=DIR]

UnimplementedCall is declared in TestService but not served, so calling it
gives UNIMPLEMENTED, as does every method of UnimplementedService.

Whether a request message arrived compressed: the grpcio API does not tell,
so the server runs with grpc.per_message_decompression = 0, gets each
message's bytes as they came (still compressed when the compressed flag was
set), and inflates them itself (interop_protos.unpack).
"""

import argparse
import signal
import sys
import threading
import time
from concurrent import futures

import grpc

import interop_protos

ECHO_INITIAL_KEY = 'x-grpc-test-echo-initial'
ECHO_TRAILING_KEY = 'x-grpc-test-echo-trailing-bin'
STATUS_BY_CODE = {status.value[0]: status for status in grpc.StatusCode}


class Abort(Exception):
    """Ends the call with this status (raised inside a handler)."""

    def __init__(self, code, details):
        super().__init__(details)
        self.code = code
        self.details = details


class Call:
    """Per-call state: the echoed metadata, the response compression, and
    whether the initial metadata went out (it carries the compression choice)."""

    def __init__(self, context):
        self.context = context
        self.initial = []
        self.initial_sent = False
        for key, value in context.invocation_metadata():
            if key == ECHO_INITIAL_KEY:
                self.initial.append((key, value))
            elif key == ECHO_TRAILING_KEY:
                context.set_trailing_metadata(((key, value),))

    def send_initial(self, compress=False):
        """Sends the initial metadata now, choosing the call's compression
        first (grpcio fixes it with the initial metadata)."""
        if self.initial_sent:
            return
        self.initial_sent = True
        if compress:
            self.context.set_compression(grpc.Compression.Gzip)
        if self.initial:
            self.context.send_initial_metadata(tuple(self.initial))

    def finish(self, status):
        """Ends the call with an EchoStatus the client asked for."""
        self.send_initial()
        code = STATUS_BY_CODE.get(status.code)
        if code is None:
            raise Abort(grpc.StatusCode.UNKNOWN, status.message)
        if code != grpc.StatusCode.OK:
            raise Abort(code, status.message)
        if status.message:
            self.context.set_details(status.message)


def check_compression(request, was_compressed):
    if request.HasField('expect_compressed') and request.expect_compressed.value != was_compressed:
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT,
                    'expected a %s request message, got a %s one' %
                    ('compressed' if request.expect_compressed.value else 'uncompressed',
                     'compressed' if was_compressed else 'uncompressed'))


def serving(handler, streaming_response):
    """Calls handler(request, call) with the call's Call, and turns Abort
    into the call's status (the echoed initial metadata still sent first)."""
    if streaming_response:
        def run_stream(request, context):
            call = Call(context)
            try:
                yield from handler(request, call)
            except Abort as abort:
                call.send_initial()
                context.abort(abort.code, abort.details)
        return run_stream

    def run(request, context):
        call = Call(context)
        try:
            return handler(request, call)
        except Abort as abort:
            call.send_initial()
            context.abort(abort.code, abort.details)
    return run


class TestService:
    def __init__(self, empty_pb2, messages):
        self.empty_pb2 = empty_pb2
        self.m = messages

    def payload(self, response_type, size):
        if response_type != self.m.COMPRESSABLE:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, 'unsupported response_type %d' % response_type)
        if size < 0:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, 'negative payload size %d' % size)
        return self.m.Payload(type=response_type, body=b'\0' * size)

    def EmptyCall(self, request, call):
        call.send_initial()
        return self.empty_pb2.Empty()

    def UnaryCall(self, request, call):
        request, was_compressed = request
        check_compression(request, was_compressed)
        response = self.m.SimpleResponse(payload=self.payload(request.response_type, request.response_size))
        call.send_initial(compress=request.response_compressed.value)
        if request.HasField('response_status'):
            call.finish(request.response_status)
        return response

    def CacheableUnaryCall(self, request, call):
        call.initial.append(('cache-control', 'max-age=60, public'))
        call.send_initial()
        return self.m.SimpleResponse(payload=self.m.Payload(body=str(time.time_ns()).encode()))

    def stream_responses(self, call, request):
        """Yields the responses one StreamingOutputCallRequest asks for."""
        for parameters in request.response_parameters:
            response = self.m.StreamingOutputCallResponse(payload=self.payload(request.response_type,
                                                                               parameters.size))
            if parameters.interval_us > 0:
                time.sleep(parameters.interval_us / 1e6)
            if not parameters.compressed.value:
                call.context.disable_next_message_compression()
            yield response

    @staticmethod
    def wants_compression(requests):
        return any(p.compressed.value for r in requests for p in r.response_parameters)

    def StreamingOutputCall(self, request, call):
        request, _ = request
        call.send_initial(compress=self.wants_compression([request]))
        yield from self.stream_responses(call, request)
        if request.HasField('response_status'):
            call.finish(request.response_status)

    def StreamingInputCall(self, requests, call):
        total = 0
        for request, was_compressed in requests:
            check_compression(request, was_compressed)
            total += len(request.payload.body)
        call.send_initial()
        return self.m.StreamingInputCallResponse(aggregated_payload_size=total)

    def FullDuplexCall(self, requests, call):
        for request, _ in requests:
            call.send_initial(compress=self.wants_compression([request]))
            if request.HasField('response_status'):
                call.finish(request.response_status)
                return
            yield from self.stream_responses(call, request)
        call.send_initial()

    def HalfDuplexCall(self, requests, call):
        buffered = [request for request, _ in requests]
        call.send_initial(compress=self.wants_compression(buffered))
        for request in buffered:
            if request.HasField('response_status'):
                call.finish(request.response_status)
                return
            yield from self.stream_responses(call, request)


def make_handler(service, messages, empty_pb2):
    def parse(message_class):
        def parse_bytes(data):
            plain, was_compressed = interop_protos.unpack(data)
            return message_class.FromString(plain), was_compressed
        return parse_bytes

    def parse_plain(message_class):  # requests whose compression nobody checks
        def parse_bytes(data):
            return message_class.FromString(interop_protos.unpack(data)[0])
        return parse_bytes

    m = messages
    out = m.StreamingOutputCallResponse.SerializeToString
    handlers = {
        'EmptyCall': grpc.unary_unary_rpc_method_handler(
            serving(service.EmptyCall, False), parse_plain(empty_pb2.Empty), empty_pb2.Empty.SerializeToString),
        'UnaryCall': grpc.unary_unary_rpc_method_handler(
            serving(service.UnaryCall, False), parse(m.SimpleRequest), m.SimpleResponse.SerializeToString),
        'CacheableUnaryCall': grpc.unary_unary_rpc_method_handler(
            serving(service.CacheableUnaryCall, False), parse_plain(m.SimpleRequest),
            m.SimpleResponse.SerializeToString),
        'StreamingOutputCall': grpc.unary_stream_rpc_method_handler(
            serving(service.StreamingOutputCall, True), parse(m.StreamingOutputCallRequest), out),
        'StreamingInputCall': grpc.stream_unary_rpc_method_handler(
            serving(service.StreamingInputCall, False), parse(m.StreamingInputCallRequest),
            m.StreamingInputCallResponse.SerializeToString),
        'FullDuplexCall': grpc.stream_stream_rpc_method_handler(
            serving(service.FullDuplexCall, True), parse(m.StreamingOutputCallRequest), out),
        'HalfDuplexCall': grpc.stream_stream_rpc_method_handler(
            serving(service.HalfDuplexCall, True), parse(m.StreamingOutputCallRequest), out),
    }
    return grpc.method_handlers_generic_handler('grpc.testing.TestService', handlers)


def main():
    parser = argparse.ArgumentParser(description='gRPC interop test server (Python grpcio)')
    parser.add_argument('--port', type=int, default=0, help='port on 127.0.0.1; 0 picks a free one')
    parser.add_argument('--use_tls', type=interop_protos.parse_bool, default=False)
    parser.add_argument('--tls_cert_file', default='', help='certificate chain (PEM), with --use_tls=true')
    parser.add_argument('--tls_key_file', default='', help='private key (PEM), with --use_tls=true')
    interop_protos.add_arguments(parser)
    args = parser.parse_args()
    if args.use_tls and not (args.tls_cert_file and args.tls_key_file):
        parser.error('--use_tls=true needs --tls_cert_file and --tls_key_file')

    empty_pb2, messages, _ = interop_protos.load(args.proto_root, args.stubs_dir)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32),
                         options=[('grpc.per_message_decompression', 0), ('grpc.so_reuseport', 0)])
    server.add_generic_rpc_handlers((make_handler(TestService(empty_pb2, messages), messages, empty_pb2),))
    address = '127.0.0.1:%d' % args.port
    if args.use_tls:
        with open(args.tls_key_file, 'rb') as f:
            key = f.read()
        with open(args.tls_cert_file, 'rb') as f:
            cert = f.read()
        port = server.add_secure_port(address, grpc.ssl_server_credentials(((key, cert),)))
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        sys.exit('could not listen on %s' % address)
    server.start()
    print('listening on 127.0.0.1:%d' % port, flush=True)
    while not stop.wait(3600):
        pass
    server.stop(grace=1).wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
