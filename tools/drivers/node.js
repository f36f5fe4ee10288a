// ward session driver for Node (embedded in ward; see tools/session.c).
// Cells arrive on fd 5 as a JSON header line {n, nonce, timeout_s, len}
// and len bytes of code; each result leaves on fd 6 as one JSON line with
// the cell's nonce. All cells run in one vm context, so declarations and
// globals persist; the completion value of the last statement is the
// result. vm's own timeout interrupts a cell that runs too long, and a
// SIGINT (the server cancelling the cell) interrupts it too; between
// cells SIGINT is ignored. Node cannot mark fds 5 and 6 close-on-exec:
// see docs/security.md. Only what Node 18 (Debian 12) has is used.
'use strict';
const fs = require('fs');
const net = require('net');
const util = require('util');
const vm = require('vm');

const CELL_FD = 5, RESULT_FD = 6;
const sandbox = {
  require, console, process, Buffer, URL, TextEncoder, TextDecoder,
  setTimeout, clearTimeout, setInterval, clearInterval, setImmediate,
};
sandbox.globalThis = sandbox;
const ctx = vm.createContext(sandbox);
let buf = Buffer.alloc(0);
let busy = false;

function send(obj) {
  const data = Buffer.from(JSON.stringify(obj) + '\n');
  let off = 0;
  while (off < data.length) off += fs.writeSync(RESULT_FD, data, off);
}

// The stack from the cell down, without the driver's frames under vm.
function cellStack(stack) {
  const lines = String(stack).split('\n');
  const i = lines.findIndex((l) => l.includes('node:vm'));
  return (i > 0 ? lines.slice(0, i) : lines).join('\n');
}

function runCell(h, code) {
  const out = { nonce: h.nonce, n: h.n, results: [], error: null,
                interrupted: false };
  try {
    const opts = { filename: `<cell ${h.n}>`, breakOnSigint: true };
    if (h.timeout_s > 0) opts.timeout = Math.max(1, Math.round(h.timeout_s * 1000));
    const v = vm.runInContext(code, ctx, opts);
    if (v !== undefined) {
      out.results.push({ text: util.inspect(v), is_main_result: true });
    }
  } catch (e) {
    const isErr = e instanceof Error || (e && typeof e === 'object' && 'stack' in e);
    out.interrupted = !!(e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT');
    out.stopped = out.interrupted ||
                  !!(e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED');
    out.error = {
      name: isErr && e.name ? String(e.name) : typeof e,
      value: isErr ? String(e.message) : util.inspect(e),
      traceback: isErr && e.stack ? cellStack(e.stack) : '',
    };
  }
  return out;
}

// A result must not overtake the cell's output (ward passes on what the
// pipes hold when the result comes): fn runs once stdout and stderr have
// written everything the cell gave them. The direct writes (below) make
// that at once; a chunk queued in a stream the cell set up itself is
// waited for, not left behind, unless the cell was stopped.
function afterOutput(fn, stopped) {
  if (stopped) return fn(); // its streams' bookkeeping may be half done
  const queued = [process.stdout, process.stderr].filter(
    (s) => s.writableLength > 0 && !s.destroyed);
  let left = queued.length;
  if (!left) return fn();
  for (const s of queued) s.write('', () => { if (--left === 0) fn(); });
}

function pump() {
  if (busy) return;
  for (;;) {
    const nl = buf.indexOf(10);
    if (nl < 0) return;
    const h = JSON.parse(buf.subarray(0, nl).toString());
    if (buf.length < nl + 1 + h.len) return;
    const code = buf.subarray(nl + 1, nl + 1 + h.len).toString();
    buf = buf.subarray(nl + 1 + h.len);
    busy = true;
    const out = runCell(h, code);
    const stopped = out.stopped;
    delete out.stopped;
    let waited = false;
    afterOutput(() => {
      send(out);
      busy = false;
      if (waited) pump();
    }, stopped);
    if (busy) { waited = true; return; }
  }
}

// stdout and stderr are pipes to ward. A cell's writes go straight to
// their fds, blocking: written before the cell goes on, as in Python. And
// nothing is left half done when a timeout or a cancel stops the cell: V8
// stops it wherever its JavaScript is, Node's stream code included, and a
// write stopped between the bytes leaving and the stream noting it left
// the stream "writing" for good (every later write queued behind it, the
// result waiting on that queue, the session ended as stuck: a cell that
// printed in a loop past its timeout, 10 times in 10). Here the only state
// of a write is the fd's.
const pause = new Int32Array(new SharedArrayBuffer(4));
function writeDirect(stream, fd) {
  if (stream._handle && typeof stream._handle.setBlocking === 'function') {
    stream._handle.setBlocking(true);
  }
  stream.write = function write(chunk, encoding, cb) {
    if (typeof encoding === 'function') { cb = encoding; encoding = undefined; }
    let data;
    if (typeof chunk === 'string') data = Buffer.from(chunk, encoding || 'utf8');
    else if (ArrayBuffer.isView(chunk)) data = chunk;
    else {
      const e = new TypeError('The "chunk" argument must be of type string or ' +
                              'an instance of Buffer or Uint8Array');
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
    let off = 0;
    try {
      while (off < data.byteLength) {
        try {
          off += fs.writeSync(fd, data, off, data.byteLength - off);
        } catch (e) {
          if (e.code !== 'EAGAIN') throw e;
          Atomics.wait(pause, 0, 0, 1); // not blocking after all: wait
        }
      }
    } catch (e) {
      process.nextTick(() => { if (cb) cb(e); stream.emit('error', e); });
      return false;
    }
    if (cb) process.nextTick(cb, null);
    return true;
  };
}
writeDirect(process.stdout, 1);
writeDirect(process.stderr, 2);
process.on('SIGINT', () => {}); // between cells: nothing to interrupt
// Up: ward ends the start-up's CPU pinning (tracer/output.c) and drops
// this line; the cells then run with every CPU.
fs.writeSync(RESULT_FD, '{"ward":"ready"}\n');
// A net.Socket on the pipe: libuv polls it. (fs.createReadStream would read
// it on libuv's thread pool: four more threads, each a traced clone under
// ward, ~2 ms of every session start.)
const cells = new net.Socket({ fd: CELL_FD, readable: true, writable: false });
cells.on('data', (d) => { buf = Buffer.concat([buf, d]); pump(); });
cells.on('end', () => process.exit(0));
