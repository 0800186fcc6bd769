#!/usr/bin/python3
"""The client copies protoc-gen-wheelrpc writes (--wheelrpc_out=client_proto:DIR)
describe the same wire as their sources: for each ROOT (a protoc -I root) and
the .proto files named under it, protoc's descriptors of the sources and of
the copies are equal once wheelrpc's part is taken out of the sources' (the
import of wheelrpc/options.proto, the (wheelrpc.method) option). Equal
descriptors: the same package, imports, messages, nested types, enums, field
names, numbers, types, labels and options, services and methods (names,
types, streaming), so the same bytes on the wire and the same gRPC paths.
And the copies need no wheelrpc file: they are compiled without its -I.

  same_wire.py PROTOC PLUGIN WHEELRPC_PROTO_DIR PROTOBUF_PROTO_DIR WORK_DIR ROOT:FILE[,FILE...]...

Exit status 0 when every root's copies match, 1 otherwise (with the
difference), 2 on a usage error. Needs protobuf's Python runtime
(Debian's python3-protobuf).
"""
import difflib
import os
import subprocess
import sys

from google.protobuf import descriptor_pb2, text_format

OPTIONS_PROTO = "wheelrpc/options.proto"
WHEELRPC_METHOD = 51000  # the (wheelrpc.method) extension's number


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd), done.returncode, done.stderr.strip()))


def descriptor_set(protoc, includes, files, out):
    run([protoc] + ["-I" + d for d in includes] + ["--descriptor_set_out=" + out] + files)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as f:
        fds.ParseFromString(f.read())
    return fds


def without_wheelrpc(file):
    """The file less its import of options.proto and the (wheelrpc.method) options."""
    file = descriptor_pb2.FileDescriptorProto.FromString(file.SerializeToString())
    if OPTIONS_PROTO in file.dependency:
        dropped = list(file.dependency).index(OPTIONS_PROTO)
        del file.dependency[dropped]
        for indices in (file.public_dependency, file.weak_dependency):
            kept = [i - (i > dropped) for i in indices if i != dropped]
            del indices[:]
            indices.extend(kept)
    for service in file.service:
        for method in service.method:
            if not method.HasField("options"):
                continue
            # The extension is unknown to this process (no options_pb2):
            # drop it by its number from the serialized options.
            kept = strip_field(method.options.SerializeToString(), WHEELRPC_METHOD)
            method.options.Clear()
            method.options.ParseFromString(kept)
            if method.options.ByteSize() == 0:
                method.ClearField("options")
    return file


def varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def strip_field(data, number):
    """`data` (a serialized message) without the fields numbered `number`."""
    out = bytearray()
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = varint(data, pos)
        wire_type = key & 7
        if wire_type == 0:
            _, pos = varint(data, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = varint(data, pos)
            pos += length
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError("unexpected wire type %d in MethodOptions" % wire_type)
        if key >> 3 != number:
            out += data[start:pos]
    return bytes(out)


def main(argv):
    if len(argv) < 7:
        print(__doc__, file=sys.stderr)
        return 2
    protoc, plugin, wheelrpc_dir, protobuf_dir, work = argv[1:6]
    failures = 0
    for n, spec in enumerate(argv[6:]):
        root, _, names = spec.partition(":")
        files = names.split(",")
        copies = os.path.join(work, "copies%d" % n)
        os.makedirs(copies, exist_ok=True)
        run([protoc, "--plugin=protoc-gen-wheelrpc=" + plugin, "-I" + root, "-I" + wheelrpc_dir, "-I" + protobuf_dir,
             "--wheelrpc_out=client_proto:" + copies] + files)
        sources = descriptor_set(protoc, [root, wheelrpc_dir, protobuf_dir], files, os.path.join(work, "src%d.pb" % n))
        # No wheelrpc directory: the copies must compile without it.
        copied = descriptor_set(protoc, [copies, protobuf_dir], files, os.path.join(work, "copy%d.pb" % n))
        for source, copy in zip(sources.file, copied.file):
            expected = text_format.MessageToString(without_wheelrpc(source))
            got = text_format.MessageToString(copy)
            if OPTIONS_PROTO in copy.dependency:
                print("FAIL %s: the copy still imports %s" % (copy.name, OPTIONS_PROTO))
                failures += 1
            elif expected != got:
                print("FAIL %s (under %s): the copy's descriptor differs from the source's:" % (copy.name, root))
                sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), got.splitlines(True),
                                                           "source less wheelrpc", "client copy"))
                failures += 1
            else:
                print("ok %s: the same descriptor as its source, less wheelrpc's option and import" % copy.name)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
