// End-to-end test of `ward serve --listen` with the official, unmodified
// E2B SDKs (e2b, @e2b/code-interpreter at the versions of package-lock.json,
// installed here by tools/install-deps). tests/integ/test_e2b.py runs it:
//   E2B_API_URL=... E2B_SANDBOX_URL=... E2B_API_KEY=... node e2e.mjs SCENARIO
// Each scenario asserts as it goes (exit status 1 with the reason on the
// first failure) and prints one JSON line of what it saw, for the Python
// side to check against the audit database.
import {
  Sandbox, AuthenticationError, CommandExitError, FileNotFoundError,
  InvalidArgumentError, NotFoundError, SandboxError, SandboxNotFoundError,
  TimeoutError,
} from "@e2b/code-interpreter";
import assert from "node:assert/strict";

const scenario = process.argv[2];
const seen = {};

async function rejects(promise, cls, re, what) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `${what}: expected an error, got none`);
  if (cls) assert.ok(err instanceof cls, `${what}: expected ${cls.name}, got ${err.name}: ${err.message}`);
  if (re) assert.match(err.message, re, `${what}: message`);
  return err;
}

async function lifecycle() {
  const sbx = await Sandbox.create({ timeoutMs: 120_000, envs: { WARD_E2E: "from-create" },
                                     metadata: { suite: "e2e", case: "lifecycle" } });
  seen.sandbox_id = sbx.sandboxId;
  assert.equal(await sbx.isRunning(), true);

  // list: ours is there, with its metadata; a metadata filter selects it
  const all = await Sandbox.list().nextItems();
  const mine = all.find((s) => s.sandboxId === sbx.sandboxId);
  assert.ok(mine, "Sandbox.list() has the new sandbox");
  assert.deepEqual(mine.metadata, { suite: "e2e", case: "lifecycle", ward_run_id: mine.metadata.ward_run_id });
  assert.match(mine.metadata.ward_run_id, /^[0-9a-f]{16}$/);
  seen.run_id = mine.metadata.ward_run_id;
  assert.equal(mine.state, "running");
  const other = await Sandbox.create({ metadata: { suite: "e2e", case: "other" } });
  const filtered = await Sandbox.list({ query: { metadata: { case: "lifecycle" } } }).nextItems();
  assert.deepEqual(filtered.map((s) => s.sandboxId), [sbx.sandboxId]);

  // setTimeout moves the end
  const before = (await Sandbox.getInfo(sbx.sandboxId)).endAt.getTime();
  await sbx.setTimeout(600_000);
  const after = (await Sandbox.getInfo(sbx.sandboxId)).endAt.getTime();
  assert.ok(after - before > 400_000, `setTimeout moved endAt by ${after - before} ms`);

  // cells keep state; stdout streams before the cell ends
  const events = [];
  const t0 = Date.now();
  const first = await sbx.runCode("import os, sys, time\nx = 41\nprint('hello', flush=True)\ntime.sleep(1)\n" +
                                  "print(os.environ.get('WARD_E2E'))\nprint('careful', file=sys.stderr)", {
    onStdout: (m) => events.push(["stdout", m.line, Date.now() - t0]),
    onStderr: (m) => events.push(["stderr", m.line, Date.now() - t0]),
  });
  const t1 = Date.now() - t0;
  assert.equal(first.error, undefined);
  assert.deepEqual(first.logs.stdout.join(""), "hello\nfrom-create\n");
  assert.equal(events[0][1], "hello\n");
  assert.ok(events.some((e) => e[0] === "stderr" && e[1] === "careful\n"), "onStderr got the stderr line");
  assert.deepEqual(first.logs.stderr, ["careful\n"]);
  assert.ok(events[0][2] < t1 - 700, `the first line came at ${events[0][2]} ms, the end at ${t1} ms`);
  const second = await sbx.runCode("x + 1", { onResult: (r) => events.push(["result", r.text]) });
  assert.equal(second.text, "42");
  assert.ok(events.some((e) => e[0] === "result" && e[1] === "42"), "onResult was called");
  assert.equal(second.executionCount, 2);

  // rich results in E2B's shape: a DataFrame's html and text, display()
  // before the main result, a matplotlib figure as png
  const shown = [];
  const rich = await sbx.runCode(
    "import pandas as pd\ndisplay(pd.DataFrame({'a': [1, 2]}))\n" +
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
    "plt.plot([1, 2, 3])\nplt.show()\n" +
    "class M:\n  def _repr_markdown_(self): return '**md**'\nM()",
    { onResult: (r) => shown.push(r.formats()) });
  assert.equal(rich.error, undefined);
  assert.equal(rich.results.length, 3, JSON.stringify(rich.results.map((r) => r.formats())));
  assert.match(rich.results[0].html, /<table/);
  assert.match(rich.results[0].text, /a/);
  assert.equal(rich.results[0].isMainResult, false);
  assert.ok(Buffer.from(rich.results[1].png, "base64").subarray(1, 4).toString() === "PNG", "a png");
  assert.equal(rich.results[2].markdown, "**md**");
  assert.equal(rich.results[2].isMainResult, true);
  assert.equal(shown.length, 3, "onResult for each");
  assert.ok(shown[0].includes("html") && shown[1].includes("png") && shown[2].includes("markdown"),
            JSON.stringify(shown));

  // per-cell envs
  const envs = await sbx.runCode("import os\nprint(os.environ.get('CELL_ONLY'))", { envs: { CELL_ONLY: "yes" } });
  assert.equal(envs.logs.stdout.join(""), "yes\n");

  // an error, and a denial said with its rule and errno
  const errors = [];
  const bad = await sbx.runCode("1/0", { onError: (e) => errors.push(e) });
  assert.equal(bad.error.name, "ZeroDivisionError");
  assert.match(bad.error.traceback, /ZeroDivisionError/);
  assert.equal(errors.length, 1);
  const net = await sbx.runCode("import socket\nsocket.create_connection(('192.0.2.1', 443), timeout=5)");
  assert.ok(net.error, "connect out is an error");
  assert.match(net.error.value, /ward denied connect 192\.0\.2\.1:443 \(rule [^,]+, E[A-Z]+\): no network in this sandbox/);
  seen.denial = net.error.value;

  // Sandbox.connect gives the same sandbox: its state is there
  const again = await Sandbox.connect(sbx.sandboxId);
  assert.equal((await again.runCode("x")).text, "41");

  // a client that stops waiting (timeoutMs) cancels the cell
  await rejects(sbx.runCode("import time\ntime.sleep(30)", { timeoutMs: 1500 }), TimeoutError, null, "runCode timeoutMs");
  const t2 = Date.now();
  assert.equal((await sbx.runCode("x * 2")).text, "82");
  assert.ok(Date.now() - t2 < 8000, `the next cell waited ${Date.now() - t2} ms for the cancelled one`);

  // kill: the sandbox is gone for every call
  assert.equal(await sbx.kill(), true);
  assert.equal(await sbx.isRunning(), false);
  assert.equal(await Sandbox.kill(sbx.sandboxId), false);
  await rejects(sbx.runCode("1"), TimeoutError, /not running: it was killed/, "runCode on a killed sandbox");
  await rejects(sbx.files.read("/home/user/x"), TimeoutError, /not running/, "files.read on a killed sandbox");
  await rejects(Sandbox.connect(sbx.sandboxId), SandboxNotFoundError, null, "connect to a killed sandbox");
  assert.ok(!(await Sandbox.list().nextItems()).some((s) => s.sandboxId === sbx.sandboxId));
  await other.kill();

  // a sandbox's timeout ends it
  const brief = await Sandbox.create({ timeoutMs: 1000 });
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(await brief.isRunning(), false);
  await rejects(Sandbox.getInfo(brief.sandboxId), SandboxNotFoundError, null, "getInfo after the timeout");
}

async function files() {
  const sbx = await Sandbox.create();
  seen.sandbox_id = sbx.sandboxId;
  const f = sbx.files;
  // text, binary, nested, relative
  const info = await f.write("/home/user/notes/deep/a.txt", "héllo\n");
  assert.equal(info.path, "/home/user/notes/deep/a.txt");
  assert.equal(await f.read("/home/user/notes/deep/a.txt"), "héllo\n");
  const bytes = new Uint8Array(256).map((_, i) => i);
  await f.write("bin/all.bin", bytes.buffer);
  assert.deepEqual(await f.read("/home/user/bin/all.bin", { format: "bytes" }), bytes);
  await f.write([{ path: "/home/user/m1.txt", data: "one" }, { path: "m2.txt", data: "two" }]);
  assert.equal(await f.read("m2.txt"), "two");
  // a stream up (octet-stream, chunked) and down; gzip uploads are refused
  const up = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("streamed ")); c.enqueue(new TextEncoder().encode("up")); c.close(); } });
  await f.write("/home/user/s.txt", up);
  let down = "";
  for await (const ch of await f.read("/home/user/s.txt", { format: "stream" })) down += new TextDecoder().decode(ch);
  assert.equal(down, "streamed up");
  await rejects(f.write("/home/user/g.txt", "x", { gzip: true }), SandboxError, /415.*uncompressed/, "a gzip upload");
  assert.equal(await f.exists("/home/user/g.txt"), false);
  // the code sees what was written, and the files sees what the code wrote
  const ex = await sbx.runCode("print(open('/home/user/m1.txt').read())\nopen('made.txt','w').write('by code')");
  assert.equal(ex.logs.stdout.join(""), "one\n");
  assert.equal(await f.read("/home/user/made.txt"), "by code");
  // list, exists, makeDir, rename, remove
  const top = await f.list("/home/user");
  const names = Object.fromEntries(top.map((e) => [e.name, e.type]));
  assert.equal(names["notes"], "dir");
  assert.equal(names["m1.txt"], "file");
  const deep = top.find((e) => e.name === "m1.txt");
  assert.equal(deep.path, "/home/user/m1.txt");
  assert.equal(deep.size, 3);
  assert.equal(await f.exists("/home/user/m1.txt"), true);
  assert.equal(await f.exists("/home/user/nope.txt"), false);
  assert.equal(await f.makeDir("/home/user/newdir/sub"), true);
  assert.equal(await f.makeDir("/home/user/newdir/sub"), false);
  const moved = await f.rename("/home/user/m1.txt", "/home/user/newdir/sub/m1.txt");
  assert.equal(moved.path, "/home/user/newdir/sub/m1.txt");
  assert.equal(await f.exists("/home/user/m1.txt"), false);
  assert.equal(await f.read("/home/user/newdir/sub/m1.txt"), "one");
  await f.remove("/home/user/newdir/sub/m1.txt");
  assert.equal(await f.exists("/home/user/newdir/sub/m1.txt"), false);
  await f.remove("/home/user/newdir");
  assert.equal(await f.exists("/home/user/newdir"), false);
  // bad input: missing files, paths outside /home/user, too large
  await rejects(f.read("/home/user/missing.txt"), FileNotFoundError, null, "read a missing file");
  for (const p of ["/etc/passwd", "../outside.txt", "/home/user/../../etc/passwd", "/home/username/x"]) {
    await rejects(f.read(p), InvalidArgumentError, /outside the sandbox's home/, `read ${p}`);
    await rejects(f.write(p, "x"), InvalidArgumentError, /outside the sandbox's home/, `write ${p}`);
  }
  await rejects(f.list("/etc"), InvalidArgumentError, /outside the sandbox's home/, "list /etc");
  // a path too long to map is refused whole, never cut short into another
  const long = "/home/user/" + "d/".repeat(2100) + "victim.txt";
  await rejects(f.write(long, "x"), InvalidArgumentError, /too long/, "a path over 4 KiB");
  assert.equal(await f.exists("/home/user/d"), false, "nothing was made of a cut path");
  await rejects(f.write("/home/user/huge.bin", new Uint8Array((64 << 20) + 1)), SandboxError,
                /413.*over ward's limit/, "an upload over the cap");
  assert.equal(await f.exists("/home/user/huge.bin"), false);
  await sbx.kill();
}

async function commands() {
  const sbx = await Sandbox.create();
  seen.sandbox_id = sbx.sandboxId;
  const out = [];
  const r = await sbx.commands.run("echo hi; echo oops >&2; echo $GREETING", {
    envs: { GREETING: "hello" }, onStdout: (d) => out.push(d) });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, "hi\nhello\n");
  // after the command's own stderr, a line per thing ward denied it
  assert.match(r.stderr, /^oops\n(ward denied [^\n]+\n)*$/);
  assert.ok(out.join("").includes("hi\n"), "onStdout got the output");
  const fail = await rejects(sbx.commands.run("echo partial; exit 3"), CommandExitError, null, "exit 3");
  assert.equal(fail.exitCode, 3);
  assert.equal(fail.stdout, "partial\n");
  // what a command writes, the files (and cells) see
  await sbx.commands.run("mkdir -p out && printf data > out/f.txt");
  assert.equal(await sbx.files.read("/home/user/out/f.txt"), "data");
  assert.equal((await sbx.commands.run("pwd; cat f.txt", { cwd: "/home/user/out" })).stdout, "/home/user/out\ndata");
  await rejects(sbx.commands.run("pwd", { cwd: "/etc" }), InvalidArgumentError, /outside the sandbox's home/, "cwd /etc");
  const procs = [];
  const bg = await sbx.commands.run("sleep 30", { background: true });
  procs.push(...(await sbx.commands.list()));
  assert.ok(procs.some((p) => p.pid === bg.pid && p.args.includes("-c")), JSON.stringify(procs));
  assert.equal(await sbx.commands.kill(bg.pid), true);
  await rejects(bg.wait(), null, null, "a killed command");
  // a denial reaches stderr with its rule and errno
  const den = await rejects(sbx.commands.run(
    "python3 -c \"import socket; socket.create_connection(('192.0.2.1', 80), timeout=5)\""),
    CommandExitError, null, "a command that connects out");
  assert.match(den.stderr, /ward denied connect 192\.0\.2\.1:80 \(rule [^,]+, E[A-Z]+\): no network in this sandbox/);
  // the command's timeout
  await rejects(sbx.commands.run("sleep 30", { timeoutMs: 1000 }), null, null, "timeoutMs");
  // background: the handle comes back at once; wait() gives the result
  const t0 = Date.now();
  const h = await sbx.commands.run("sleep 1; echo done", { background: true });
  assert.ok(Date.now() - t0 < 900, `background returned after ${Date.now() - t0} ms`);
  assert.equal(typeof h.pid, "number");
  const res = await h.wait();
  assert.equal(res.stdout, "done\n");
  await sbx.kill();
}

async function languages() {
  const sbx = await Sandbox.create();
  seen.sandbox_id = sbx.sandboxId;
  await sbx.runCode("v = 'py'");
  const js1 = await sbx.runCode("globalThis.k = 20; console.log('js out')", { language: "js" });
  assert.equal(js1.logs.stdout.join(""), "js out\n");
  assert.equal((await sbx.runCode("k + 22", { language: "js" })).text, "42");
  const sh = await sbx.runCode("X=5; echo bash $X", { language: "bash" });
  assert.equal(sh.logs.stdout.join(""), "bash 5\n");
  assert.equal((await sbx.runCode("v")).text, "'py'");
  // a context is a fresh interpreter: its own state
  const ctx = await sbx.createCodeContext({ language: "python" });
  assert.equal(typeof ctx.id, "string");
  assert.equal(ctx.language, "python");
  const inCtx = await sbx.runCode("print('v' in globals())", { context: ctx });
  assert.equal(inCtx.logs.stdout.join(""), "False\n");
  await sbx.runCode("w = 7", { context: ctx });
  assert.equal((await sbx.runCode("w", { context: ctx })).text, "7");
  const listed = await sbx.listCodeContexts();
  assert.ok(listed.some((c) => c.id === ctx.id), "listCodeContexts has the new context");
  await sbx.removeCodeContext(ctx);
  const r = await sbx.runCode("1", { language: "r" });
  assert.match(r.error?.value ?? "", /language 'r' is not served by ward/);
  await sbx.kill();
}

async function bad() {
  const sbx = await Sandbox.create();
  seen.sandbox_id = sbx.sandboxId;
  await rejects(Sandbox.create({ apiKey: "wrong-key" }), AuthenticationError, /API key/, "create with a wrong key");
  await rejects(Sandbox.list({ apiKey: "wrong-key" }).nextItems(), AuthenticationError, null, "list with a wrong key");
  await rejects(Sandbox.connect("s-0000000000000000"), SandboxNotFoundError, null, "connect to an unknown id");
  assert.equal(await Sandbox.kill("s-0000000000000000"), false);
  await rejects(Sandbox.setTimeout("s-0000000000000000", 10_000), SandboxNotFoundError, null, "setTimeout unknown");
  // a sandbox object with another's id but no token: refused
  const forged = new Sandbox({ sandboxId: sbx.sandboxId, envdVersion: "0.5.7",
                               envdAccessToken: "0".repeat(64), trafficAccessToken: "0".repeat(64) });
  await rejects(forged.runCode("1"), SandboxError, /401/, "runCode with a wrong token");
  await rejects(forged.files.read("/home/user/x"), AuthenticationError, /access token/, "files.read with a wrong token");
  await rejects(forged.files.list("/home/user"), AuthenticationError, /access token/, "files.list with a wrong token");
  // a timeout above the server's cap
  await rejects(Sandbox.create({ timeoutMs: 10 * 3600_000 }), SandboxError, /above this server's limit/, "a huge timeout");
  // a kill ends the cell that runs: the cell says so
  const running = sbx.runCode("import time\nprint('start', flush=True)\ntime.sleep(30)");
  await new Promise((r) => setTimeout(r, 1000));
  await sbx.kill();
  const ended = await running;
  assert.match(ended.error?.value ?? "", /the sandbox was closed while this cell ran/);
}

async function parallel() {
  // 8 sandboxes each sleeping 1 s finish together in under 2.5 s, and
  // control requests are answered while those cells run
  const boxes = await Promise.all(Array.from({ length: 8 }, () => Sandbox.create()));
  await Promise.all(boxes.map((b) => b.runCode("import time")));
  const t0 = Date.now();
  const cells = Promise.all(boxes.map((b) => b.runCode("time.sleep(1)").then(() => Date.now() - t0)));
  await new Promise((r) => setTimeout(r, 200));
  const control = [];
  const timed = async (name, p) => { const s = Date.now(); await p; control.push([name, Date.now() - s, Date.now() - t0]); };
  await timed("list", Sandbox.list().nextItems());
  await timed("isRunning", boxes[0].isRunning());
  await timed("files.write", boxes[1].files.write("/home/user/while.txt", "x"));
  await timed("files.read", boxes[1].files.read("/home/user/while.txt"));
  const extra = await Sandbox.create();
  control.push(["create", 0, Date.now() - t0]);
  await timed("kill", extra.kill());
  const ends = await cells;
  const total = Date.now() - t0;
  seen.total_ms = total;
  seen.control = control;
  assert.ok(total < 2500, `8 parallel sleep(1) cells took ${total} ms`);
  for (const [name, , at] of control)
    assert.ok(at < Math.min(...ends), `${name} was answered at ${at} ms, after the cells ended (${ends})`);
  await Promise.all(boxes.map((b) => b.kill()));
}

async function background() {
  // commands run beside the cells and each other (issue 25): a background
  // command's handle comes back at once, cells and other commands answer
  // while it runs, its output reaches its own callbacks only
  const sbx = await Sandbox.create();
  seen.sandbox_id = sbx.sandboxId;
  const out = [], err = [];
  let t0 = Date.now();
  const h1 = await sbx.commands.run("echo start; sleep 3; echo done; echo e1 >&2",
    { background: true, onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
  seen.handle_ms = Date.now() - t0;
  assert.ok(seen.handle_ms < 900, `background returned after ${seen.handle_ms} ms`);
  t0 = Date.now();
  const cell = await sbx.runCode("print('cell out'); 1+1");
  seen.cell_ms = Date.now() - t0;
  assert.equal(cell.text, "2");
  assert.ok(seen.cell_ms < 1000, `runCode answered after ${seen.cell_ms} ms while a command ran`);
  assert.deepEqual(cell.logs.stdout, ["cell out\n"], "the command's output is not the cell's");
  const h2 = await sbx.commands.run("sleep 30", { background: true });
  // a foreground command does not wait for a running cell
  const slow = sbx.runCode("import time; time.sleep(2); print('slow')");
  await new Promise((r) => setTimeout(r, 300));
  t0 = Date.now();
  const fg = await sbx.commands.run("echo fg; echo fe >&2");
  seen.fg_ms = Date.now() - t0;
  assert.equal(fg.stdout, "fg\n");
  // (then the sandbox's denials, e.g. bash's probe of /dev/tty)
  assert.match(fg.stderr, /^fe\n(ward denied [^\n]*\n)*$/);
  assert.ok(seen.fg_ms < 1200, `a command answered after ${seen.fg_ms} ms while a cell ran`);
  assert.deepEqual((await slow).logs.stdout, ["slow\n"]);
  const listed = (await sbx.commands.list()).map((p) => p.pid);
  assert.ok(listed.includes(h1.pid) && listed.includes(h2.pid), JSON.stringify(listed));
  assert.equal(await sbx.commands.kill(h2.pid), true);
  await rejects(h2.wait(), null, null, "a killed background command");
  const r1 = await h1.wait();
  assert.equal(r1.exitCode, 0);
  assert.equal(r1.stdout, "start\ndone\n");
  assert.match(r1.stderr, /^e1\n(ward denied [^\n]*\n)*$/);
  assert.equal(out.join(""), "start\ndone\n", "onStdout saw its command's output");
  assert.match(err.join(""), /^e1\n(ward denied [^\n]*\n)*$/);
  const after = (await sbx.commands.list()).map((p) => p.pid);
  assert.ok(!after.includes(h1.pid) && !after.includes(h2.pid), JSON.stringify(after));
  // handle.kill() ends one too; a command left running ends with its sandbox
  const h3 = await sbx.commands.run("sleep 30", { background: true });
  assert.equal(await h3.kill(), true);
  await rejects(h3.wait(), null, null, "handle.kill()");
  const h4 = await sbx.commands.run("echo left; sleep 30", { background: true });
  h4.wait().catch(() => {});
  await new Promise((r) => setTimeout(r, 300));
  await sbx.kill();
}

async function setup() {
  // a server with --setup: the sandbox comes with what its setup made;
  // WARD_E2E_CODE is the cell that looks (test_e2b.py checks its output)
  const sbx = await Sandbox.create({ timeoutMs: 120_000 });
  seen.sandbox_id = sbx.sandboxId;
  seen.run_id = (await Sandbox.getInfo(sbx.sandboxId)).metadata.ward_run_id;
  const ex = await sbx.runCode(process.env.WARD_E2E_CODE);
  assert.equal(ex.error, undefined, `the cell failed: ${JSON.stringify(ex.error)}`);
  seen.stdout = ex.logs.stdout.join("");
  // every sandbox has its own setup, not only the first
  const again = await Sandbox.create({ timeoutMs: 120_000 });
  seen.run_id2 = (await Sandbox.getInfo(again.sandboxId)).metadata.ward_run_id;
  seen.stdout2 = (await again.runCode(process.env.WARD_E2E_CODE)).logs.stdout.join("");
  await Promise.all([sbx.kill(), again.kill()]);
}

async function setup_fails() {
  // a server whose --setup fails: Sandbox.create fails, naming the run
  const err = await rejects(Sandbox.create({ timeoutMs: 60_000 }), SandboxError,
                            /setup failed.*its record: run [0-9a-f]{16}/, "create with a failing setup");
  seen.error = err.message;
  seen.name = err.name;
  assert.deepEqual(await Sandbox.list().nextItems(), [], "no sandbox was left");
}

const scenarios = { lifecycle, files, commands, languages, bad, parallel, background, setup, setup_fails };
assert.ok(scenarios[scenario], `usage: node e2e.mjs ${Object.keys(scenarios).join("|")}`);
try {
  await scenarios[scenario]();
  console.log(JSON.stringify(seen));
  // the SDK's runCode leaves its request timer running when the request
  // fails (60 s): do not wait for it
  process.exit(0);
} catch (e) {
  console.error(`${scenario}: ${e.stack || e}`);
  console.log(JSON.stringify(seen));
  process.exit(1);
}
