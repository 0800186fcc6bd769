#!/usr/bin/env node
// gRPC interop test client on @grpc/grpc-js (Node), a foreign peer for
// wheelrpc's gRPC protocol.
//
// Runs the test cases of gRPC's doc/interop-test-descriptions.md against a
// grpc.testing.TestService server and prints one line per case:
// "PASS <case>" or "FAIL <case>: <why>". Exit status 0 only if every case
// passed; 2 on a usage error. The protos are loaded with @grpc/proto-loader
// from interop/proto at the top of the repository (--proto_root overrides).
//
//   node interop_client.js --server_host=127.0.0.1 --server_port=N --test_case=all|NAME
//       [--use_tls=true --ca_file=ca.pem --server_host_override=foo.test.google.fr]
//
// Compression: grpc-js compresses a channel's calls with the option
// grpc.default_compression_algorithm (a second channel here, gzip), and
// leaves one message uncompressed with the NoCompress write flag
// (call.write(message, NO_COMPRESS)). It does not tell whether a received
// message had the compressed flag set, so this client looks at the HTTP/2
// DATA of its own streams: http2.connect, which grpc-js calls for every
// connection, is wrapped so that each stream's 'data' chunks also go through
// a reader of gRPC's message framing (a flags byte, then a 4-byte length),
// which records each message's flags byte.
//
// The gzip channel is a new one for every compressed call: grpc-js 1.14
// splits the grpc-accept-encoding it receives at "," without trimming, so
// after a response advertising "identity, deflate, gzip" (gRPC C++/Python's
// spelling) it takes " gzip" for an unknown algorithm and sends the rest of
// the channel's calls uncompressed.

'use strict';

const http2 = require('http2');
const fs = require('fs');
const path = require('path');

// ---- the DATA tap -------------------------------------------------------------
const streamTaps = []; // one per HTTP/2 stream opened, in order

class FlagTap {
  constructor(requestPath) {
    this.path = requestPath;
    this.flags = []; // the flags byte of each message received, in order
    this.header = Buffer.alloc(0);
    this.remaining = 0; // bytes of the current message still to skip
  }

  feed(chunk) {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, chunk.length - offset);
        this.remaining -= n;
        offset += n;
        continue;
      }
      const need = 5 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(offset, offset + need)]);
      offset += Math.min(need, chunk.length - offset);
      if (this.header.length === 5) {
        this.flags.push(this.header[0]);
        this.remaining = this.header.readUInt32BE(1);
        this.header = Buffer.alloc(0);
      }
    }
  }
}

const connect = http2.connect;
http2.connect = function tappedConnect(...args) {
  const session = connect.apply(this, args);
  const request = session.request;
  session.request = function tappedRequest(headers, ...rest) {
    const stream = request.call(this, headers, ...rest);
    const tap = new FlagTap(headers && headers[':path']);
    streamTaps.push(tap);
    const emit = stream.emit;
    stream.emit = function tappedEmit(event, ...eventArgs) {
      if (event === 'data') tap.feed(eventArgs[0]);
      return emit.call(this, event, ...eventArgs);
    };
    return stream;
  };
  return session;
};

// Loaded after the wrap (it would see it anyway: it calls http2.connect through the module).
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// ---- constants ----------------------------------------------------------------
const ECHO_INITIAL_KEY = 'x-grpc-test-echo-initial';
const ECHO_INITIAL_VALUE = 'test_initial_metadata_value';
const ECHO_TRAILING_KEY = 'x-grpc-test-echo-trailing-bin';
const ECHO_TRAILING_VALUE = Buffer.from([0xab, 0xab, 0xab]);
const SPECIAL_STATUS_MESSAGE = '\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \u{1F608}\t\n';
const CALL_TIMEOUT_MS = 30000;
const NO_COMPRESS = 2; // grpc-js WriteFlags.NoCompress (a const enum, not exported at run time)
const GZIP = 2; // grpc-js compressionAlgorithms.gzip

const CASES = [
  'empty_unary', 'large_unary', 'client_streaming', 'server_streaming', 'ping_pong', 'empty_stream',
  'cancel_after_begin', 'cancel_after_first_response', 'timeout_on_sleeping_server', 'custom_metadata',
  'status_code_and_message', 'special_status_message', 'unimplemented_method', 'unimplemented_service',
  'client_compressed_unary', 'server_compressed_unary', 'client_compressed_streaming',
  'server_compressed_streaming',
];

class CaseFailed extends Error {}

function check(condition, why) {
  if (!condition) throw new CaseFailed(why);
}

function statusName(code) {
  const name = Object.keys(grpc.status).find((k) => grpc.status[k] === code);
  return name === undefined ? String(code) : name;
}

function deadline(ms = CALL_TIMEOUT_MS) {
  return { deadline: new Date(Date.now() + ms) };
}

function zeros(size) {
  return { type: 'COMPRESSABLE', body: Buffer.alloc(size) };
}

function checkPayload(payload, size, what) {
  check(payload, `${what}: no payload`);
  check(payload.type === 'COMPRESSABLE', `${what}: payload type ${payload.type}`);
  check(payload.body.length === size, `${what}: payload of ${payload.body.length} bytes, expected ${size}`);
  check(payload.body.every((b) => b === 0), `${what}: payload is not all zeros`);
}

function largeRequest(extra = {}) {
  return { response_type: 'COMPRESSABLE', response_size: 314159, payload: zeros(271828), ...extra };
}

function outputRequest(sizes, payloadSize) {
  const request = { response_type: 'COMPRESSABLE', response_parameters: sizes.map((size) => ({ size })) };
  if (payloadSize !== undefined) request.payload = zeros(payloadSize);
  return request;
}

function checkStatus(error, code, what, details) {
  check(error, `${what}: the call succeeded, expected ${statusName(code)}`);
  check(error.code === code,
    `${what}: status ${statusName(error.code)} (${JSON.stringify(error.details)}), expected ${statusName(code)}`);
  if (details !== undefined) {
    check(error.details === details,
      `${what}: status message ${JSON.stringify(error.details)}, expected ${JSON.stringify(details)}`);
  }
}

function checkOk(error, what) {
  check(!error, `${what}: status ${error && statusName(error.code)} (${error && error.details})`);
}

// ---- calls as promises -----------------------------------------------------------
// A unary or client-streaming call: resolves with its error (or null), response,
// initial metadata and status once all three have arrived.
function finishUnary(start) {
  return new Promise((resolve) => {
    const out = { error: null, response: null, metadata: null, status: null };
    let pending = 2;
    const done = () => { if (--pending === 0) resolve(out); };
    const call = start((error, response) => {
      out.error = error || null;
      out.response = response;
      done();
    });
    call.on('metadata', (metadata) => { out.metadata = metadata; });
    call.on('status', (status) => { out.status = status; done(); });
    out.call = call;
  });
}

// A call that streams responses: its responses and how it ended, pulled one at a time.
class ResponseStream {
  constructor(call) {
    this.call = call;
    this.messages = [];
    this.waiters = [];
    this.ended = false;
    this.error = null;
    this.status = null;
    this.metadata = null;
    this.statusWaiters = [];
    call.on('data', (m) => { this.messages.push(m); this.wake(); });
    call.on('metadata', (m) => { this.metadata = m; });
    call.on('error', (e) => { this.error = e; this.ended = true; this.wake(); });
    call.on('end', () => { this.ended = true; this.wake(); });
    call.on('status', (s) => {
      this.status = s;
      this.ended = true;
      this.wake();
      this.statusWaiters.splice(0).forEach((w) => w());
    });
  }

  wake() {
    this.waiters.splice(0).forEach((w) => w());
  }

  // The next response, or null once the call has ended.
  async next() {
    while (this.messages.length === 0 && !this.ended) {
      await new Promise((resolve) => this.waiters.push(resolve));
    }
    return this.messages.length > 0 ? this.messages.shift() : null;
  }

  // Every remaining response, after the call's status.
  async rest() {
    await this.finished();
    return this.messages.splice(0);
  }

  async finished() {
    while (this.status === null) await new Promise((resolve) => this.statusWaiters.push(resolve));
    return this.status;
  }
}

function writeAsync(call, message, flags) {
  return new Promise((resolve, reject) => {
    const cb = (error) => (error ? reject(error) : resolve());
    if (flags === undefined) call.write(message, cb);
    else call.write(message, flags, cb);
  });
}

function tapsSince(before, method) {
  return streamTaps.slice(before).filter((t) => t.path === `/grpc.testing.TestService/${method}`);
}

// ---- the cases -------------------------------------------------------------------
class Cases {
  constructor(stub, makeGzipStub, unimplementedStub) {
    this.stub = stub;
    this.makeGzipStub = makeGzipStub; // a stub on a new channel that compresses with gzip
    this.unimplementedStub = unimplementedStub;
  }

  async empty_unary() {
    const r = await finishUnary((cb) => this.stub.EmptyCall({}, deadline(), cb));
    checkOk(r.error, 'EmptyCall');
    check(r.response && typeof r.response === 'object', 'no response');
  }

  async large_unary() {
    const r = await finishUnary((cb) => this.stub.UnaryCall(largeRequest(), deadline(), cb));
    checkOk(r.error, 'UnaryCall');
    checkPayload(r.response.payload, 314159, 'response');
  }

  async client_streaming() {
    const r = await finishUnary((cb) => {
      const call = this.stub.StreamingInputCall(deadline(), cb);
      for (const size of [27182, 8, 1828, 45904]) call.write({ payload: zeros(size) });
      call.end();
      return call;
    });
    checkOk(r.error, 'StreamingInputCall');
    check(r.response.aggregated_payload_size === 74922,
      `aggregated_payload_size ${r.response.aggregated_payload_size}, expected 74922`);
  }

  async server_streaming() {
    const sizes = [31415, 9, 2653, 58979];
    const s = new ResponseStream(this.stub.StreamingOutputCall(outputRequest(sizes), deadline()));
    const responses = await s.rest();
    checkOk(s.error, 'StreamingOutputCall');
    check(responses.length === 4, `${responses.length} responses, expected 4`);
    responses.forEach((r, i) => checkPayload(r.payload, sizes[i], `response ${i}`));
  }

  async ping_pong() {
    const requestSizes = [27182, 8, 1828, 45904];
    const responseSizes = [31415, 9, 2653, 58979];
    const call = this.stub.FullDuplexCall(deadline());
    const s = new ResponseStream(call);
    for (let i = 0; i < 4; i++) {
      call.write(outputRequest([responseSizes[i]], requestSizes[i]));
      const response = await s.next();
      check(response, `no response ${i} (${s.error ? s.error.message : 'the call ended'})`);
      checkPayload(response.payload, responseSizes[i], `response ${i}`);
    }
    call.end();
    const rest = await s.rest();
    checkOk(s.error, 'FullDuplexCall');
    check(rest.length === 0, `${rest.length} responses after the fourth`);
    check(s.status.code === grpc.status.OK, `status ${statusName(s.status.code)}`);
  }

  async empty_stream() {
    const call = this.stub.FullDuplexCall(deadline());
    const s = new ResponseStream(call);
    call.end();
    const rest = await s.rest();
    checkOk(s.error, 'FullDuplexCall');
    check(rest.length === 0, `${rest.length} responses, expected none`);
  }

  async cancel_after_begin() {
    const r = await finishUnary((cb) => {
      const call = this.stub.StreamingInputCall(deadline(), cb);
      call.cancel();
      return call;
    });
    checkStatus(r.error, grpc.status.CANCELLED, 'StreamingInputCall');
  }

  async cancel_after_first_response() {
    const call = this.stub.FullDuplexCall(deadline());
    const s = new ResponseStream(call);
    call.write(outputRequest([31415], 27182));
    const response = await s.next();
    check(response, `no response (${s.error ? s.error.message : 'the call ended'})`);
    checkPayload(response.payload, 31415, 'response');
    call.cancel();
    await s.finished();
    checkStatus(s.error, grpc.status.CANCELLED, 'FullDuplexCall');
  }

  async timeout_on_sleeping_server() {
    const call = this.stub.FullDuplexCall(deadline(1));
    const s = new ResponseStream(call);
    call.write({ payload: zeros(27182) });
    await s.finished();
    checkStatus(s.error, grpc.status.DEADLINE_EXCEEDED, 'FullDuplexCall');
  }

  static echoMetadata() {
    const metadata = new grpc.Metadata();
    metadata.set(ECHO_INITIAL_KEY, ECHO_INITIAL_VALUE);
    metadata.set(ECHO_TRAILING_KEY, ECHO_TRAILING_VALUE);
    return metadata;
  }

  static checkEchoed(initial, trailing, what) {
    const i = initial ? initial.get(ECHO_INITIAL_KEY) : [];
    check(i.length === 1 && i[0] === ECHO_INITIAL_VALUE,
      `${what}: initial metadata ${ECHO_INITIAL_KEY} is ${JSON.stringify(i)}`);
    const t = trailing ? trailing.get(ECHO_TRAILING_KEY) : [];
    check(t.length === 1 && Buffer.isBuffer(t[0]) && t[0].equals(ECHO_TRAILING_VALUE),
      `${what}: trailing metadata ${ECHO_TRAILING_KEY} is ${JSON.stringify(t)}`);
  }

  async custom_metadata() {
    const r = await finishUnary((cb) => this.stub.UnaryCall(largeRequest(), Cases.echoMetadata(), deadline(), cb));
    checkOk(r.error, 'UnaryCall');
    checkPayload(r.response.payload, 314159, 'UnaryCall response');
    Cases.checkEchoed(r.metadata, r.status.metadata, 'UnaryCall');

    const call = this.stub.FullDuplexCall(Cases.echoMetadata(), deadline());
    const s = new ResponseStream(call);
    call.write(outputRequest([314159], 271828));
    call.end();
    const responses = await s.rest();
    checkOk(s.error, 'FullDuplexCall');
    check(responses.length === 1, `FullDuplexCall: ${responses.length} responses, expected 1`);
    checkPayload(responses[0].payload, 314159, 'FullDuplexCall response');
    Cases.checkEchoed(s.metadata, s.status.metadata, 'FullDuplexCall');
  }

  async statusEcho(message, withDuplex) {
    const status = { code: 2, message };
    const r = await finishUnary((cb) => this.stub.UnaryCall({ response_status: status }, deadline(), cb));
    checkStatus(r.error, grpc.status.UNKNOWN, 'UnaryCall', message);
    if (!withDuplex) return;
    const call = this.stub.FullDuplexCall(deadline());
    const s = new ResponseStream(call);
    call.write({ response_status: status });
    call.end();
    await s.finished();
    checkStatus(s.error, grpc.status.UNKNOWN, 'FullDuplexCall', message);
  }

  async status_code_and_message() {
    await this.statusEcho('test status message', true);
  }

  async special_status_message() {
    await this.statusEcho(SPECIAL_STATUS_MESSAGE, false);
  }

  async unimplemented_method() {
    const r = await finishUnary((cb) => this.stub.UnimplementedCall({}, deadline(), cb));
    checkStatus(r.error, grpc.status.UNIMPLEMENTED, 'TestService/UnimplementedCall');
  }

  async unimplemented_service() {
    const r = await finishUnary((cb) => this.unimplementedStub.UnimplementedCall({}, deadline(), cb));
    checkStatus(r.error, grpc.status.UNIMPLEMENTED, 'UnimplementedService/UnimplementedCall');
  }

  async client_compressed_unary() {
    const probe = largeRequest({ expect_compressed: { value: true } });
    const p = await finishUnary((cb) => this.stub.UnaryCall(probe, deadline(), cb));
    checkStatus(p.error, grpc.status.INVALID_ARGUMENT, 'the uncompressed probe with expect_compressed');
    for (const compressed of [true, false]) {
      const what = compressed ? 'the compressed call' : 'the uncompressed call';
      const stub = compressed ? this.makeGzipStub() : this.stub;
      const request = largeRequest({ expect_compressed: { value: compressed } });
      const r = await finishUnary((cb) => stub.UnaryCall(request, deadline(), cb));
      if (stub !== this.stub) stub.close();
      checkOk(r.error, what);
      checkPayload(r.response.payload, 314159, what);
    }
  }

  async server_compressed_unary() {
    for (const compressed of [true, false]) {
      const what = `response_compressed=${compressed}`;
      const before = streamTaps.length;
      const request = largeRequest({ response_compressed: { value: compressed } });
      const r = await finishUnary((cb) => this.stub.UnaryCall(request, deadline(), cb));
      checkOk(r.error, what);
      checkPayload(r.response.payload, 314159, what);
      const taps = tapsSince(before, 'UnaryCall');
      check(taps.length === 1 && taps[0].flags.length === 1,
        `${what}: could not see the response's framing (${taps.length} streams)`);
      const was = (taps[0].flags[0] & 1) === 1;
      check(was === compressed, `${what}: the response ${was ? 'has' : 'lacks'} the compressed flag`);
    }
  }

  async client_compressed_streaming() {
    const p = await finishUnary((cb) => {
      const call = this.stub.StreamingInputCall(deadline(), cb);
      call.write({ expect_compressed: { value: true }, payload: zeros(27182) });
      call.end();
      return call;
    });
    checkStatus(p.error, grpc.status.INVALID_ARGUMENT, 'the uncompressed probe with expect_compressed');
    const gzipStub = this.makeGzipStub();
    const r = await finishUnary((cb) => {
      const call = gzipStub.StreamingInputCall(deadline(), cb);
      (async () => {
        await writeAsync(call, { expect_compressed: { value: true }, payload: zeros(27182) });
        await writeAsync(call, { expect_compressed: { value: false }, payload: zeros(45904) }, NO_COMPRESS);
        call.end();
      })().catch(() => call.end()); // a failed write: the status says why
      return call;
    });
    gzipStub.close();
    checkOk(r.error, 'StreamingInputCall');
    check(r.response.aggregated_payload_size === 73086,
      `aggregated_payload_size ${r.response.aggregated_payload_size}, expected 73086`);
  }

  async server_compressed_streaming() {
    const wanted = [[true, 31415], [false, 92653]];
    const request = {
      response_type: 'COMPRESSABLE',
      response_parameters: wanted.map(([compressed, size]) => ({ size, compressed: { value: compressed } })),
    };
    const before = streamTaps.length;
    const s = new ResponseStream(this.stub.StreamingOutputCall(request, deadline()));
    const responses = await s.rest();
    checkOk(s.error, 'StreamingOutputCall');
    check(responses.length === 2, `${responses.length} responses, expected 2`);
    const taps = tapsSince(before, 'StreamingOutputCall');
    check(taps.length === 1 && taps[0].flags.length === 2,
      `could not see the responses' framing (${taps.length} streams)`);
    responses.forEach((response, i) => {
      checkPayload(response.payload, wanted[i][1], `response ${i}`);
      const was = (taps[0].flags[i] & 1) === 1;
      check(was === wanted[i][0],
        `response ${i} (compressed=${wanted[i][0]}) ${was ? 'has' : 'lacks'} the compressed flag`);
    });
  }
}

// ---- command line -------------------------------------------------------------------
function parseFlags(argv) {
  const flags = {
    server_host: '127.0.0.1', server_port: '', test_case: 'all', use_tls: 'false', ca_file: '',
    server_host_override: '',
    proto_root: path.resolve(__dirname, '..', '..', '..', '..', 'interop', 'proto'),
  };
  const usage = (why) => {
    process.stderr.write(`interop_client.js: ${why}\nflags: ${Object.keys(flags).map((k) => `--${k}=`).join(' ')}\n`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(argv[i]);
    if (!m) usage(`not a flag: ${argv[i]}`);
    if (!(m[1] in flags)) usage(`unknown flag --${m[1]}`);
    let value = m[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) usage(`--${m[1]} needs a value`);
      value = argv[++i];
    }
    flags[m[1]] = value;
  }
  if (!/^\d+$/.test(flags.server_port)) usage('--server_port=N is required');
  if (!['true', 'false', '1', '0'].includes(flags.use_tls)) usage('--use_tls takes true or false');
  flags.use_tls = flags.use_tls === 'true' || flags.use_tls === '1';
  if (flags.test_case !== 'all' && !CASES.includes(flags.test_case)) {
    usage(`unknown --test_case ${flags.test_case} (all, or one of: ${CASES.join(' ')})`);
  }
  return flags;
}

function describe(error) {
  if (error instanceof CaseFailed) return error.message;
  if (error && error.code !== undefined && error.details !== undefined) {
    return `call failed: ${statusName(error.code)}: ${error.details}`;
  }
  return String(error && error.stack ? error.stack : error);
}

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  const definition = protoLoader.loadSync('grpc/testing/test.proto', {
    includeDirs: [flags.proto_root], keepCase: true, defaults: true, enums: String,
  });
  const testing = grpc.loadPackageDefinition(definition).grpc.testing;
  const target = `${flags.server_host}:${flags.server_port}`;
  const options = {};
  if (flags.server_host_override) options['grpc.default_authority'] = flags.server_host_override;
  let credentials = grpc.credentials.createInsecure();
  if (flags.use_tls) {
    const root = flags.ca_file ? fs.readFileSync(flags.ca_file) : null;
    credentials = grpc.credentials.createSsl(root);
    if (flags.server_host_override) options['grpc.ssl_target_name_override'] = flags.server_host_override;
  }
  const stub = new testing.TestService(target, credentials, options);
  const makeGzipStub = () => new testing.TestService(target, credentials,
    { ...options, 'grpc.default_compression_algorithm': GZIP });
  const unimplementedStub = new testing.UnimplementedService(target, credentials, options);
  const cases = new Cases(stub, makeGzipStub, unimplementedStub);

  let failed = 0;
  for (const name of flags.test_case === 'all' ? CASES : [flags.test_case]) {
    try {
      await cases[name]();
      process.stdout.write(`PASS ${name}\n`);
    } catch (error) {
      failed++;
      process.stdout.write(`FAIL ${name}: ${describe(error).replace(/[\r\n]+/g, ' ')}\n`);
    }
  }
  stub.close();
  unimplementedStub.close();
  return failed === 0 ? 0 : 1;
}

// process.exit rather than waiting for the event loop to drain: after
// cancel_after_begin on a connection already up, grpc-js 1.14 keeps that
// connection's socket referenced until the cancelled call's deadline (30 s).
// (Writes to stdout and stderr are synchronous for files and pipes.)
main().then((code) => process.exit(code), (error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
