// ward session driver for Node (embedded in ward; see tools/agent/session.c).
// Cells arrive on fd 5 as a JSON header line {n, nonce, timeout_s, len}
// and len bytes of code; each result leaves on fd 6 as one JSON line with
// the cell's nonce. The cells run in Node's own global context, one after
// the other, as typed at Node's REPL: declarations and globals persist,
// every Node global is there (require, performance, structuredClone,
// fetch, ...), and a cell's values are of the same realm as Node's (an
// array from fs is an Array). The completion value of the last statement
// is the result. A cell that runs too long is interrupted by a SIGINT
// from the server at its timeout (vm's own timeout only where Node lacks
// the SIGINT watchdog below: it starts a thread for every cell), and so
// is a cancelled cell; between cells SIGINT is ignored. The result says
// `sigint: true` when a SIGINT stopped the script: the server knows
// whether it was the timeout. A cancel also comes as a line {cancel: nonce}
// on fd 5: it ends the wait of a cell for the promise it ended with,
// which no signal can do reliably (below). Node cannot mark fds 5 and 6
// close-on-exec: see docs/security.md. Only what Node 18 (Debian 12) has
// is used.
//
// The driver runs as `node -e`, a script in that global context: all of
// it is in this function, so that none of its names is a global a cell
// could see or declare again (`const fs = require('fs')` in a cell).
(function wardDriver() {
  'use strict';
  const fs = require('fs');
  const util = require('util');
  const vm = require('vm');
  // the driver's own, whatever a cell does to the globals
  const stringify = JSON.stringify.bind(JSON);
  const parse = JSON.parse.bind(JSON);
  const concat = Buffer.concat.bind(Buffer);
  const bufferFrom = Buffer.from.bind(Buffer);
  const alloc = Buffer.alloc.bind(Buffer);
  const writeSync = fs.writeSync.bind(fs);
  const readSync = fs.readSync.bind(fs);
  const inspect = util.inspect;
  const runInThisContext = vm.runInThisContext.bind(vm);
  const later = setImmediate;
  const setT = setTimeout;
  const clearT = clearTimeout;

  const CELL_FD = 5, RESULT_FD = 6;
  let buf = alloc(0);
  let busy = false;
  const pause = new Int32Array(new SharedArrayBuffer(4));

  function writeAll(fd, data) {
    let off = 0;
    while (off < data.byteLength) {
      try {
        off += writeSync(fd, data, off, data.byteLength - off);
      } catch (e) {
        if (e.code !== 'EAGAIN') throw e;
        Atomics.wait(pause, 0, 0, 1); // not blocking after all: wait
      }
    }
  }

  function send(obj) {
    writeAll(RESULT_FD, bufferFrom(stringify(obj) + '\n'));
  }

  // The stack from the cell down, without the driver's frames under vm.
  function cellStack(stack) {
    const lines = String(stack).split('\n');
    const i = lines.findIndex((l) => l.includes('node:vm'));
    return (i > 0 ? lines.slice(0, i) : lines).join('\n');
  }

  function errorOf(e) {
    let isErr = false;
    try {
      isErr = e instanceof Error || (e !== null && typeof e === 'object' && 'stack' in e);
    } catch (_) { /* a proxy: not an error */ }
    const error = {
      name: isErr && e.name ? String(e.name) : typeof e,
      value: isErr ? String(e.message) : inspect(e),
      traceback: isErr && e.stack ? cellStack(e.stack) : '',
    };
    if (error.name === 'SyntaxError' && /await is only valid/.test(error.value)) {
      error.value += ' (a cell is a script, not a module: wrap its code in ' +
                     '`(async () => { ... })()`; a cell waits for the promise ' +
                     'it ends with)';
    }
    return error;
  }

  // A cell's value when it is a promise (or any thenable): the cell goes
  // on until it settles. Ends with undefined when it is not one.
  function thenable(v) {
    try {
      return v !== null && (typeof v === 'object' || typeof v === 'function') &&
             typeof v.then === 'function' ? v : undefined;
    } catch (_) {
      return undefined;
    }
  }

  // A cell's script. While the code listens for SIGINT itself (a server's
  // `process.on('SIGINT', ...)`), libuv's handler has replaced the
  // watchdog's: the listeners are taken off (as vm does), the watchdog is
  // started again to put its handler back, and the listeners are put
  // back after the script.
  function runScript(code, opts) {
    if (!watchdog || process.listenerCount('SIGINT') === 0) {
      return runInThisContext(code, opts);
    }
    const saved = process.rawListeners('SIGINT');
    process.removeAllListeners('SIGINT');
    watchdog.stopSigintWatchdog();
    watchdog.startSigintWatchdog();
    try {
      return runInThisContext(code, opts);
    } finally {
      for (const l of saved) process.addListener('SIGINT', l);
    }
  }

  // The result frame, whether the cell was stopped (timeout, SIGINT), and
  // the promise it ended with, if any.
  function runCell(h, code) {
    const out = { nonce: h.nonce, n: h.n, results: [], error: null,
                  interrupted: false };
    let stopped = false, pending;
    try {
      const opts = { filename: `<cell ${h.n}>`, breakOnSigint: true };
      if (!watchdog && h.timeout_s > 0) {
        opts.timeout = Math.max(1, Math.round(h.timeout_s * 1000));
      }
      const v = runScript(code, opts);
      pending = thenable(v);
      if (v !== undefined && !pending) {
        out.results.push({ text: inspect(v), is_main_result: true });
      }
    } catch (e) {
      out.interrupted = !!(e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT');
      out.sigint = !!(e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED');
      stopped = out.interrupted || out.sigint;
      out.error = errorOf(e);
    }
    return [out, stopped, pending];
  }

  // A cell that ended with a promise: its result is the promise's value
  // (or its rejection), once settled, while the event loop runs the
  // cell's timers and I/O. Its time limit still holds, and a SIGINT (a
  // cancel) ends the wait: the promise cannot be stopped, only no longer
  // waited for.
  let endWait = null;
  function awaitCell(h, out, p, t0, finish) {
    let done = false, timer = null;
    const settle = (stopped) => {
      if (done) return;
      done = true;
      endWait = null;
      if (timer) clearT(timer);
      finish(stopped);
    };
    if (h.timeout_s > 0) {
      const ms = Math.max(1, Math.round(h.timeout_s * 1000));
      timer = setT(guarded(() => {
        out.interrupted = true;
        out.error = { name: 'Error', value: `Script execution timed out after ${ms}ms`,
                      traceback: '' };
        settle(true);
      }), Math.max(0, ms - (Date.now() - t0)));
    }
    endWait = (nonce) => {
      if (nonce !== undefined && nonce !== h.nonce) return; // an earlier cell's
      out.error = { name: 'Error', value: 'Script execution interrupted.', traceback: '' };
      settle(true);
    };
    try {
      p.then(guarded((v) => {
        if (v !== undefined) out.results.push({ text: inspect(v), is_main_result: true });
        settle(false);
      }), guarded((e) => {
        out.error = errorOf(e);
        settle(false);
      }));
    } catch (e) {
      out.error = errorOf(e);
      settle(false);
    }
  }

  // A result must not overtake the cell's output (ward passes on what the
  // pipes hold when the result comes): fn runs once stdout and stderr
  // have written everything the cell gave them. The direct writes (below)
  // make that at once; a chunk queued in a stream the cell set up itself
  // is waited for, not left behind, unless the cell was stopped.
  function afterOutput(fn, stopped) {
    if (stopped) return fn(); // its streams' bookkeeping may be half done
    const queued = made.filter((s) => s.writableLength > 0 && !s.destroyed);
    let left = queued.length;
    if (!left) return fn();
    for (const s of queued) s.write('', () => { if (--left === 0) fn(); });
  }

  // Takes the cancel lines at the head of buf: each ends the wait of the
  // cell it names, if that one still waits (a cancel that came after its
  // cell ended is dropped). Returns the next cell's header line, parsed,
  // and where it ends; or null.
  function takeCancels() {
    for (;;) {
      const nl = buf.indexOf(10);
      if (nl < 0) return null;
      const h = parse(buf.subarray(0, nl).toString());
      if (h.cancel === undefined) return [h, nl];
      buf = buf.subarray(nl + 1);
      if (endWait) endWait(h.cancel);
    }
  }

  // The whole header and code of the next cell, taken from buf (left
  // there when peek); or null.
  function nextCell(peek) {
    const head = takeCancels();
    if (!head) return null;
    const [h, nl] = head;
    if (buf.length < nl + 1 + h.len) return null;
    if (peek) return true;
    const code = buf.subarray(nl + 1, nl + 1 + h.len).toString();
    buf = buf.subarray(nl + 1 + h.len);
    return [h, code];
  }

  // A cell's own environment variables (header "env", from the Python
  // hub, drivers/python.py): set in process.env while the cell runs, put
  // back as they were when its result leaves.
  const keysOf = Object.keys;
  function cellEnv(env) {
    if (!env) return () => {};
    const saved = keysOf(env).map((k) => [k, k in process.env, process.env[k]]);
    for (const [k] of saved) process.env[k] = env[k];
    return () => {
      for (const [k, had, v] of saved) {
        if (had) process.env[k] = v;
        else delete process.env[k];
      }
    };
  }

  function pump() {
    if (busy) {
      takeCancels();
      return;
    }
    const c = nextCell();
    if (!c) return;
    busy = true;
    const t0 = Date.now();
    const envBack = cellEnv(c[0].env);
    const [out, stopped, pending] = runCell(c[0], c[1]);
    // The result leaves at the event loop's next turn: the cell's promise
    // jobs and nextTick callbacks run first, so a rejection it left
    // unhandled is reported in its own stderr (below).
    const finish = (stop) => later(guarded(() => afterOutput(guarded(() => {
      envBack();
      send(out);
      busy = false;
      pump();
    }), stop)));
    if (pending) awaitCell(c[0], out, pending, t0, finish);
    else finish(stopped);
  }

  // The driver's own errors end the session (ward says the interpreter
  // exited); errors of the cells' callbacks do not (below).
  function die(e) {
    try {
      writeAll(2, bufferFrom(`ward node driver: ${e && e.stack ? e.stack : e}\n`));
    } catch (_) { /* nothing left to tell */ }
    process.exit(70);
  }
  function guarded(fn) {
    return (...args) => {
      try {
        fn(...args);
      } catch (e) {
        die(e);
      }
    };
  }

  // stdout and stderr are pipes to ward. A cell's writes go straight to
  // their fds, blocking: written before the cell goes on, as in Python.
  // And nothing is left half done when a timeout or a cancel stops the
  // cell: V8 stops it wherever its JavaScript is, Node's stream code
  // included, and a write stopped between the bytes leaving and the
  // stream noting it left the stream "writing" for good (every later
  // write queued behind it, the result waiting on that queue, the session
  // ended as stuck). Here the only state of a write is the fd's.
  function writeDirect(stream, fd) {
    if (stream._handle && typeof stream._handle.setBlocking === 'function') {
      stream._handle.setBlocking(true);
    }
    stream.write = function write(chunk, encoding, cb) {
      if (typeof encoding === 'function') { cb = encoding; encoding = undefined; }
      let data;
      if (typeof chunk === 'string') data = bufferFrom(chunk, encoding || 'utf8');
      else if (ArrayBuffer.isView(chunk)) data = chunk;
      else {
        const e = new TypeError('The "chunk" argument must be of type string or ' +
                                'an instance of Buffer or Uint8Array');
        e.code = 'ERR_INVALID_ARG_TYPE';
        throw e;
      }
      try {
        writeAll(fd, data);
      } catch (e) {
        process.nextTick(() => { if (cb) cb(e); stream.emit('error', e); });
        return false;
      }
      if (cb) process.nextTick(cb, null);
      return true;
    };
  }
  // Made when first used, as Node does: a pipe's stream is a net.Socket,
  // and `net` takes ~4 ms to load, which a cell that prints nothing (and
  // the session's start) need not pay.
  const made = [];
  for (const [name, fd] of [['stdout', 1], ['stderr', 2]]) {
    const d = Object.getOwnPropertyDescriptor(process, name);
    if (!d || typeof d.get !== 'function') {
      writeDirect(process[name], fd);
      made.push(process[name]);
      continue;
    }
    let stream = null;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: d.enumerable,
      get() {
        if (!stream) {
          stream = d.get.call(process);
          writeDirect(stream, fd);
          made.push(stream);
        }
        return stream;
      },
    });
  }

  // SIGINT. vm's breakOnSigint starts a watchdog (a thread and a signal
  // handler of its own) for each script and takes it down after it: a
  // SIGINT landing while it is taken down is either kept for the NEXT
  // cell's script, interrupted at once, or ends Node (its default
  // handler is back for a moment). Started once here, it stays up: each
  // cell's script only registers with it, and a SIGINT between scripts is
  // noted and dropped. (Node's REPL does the same with these two calls.
  // A cell may call them too; it can only make itself harder to
  // interrupt, and the server's grace still ends a cell that does not
  // stop.) A cell waiting for its promise is then ended by
  // the cancel line alone. No JavaScript listener for SIGINT: vm would
  // take it off and put it back around each script, and libuv's handler
  // would replace the watchdog's. Where the binding is missing, as
  // before: a listener ends the wait, and the windows stay.
  let watchdog = null;
  try {
    const b = process.binding('contextify');
    if (typeof b.startSigintWatchdog === 'function' &&
        typeof b.stopSigintWatchdog === 'function') watchdog = b;
  } catch (_) { /* not in this Node */ }
  if (watchdog) watchdog.startSigintWatchdog();
  else process.on('SIGINT', () => { if (endWait) endWait(); });
  // An exception thrown in a cell's callback (a timer, an event) or a
  // promise a cell left rejected with no handler would end Node, and the
  // session with every variable in it. As at Node's REPL, it is reported
  // on stderr ("Uncaught ...") and the session goes on.
  function uncaught(how, err) {
    let text;
    try {
      text = cellStack(inspect(err));
    } catch (_) {
      text = String(err);
    }
    try {
      writeAll(2, bufferFrom(`${how} ${text}\n`));
    } catch (e) {
      die(e);
    }
  }
  process.on('uncaughtException', (err) => uncaught('Uncaught', err));
  process.on('unhandledRejection', (why) => uncaught('Uncaught (in promise)', why));
  // Up: ward ends the start-up's CPU pinning (tracer/output.c) and drops
  // this line; the cells then run with every CPU.
  writeSync(RESULT_FD, '{"ward":"ready"}\n');

  // The first cell is read with blocking reads: no cell has left anything
  // on the event loop yet. Then fd 5 becomes a net.Socket, which libuv
  // polls between cells while the cells' timers and promises run; loading
  // `net` and making the socket (~6 ms natively) come after the first
  // result, not before it. (fs.createReadStream would read on libuv's
  // thread pool: four more threads, each a traced clone under ward.)
  guarded(() => {
    const chunk = alloc(65536);
    while (!nextCell(true)) {
      let n;
      try {
        n = readSync(CELL_FD, chunk, 0, chunk.length, null);
      } catch (e) {
        if (e.code === 'EINTR') continue;
        if (e.code !== 'EAGAIN') throw e;
        Atomics.wait(pause, 0, 0, 1);
        continue;
      }
      if (n === 0) process.exit(0);
      buf = concat([buf, chunk.subarray(0, n)]);
    }
    pump();
    const net = require('net');
    const cells = new net.Socket({ fd: CELL_FD, readable: true, writable: false });
    cells.on('data', guarded((d) => { buf = concat([buf, d]); pump(); }));
    cells.on('end', () => process.exit(0));
  })();
})();
