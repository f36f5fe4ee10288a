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
// written everything the cell gave them. Blocking writes (below) make that
// at once; a chunk still queued in Node is waited for, not left behind.
function afterOutput(fn) {
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
    let waited = false;
    afterOutput(() => {
      send(out);
      busy = false;
      if (waited) pump();
    });
    if (busy) { waited = true; return; }
  }
}

// stdout and stderr are pipes to ward: Node writes them asynchronously,
// queueing what the pipe cannot take yet. Blocking writes finish before
// the cell goes on, as in Python (where the handle offers it).
for (const s of [process.stdout, process.stderr]) {
  if (s._handle && typeof s._handle.setBlocking === 'function') {
    s._handle.setBlocking(true);
  }
}
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
