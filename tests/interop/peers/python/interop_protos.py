"""Generates and imports the grpc.testing stubs for the Python interop peers.

The protos live in interop/proto at the top of the repository (test.proto
imports grpc/testing/empty.proto and grpc/testing/messages.proto). protoc
writes the Python modules under OUT/grpc/testing/, which is also where the
grpcio package lives ("grpc"): grpcio has no "testing" subpackage, so OUT/grpc
is appended to grpc.__path__ and the generated modules import as
grpc.testing.*, the names their own imports use.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..', 'interop', 'proto'))
PROTOS = ('grpc/testing/empty.proto', 'grpc/testing/messages.proto', 'grpc/testing/test.proto')


def add_arguments(parser):
    parser.add_argument('--proto_root', default=DEFAULT_PROTO_ROOT,
                        help='directory holding grpc/testing/*.proto (default: the repository\'s interop/proto)')
    parser.add_argument('--stubs_dir', default='',
                        help='where protoc writes the Python stubs (default: a temporary directory, removed at exit)')


def load(proto_root, stubs_dir=''):
    """Runs protoc and returns (empty_pb2, messages_pb2, test_pb2_grpc)."""
    out = stubs_dir
    if not out:
        out = tempfile.mkdtemp(prefix='interop-stubs-')
        atexit.register(shutil.rmtree, out, True)
    os.makedirs(out, exist_ok=True)
    protoc = shutil.which('protoc') or '/usr/bin/protoc'
    plugin = shutil.which('grpc_python_plugin') or '/usr/bin/grpc_python_plugin'
    cmd = [protoc, '-I', proto_root, '--python_out=' + out, '--grpc_python_out=' + out,
           '--plugin=protoc-gen-grpc_python=' + plugin] + [os.path.join(proto_root, p) for p in PROTOS]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if done.returncode != 0:
        sys.exit('protoc failed (%s): %s' % (' '.join(cmd), done.stdout.strip()))
    import grpc  # pylint: disable=import-outside-toplevel
    grpc.__path__.append(os.path.join(out, 'grpc'))
    from grpc.testing import empty_pb2, messages_pb2, test_pb2_grpc  # pylint: disable=import-outside-toplevel
    return empty_pb2, messages_pb2, test_pb2_grpc


def parse_bool(text):
    """The flags' booleans: true or false (as gRPC's interop peers spell them)."""
    value = text.strip().lower()
    if value in ('true', '1', 'yes'):
        return True
    if value in ('false', '0', 'no', ''):
        return False
    raise ValueError('not a boolean: %r' % text)


def unpack(data):
    """One received message's bytes, as the channel or server hands them over
    when grpc.per_message_decompression is 0: still compressed if the
    message's compressed flag was set. Returns (plain bytes, was_compressed).

    gzip data starts with 1f 8b, which no protobuf message can (wire type 7
    does not exist); zlib (deflate) data is taken for compressed only when its
    two-byte header checks and the whole of it inflates."""
    import zlib  # pylint: disable=import-outside-toplevel
    if len(data) >= 2 and data[0] == 0x1f and data[1] == 0x8b:
        return zlib.decompress(data, 16 + zlib.MAX_WBITS), True
    if len(data) >= 2 and (data[0] & 0x0f) == 8 and ((data[0] << 8) | data[1]) % 31 == 0:
        try:
            inflater = zlib.decompressobj()
            plain = inflater.decompress(data)
            if inflater.eof and not inflater.unused_data:
                return plain, True
        except zlib.error:
            pass
    return data, False
