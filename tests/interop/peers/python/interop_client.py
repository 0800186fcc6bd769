#!/usr/bin/python3
"""gRPC interop test client on Python grpcio (Debian's python3-grpcio 1.51).

Runs the test cases of gRPC's doc/interop-test-descriptions.md against a
grpc.testing.TestService server and prints one line per case:
"PASS <case>" or "FAIL <case>: <why>". Exit status 0 only if every case
passed; 2 on a usage error.

  /usr/bin/python3 interop_client.py --server_host=127.0.0.1 --server_port=N \
      --test_case=all|NAME [--use_tls=true --ca_file=ca.pem \
      --server_host_override=foo.test.google.fr] [--proto_root=DIR] [--stubs_dir=DIR]

Two things the grpcio API has no call for, and how this client does them:
  * Whether a received message had its compressed flag set: a second channel
    with grpc.per_message_decompression = 0 hands the message bytes over as
    they came (still compressed when the flag was set), and this client
    inflates them itself (interop_protos.unpack).
  * Sending one message of a compressed call uncompressed: the core's write
    flag GRPC_WRITE_NO_COMPRESS (cygrpc.WriteFlag.no_compress) is what does
    it, and grpcio's channel always passes 0 there. The serializer marks the
    message's bytes (an _Uncompressed bytes subclass), and a wrapper around
    cygrpc.SendMessageOperation adds the flag for marked bytes only.
"""

import argparse
import queue
import sys
import traceback

import grpc
from grpc._cython import cygrpc

import interop_protos

ECHO_INITIAL_KEY = 'x-grpc-test-echo-initial'
ECHO_INITIAL_VALUE = 'test_initial_metadata_value'
ECHO_TRAILING_KEY = 'x-grpc-test-echo-trailing-bin'
ECHO_TRAILING_VALUE = b'\xab\xab\xab'
SPECIAL_STATUS_MESSAGE = '\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n'
CALL_TIMEOUT_S = 30  # every call but timeout_on_sleeping_server's has this deadline

CASES = ('empty_unary', 'large_unary', 'client_streaming', 'server_streaming', 'ping_pong',
         'empty_stream', 'cancel_after_begin', 'cancel_after_first_response',
         'timeout_on_sleeping_server', 'custom_metadata', 'status_code_and_message',
         'special_status_message', 'unimplemented_method', 'unimplemented_service',
         'client_compressed_unary', 'server_compressed_unary', 'client_compressed_streaming',
         'server_compressed_streaming')


class CaseFailed(Exception):
    """A case's assertion did not hold."""


def check(condition, why):
    if not condition:
        raise CaseFailed(why)


class _Uncompressed(bytes):
    """Serialized message bytes to be sent with the no-compress write flag."""


_send_message_operation = cygrpc.SendMessageOperation


def _send_message_with_flags(message, flags):
    if isinstance(message, _Uncompressed):
        return _send_message_operation(bytes(message), flags | cygrpc.WriteFlag.no_compress)
    return _send_message_operation(message, flags)


cygrpc.SendMessageOperation = _send_message_with_flags


class NoCompress:
    """Wraps a request that has to go out uncompressed on a compressed call."""

    def __init__(self, message):
        self.message = message


def serialize_marked(request):
    if isinstance(request, NoCompress):
        return _Uncompressed(request.message.SerializeToString())
    return request.SerializeToString()


class Pipe:
    """A request iterator fed one message at a time (for full-duplex calls)."""

    def __init__(self):
        self._queue = queue.Queue()

    def __iter__(self):
        return self

    def __next__(self):
        item = self._queue.get()
        if item is None:
            raise StopIteration
        return item

    def add(self, request):
        self._queue.put(request)

    def close(self):
        self._queue.put(None)


def expect_error(call_thunk, code, details=None):
    """Runs call_thunk, which must raise grpc.RpcError with this code (and details)."""
    try:
        call_thunk()
    except grpc.RpcError as error:
        check(error.code() == code, 'status %s (%r), expected %s' % (error.code(), error.details(), code))
        if details is not None:
            check(error.details() == details, 'status message %r, expected %r' % (error.details(), details))
        return error
    raise CaseFailed('the call succeeded, expected status %s' % code)


class Client:
    def __init__(self, args):
        self.empty_pb2, self.messages, test_pb2_grpc = interop_protos.load(args.proto_root, args.stubs_dir)
        target = '%s:%d' % (args.server_host, args.server_port)
        options = []
        if args.server_host_override:
            options += [('grpc.default_authority', args.server_host_override)]
        if args.use_tls:
            root = None
            if args.ca_file:
                with open(args.ca_file, 'rb') as f:
                    root = f.read()
            credentials = grpc.ssl_channel_credentials(root_certificates=root)
            if args.server_host_override:
                options += [('grpc.ssl_target_name_override', args.server_host_override)]
            self.channel = grpc.secure_channel(target, credentials, options=options)
            # Raw: messages handed over still compressed (see the module's comment).
            self.raw_channel = grpc.secure_channel(
                target, credentials, options=options + [('grpc.per_message_decompression', 0)])
        else:
            self.channel = grpc.insecure_channel(target, options=options)
            self.raw_channel = grpc.insecure_channel(
                target, options=options + [('grpc.per_message_decompression', 0)])
        self.stub = test_pb2_grpc.TestServiceStub(self.channel)
        self.unimplemented_stub = test_pb2_grpc.UnimplementedServiceStub(self.channel)
        m = self.messages
        self.streaming_input_marked = self.channel.stream_unary(
            '/grpc.testing.TestService/StreamingInputCall',
            request_serializer=serialize_marked,
            response_deserializer=m.StreamingInputCallResponse.FromString)
        self.unary_raw = self.raw_channel.unary_unary(
            '/grpc.testing.TestService/UnaryCall',
            request_serializer=m.SimpleRequest.SerializeToString,
            response_deserializer=self._raw(m.SimpleResponse))
        self.streaming_output_raw = self.raw_channel.unary_stream(
            '/grpc.testing.TestService/StreamingOutputCall',
            request_serializer=m.StreamingOutputCallRequest.SerializeToString,
            response_deserializer=self._raw(m.StreamingOutputCallResponse))

    @staticmethod
    def _raw(message_class):
        def parse(data):
            plain, compressed = interop_protos.unpack(data)
            return message_class.FromString(plain), compressed
        return parse

    def close(self):
        self.channel.close()
        self.raw_channel.close()

    # ---- helpers ----------------------------------------------------------
    def payload(self, size):
        return self.messages.Payload(type=self.messages.COMPRESSABLE, body=b'\0' * size)

    def check_payload(self, payload, size, what='response'):
        check(payload.type == self.messages.COMPRESSABLE, '%s payload type %d' % (what, payload.type))
        check(len(payload.body) == size, '%s payload of %d bytes, expected %d' % (what, len(payload.body), size))
        check(payload.body.count(0) == size, '%s payload is not all zeros' % what)

    def large_request(self, **fields):
        return self.messages.SimpleRequest(response_type=self.messages.COMPRESSABLE, response_size=314159,
                                           payload=self.payload(271828), **fields)

    def output_request(self, sizes, payload_size=None, **fields):
        m = self.messages
        request = m.StreamingOutputCallRequest(
            response_type=m.COMPRESSABLE, response_parameters=[m.ResponseParameters(size=s) for s in sizes],
            **fields)
        if payload_size is not None:
            request.payload.CopyFrom(self.payload(payload_size))
        return request

    # ---- the cases --------------------------------------------------------
    def empty_unary(self):
        response = self.stub.EmptyCall(self.empty_pb2.Empty(), timeout=CALL_TIMEOUT_S)
        check(isinstance(response, self.empty_pb2.Empty), 'response is not a grpc.testing.Empty')

    def large_unary(self):
        response = self.stub.UnaryCall(self.large_request(), timeout=CALL_TIMEOUT_S)
        self.check_payload(response.payload, 314159)

    def client_streaming(self):
        sizes = (27182, 8, 1828, 45904)
        requests = [self.messages.StreamingInputCallRequest(payload=self.payload(s)) for s in sizes]
        response = self.stub.StreamingInputCall(iter(requests), timeout=CALL_TIMEOUT_S)
        check(response.aggregated_payload_size == 74922,
              'aggregated_payload_size %d, expected 74922' % response.aggregated_payload_size)

    def server_streaming(self):
        sizes = (31415, 9, 2653, 58979)
        call = self.stub.StreamingOutputCall(self.output_request(sizes), timeout=CALL_TIMEOUT_S)
        responses = list(call)
        check(len(responses) == len(sizes), '%d responses, expected %d' % (len(responses), len(sizes)))
        for i, (response, size) in enumerate(zip(responses, sizes)):
            self.check_payload(response.payload, size, 'response %d' % i)
        check(call.code() == grpc.StatusCode.OK, 'status %s' % call.code())

    def ping_pong(self):
        request_sizes = (27182, 8, 1828, 45904)
        response_sizes = (31415, 9, 2653, 58979)
        pipe = Pipe()
        call = self.stub.FullDuplexCall(pipe, timeout=CALL_TIMEOUT_S)
        try:
            for i, (request_size, response_size) in enumerate(zip(request_sizes, response_sizes)):
                pipe.add(self.output_request([response_size], request_size))
                response = next(call)
                self.check_payload(response.payload, response_size, 'response %d' % i)
        finally:
            pipe.close()
        rest = list(call)
        check(not rest, '%d responses after the fourth' % len(rest))
        check(call.code() == grpc.StatusCode.OK, 'status %s' % call.code())

    def empty_stream(self):
        call = self.stub.FullDuplexCall(iter([]), timeout=CALL_TIMEOUT_S)
        responses = list(call)
        check(not responses, '%d responses, expected none' % len(responses))
        check(call.code() == grpc.StatusCode.OK, 'status %s' % call.code())

    def cancel_after_begin(self):
        pipe = Pipe()  # never fed: no request message is sent
        future = self.stub.StreamingInputCall.future(pipe, timeout=CALL_TIMEOUT_S)
        future.cancel()
        pipe.close()
        check(future.cancelled(), 'the call did not end cancelled')
        check(future.code() == grpc.StatusCode.CANCELLED, 'status %s, expected CANCELLED' % future.code())

    def cancel_after_first_response(self):
        pipe = Pipe()
        call = self.stub.FullDuplexCall(pipe, timeout=CALL_TIMEOUT_S)
        try:
            pipe.add(self.output_request([31415], 27182))
            response = next(call)
            self.check_payload(response.payload, 31415)
            call.cancel()
            expect_error(lambda: next(call), grpc.StatusCode.CANCELLED)
            check(call.code() == grpc.StatusCode.CANCELLED, 'status %s, expected CANCELLED' % call.code())
        finally:
            pipe.close()

    def timeout_on_sleeping_server(self):
        pipe = Pipe()
        call = self.stub.FullDuplexCall(pipe, timeout=0.001)
        try:
            pipe.add(self.messages.StreamingOutputCallRequest(payload=self.payload(27182)))
            expect_error(lambda: next(call), grpc.StatusCode.DEADLINE_EXCEEDED)
        finally:
            pipe.close()

    def _check_echoed(self, call, what):
        initial = [v for k, v in call.initial_metadata() if k == ECHO_INITIAL_KEY]
        check(initial == [ECHO_INITIAL_VALUE],
              '%s: initial metadata %s is %r, expected [%r]' % (what, ECHO_INITIAL_KEY, initial, ECHO_INITIAL_VALUE))
        trailing = [v for k, v in call.trailing_metadata() if k == ECHO_TRAILING_KEY]
        check(trailing == [ECHO_TRAILING_VALUE],
              '%s: trailing metadata %s is %r, expected [%r]' % (what, ECHO_TRAILING_KEY, trailing,
                                                                   ECHO_TRAILING_VALUE))

    def custom_metadata(self):
        metadata = ((ECHO_INITIAL_KEY, ECHO_INITIAL_VALUE), (ECHO_TRAILING_KEY, ECHO_TRAILING_VALUE))
        response, call = self.stub.UnaryCall.with_call(self.large_request(), metadata=metadata,
                                                       timeout=CALL_TIMEOUT_S)
        self.check_payload(response.payload, 314159)
        self._check_echoed(call, 'UnaryCall')
        call = self.stub.FullDuplexCall(iter([self.output_request([314159], 271828)]), metadata=metadata,
                                        timeout=CALL_TIMEOUT_S)
        responses = list(call)
        check(len(responses) == 1, 'FullDuplexCall: %d responses, expected 1' % len(responses))
        self.check_payload(responses[0].payload, 314159)
        check(call.code() == grpc.StatusCode.OK, 'FullDuplexCall: status %s' % call.code())
        self._check_echoed(call, 'FullDuplexCall')

    def _status_echo(self, message, with_duplex):
        status = self.messages.EchoStatus(code=2, message=message)
        expect_error(lambda: self.stub.UnaryCall(self.messages.SimpleRequest(response_status=status),
                                                 timeout=CALL_TIMEOUT_S),
                     grpc.StatusCode.UNKNOWN, message)
        if with_duplex:
            request = self.messages.StreamingOutputCallRequest(response_status=status)
            call = self.stub.FullDuplexCall(iter([request]), timeout=CALL_TIMEOUT_S)
            expect_error(lambda: list(call), grpc.StatusCode.UNKNOWN, message)

    def status_code_and_message(self):
        self._status_echo('test status message', True)

    def special_status_message(self):
        self._status_echo(SPECIAL_STATUS_MESSAGE, False)

    def unimplemented_method(self):
        expect_error(lambda: self.stub.UnimplementedCall(self.empty_pb2.Empty(), timeout=CALL_TIMEOUT_S),
                     grpc.StatusCode.UNIMPLEMENTED)

    def unimplemented_service(self):
        expect_error(lambda: self.unimplemented_stub.UnimplementedCall(self.empty_pb2.Empty(),
                                                                       timeout=CALL_TIMEOUT_S),
                     grpc.StatusCode.UNIMPLEMENTED)

    def client_compressed_unary(self):
        m = self.messages
        probe = self.large_request(expect_compressed=m.BoolValue(value=True))
        expect_error(lambda: self.stub.UnaryCall(probe, timeout=CALL_TIMEOUT_S), grpc.StatusCode.INVALID_ARGUMENT)
        for compressed in (True, False):
            request = self.large_request(expect_compressed=m.BoolValue(value=compressed))
            algorithm = grpc.Compression.Gzip if compressed else grpc.Compression.NoCompression
            response = self.stub.UnaryCall(request, compression=algorithm, timeout=CALL_TIMEOUT_S)
            self.check_payload(response.payload, 314159, 'compressed=%s response' % compressed)

    def server_compressed_unary(self):
        m = self.messages
        for compressed in (True, False):
            request = self.large_request(response_compressed=m.BoolValue(value=compressed))
            response, was_compressed = self.unary_raw(request, timeout=CALL_TIMEOUT_S)
            self.check_payload(response.payload, 314159, 'response_compressed=%s response' % compressed)
            check(was_compressed == compressed,
                  'response_compressed=%s: the response %s the compressed flag' %
                  (compressed, 'has' if was_compressed else 'lacks'))

    def client_compressed_streaming(self):
        m = self.messages
        probe = m.StreamingInputCallRequest(expect_compressed=m.BoolValue(value=True), payload=self.payload(27182))
        expect_error(lambda: self.streaming_input_marked(iter([probe]), timeout=CALL_TIMEOUT_S),
                     grpc.StatusCode.INVALID_ARGUMENT)
        requests = [m.StreamingInputCallRequest(expect_compressed=m.BoolValue(value=True), payload=self.payload(27182)),
                    NoCompress(m.StreamingInputCallRequest(expect_compressed=m.BoolValue(value=False),
                                                           payload=self.payload(45904)))]
        response = self.streaming_input_marked(iter(requests), compression=grpc.Compression.Gzip,
                                               timeout=CALL_TIMEOUT_S)
        check(response.aggregated_payload_size == 73086,
              'aggregated_payload_size %d, expected 73086' % response.aggregated_payload_size)

    def server_compressed_streaming(self):
        m = self.messages
        wanted = ((True, 31415), (False, 92653))
        request = m.StreamingOutputCallRequest(
            response_type=m.COMPRESSABLE,
            response_parameters=[m.ResponseParameters(size=s, compressed=m.BoolValue(value=c)) for c, s in wanted])
        call = self.streaming_output_raw(request, timeout=CALL_TIMEOUT_S)
        responses = list(call)
        check(len(responses) == 2, '%d responses, expected 2' % len(responses))
        for i, ((response, was_compressed), (compressed, size)) in enumerate(zip(responses, wanted)):
            self.check_payload(response.payload, size, 'response %d' % i)
            check(was_compressed == compressed, 'response %d (compressed=%s) %s the compressed flag' %
                  (i, compressed, 'has' if was_compressed else 'lacks'))
        check(call.code() == grpc.StatusCode.OK, 'status %s' % call.code())


def describe(error):
    if isinstance(error, CaseFailed):
        return str(error)
    if isinstance(error, grpc.RpcError) and hasattr(error, 'code'):
        return 'call failed: %s: %s' % (error.code(), error.details())
    return '%s: %s' % (type(error).__name__, error)


def main():
    parser = argparse.ArgumentParser(description='gRPC interop test client (Python grpcio)')
    parser.add_argument('--server_host', default='127.0.0.1')
    parser.add_argument('--server_port', type=int, required=True)
    parser.add_argument('--test_case', default='all', help='a case name or "all"')
    parser.add_argument('--use_tls', type=interop_protos.parse_bool, default=False)
    parser.add_argument('--ca_file', default='', help='CA certificates to trust (PEM); default: the system\'s')
    parser.add_argument('--server_host_override', default='',
                        help='the name the TLS certificate must hold, and the :authority')
    interop_protos.add_arguments(parser)
    args = parser.parse_args()
    if args.test_case == 'all':
        cases = CASES
    elif args.test_case in CASES:
        cases = (args.test_case,)
    else:
        parser.error('unknown --test_case %r (one of: all, %s)' % (args.test_case, ', '.join(CASES)))

    client = Client(args)
    failed = 0
    for case in cases:
        try:
            getattr(client, case)()
            print('PASS %s' % case, flush=True)
        except Exception as error:  # pylint: disable=broad-except
            failed += 1
            print('FAIL %s: %s' % (case, describe(error).replace('\n', ' ')), flush=True)
            if not isinstance(error, (CaseFailed, grpc.RpcError)):
                traceback.print_exc(file=sys.stderr)
    client.close()
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
