// End-to-end test of `ward mcp` with the official MCP SDK client
// (@modelcontextprotocol/sdk, installed here by tools/install-deps).
// tests/integ/test_mcp.py runs it: node e2e.mjs WARD_BIN DB_PATH.
// It asserts as it goes (exit status 1 with the reason on the first
// failure) and prints one JSON line of what it saw for the Python side.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import assert from "node:assert/strict";

const [ward, db] = process.argv.slice(2);
assert.ok(ward && db, "usage: node e2e.mjs WARD_BIN DB_PATH");

const transport = new StdioClientTransport({
  command: ward,
  args: ["mcp", "--db", db],
  stderr: "pipe",
});
let stderr = "";
transport.stderr.on("data", (d) => { stderr += d; });

const client = new Client({ name: "ward-e2e", version: "1.0.0" });
const seen = {};
const errors = []; // anything the client reports besides the SDK's progress race

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function main() {
  // The handshake: initialize, version negotiation, initialized.
  await client.connect(transport);
  const info = client.getServerVersion();
  assert.equal(info.name, "ward");
  assert.ok(client.getServerCapabilities().tools, "the server offers tools");
  assert.match(client.getInstructions() ?? "", /run_code/);

  const { tools } = await client.listTools();
  seen.tools = tools.map((t) => t.name).sort();
  for (const name of ["run_code", "create_session", "list_sessions", "close_session",
                      "write_file", "read_file", "list_files"])
    assert.ok(seen.tools.includes(name), `tools/list has ${name}`);
  const runCode = tools.find((t) => t.name === "run_code");
  assert.deepEqual(runCode.inputSchema.required, ["code"]);
  assert.ok(runCode.outputSchema, "run_code declares an outputSchema");

  // A session keeps state between cells.
  const created = await client.callTool({ name: "create_session", arguments: { language: "python" } });
  assert.ok(!created.isError, text(created));
  const sid = created.structuredContent.session_id;
  assert.equal(typeof sid, "string");
  seen.session_id = sid;
  seen.session_run_id = created.structuredContent.run_id;

  const first = await client.callTool({ name: "run_code",
    arguments: { session_id: sid, code: "x = 41\nprint('first cell')" } });
  assert.ok(!first.isError, text(first));
  assert.deepEqual(first.structuredContent.logs.stdout.join(""), "first cell\n");
  const second = await client.callTool({ name: "run_code",
    arguments: { session_id: sid, code: "x + 1" } });
  assert.ok(!second.isError, text(second));
  const main = second.structuredContent.results.find((r) => r.is_main_result);
  assert.equal(main?.text, "42", "the last expression of the second cell sees x from the first");
  assert.equal(second.structuredContent.execution_count, 2);
  assert.match(text(second), /result: 42/);
  seen.state_kept = true;

  // Output streams as progress notifications when the client asks for them.
  // This SDK drops a progress notification that arrives in the same read as
  // its response (it dispatches notifications a microtask later, after the
  // response has retired the token: typescript-sdk issue 2580) and reports
  // it to onerror instead, notification included; both paths count here.
  const progress = [];
  client.onerror = (e) => {
    const m = /unknown token: (\{.*\})$/s.exec(String(e.message));
    if (m) progress.push(JSON.parse(m[1]).params.message);
    else errors.push(String(e.stack || e));
  };
  const streamed = await client.callTool(
    { name: "run_code", arguments: { session_id: sid,
      code: "print('streamed line', flush=True)\nimport time\ntime.sleep(0.3)" } },
    undefined, { onprogress: (p) => progress.push(p.message) });
  assert.ok(!streamed.isError, text(streamed));
  await new Promise((resolve) => setImmediate(resolve)); // late notifications
  assert.ok(progress.some((m) => /stdout: .*streamed line/.test(m)),
    `progress messages carry the output: ${JSON.stringify(progress)}`);
  seen.progress = progress.length;

  // A chart comes back as an image block.
  const chart = await client.callTool({ name: "run_code", arguments: { session_id: sid, code:
    "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('ward chart')\nplt.show()" } });
  assert.ok(!chart.isError, text(chart));
  const images = chart.content.filter((c) => c.type === "image");
  assert.equal(images.length, 1, `one image block: ${text(chart)}`);
  assert.equal(images[0].mimeType, "image/png");
  const png = Buffer.from(images[0].data, "base64");
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  seen.png_bytes = png.length;

  // Rich results: each format its own block, which this SDK validates
  // (CallToolResultSchema): a DataFrame's HTML and a Markdown display() as
  // embedded resources of their type, a PIL image as an image, the cell's
  // file as a resource link; the summary names each, in order.
  const rich = await client.callTool({ name: "run_code", arguments: { session_id: sid, code:
    "import pandas as pd\nfrom ward_display import Markdown\nfrom PIL import Image\n" +
    "display(pd.DataFrame({'a': [1, 2]}), Markdown('*md*'))\n" +
    "open('rich.txt', 'w').write('r')\nImage.new('RGB', (2, 2))" } });
  assert.ok(!rich.isError, text(rich));
  const blocks = rich.content.slice(1).map((c) => c.type === "resource" ? c.resource.mimeType
    : c.type === "image" ? c.mimeType : `${c.type}:${c.uri}`);
  assert.deepEqual(blocks, ["text/html", "text/markdown", "image/png", "resource_link:file:///rich.txt"]);
  assert.match(rich.content[1].resource.text, /<table/);
  assert.match(rich.content[1].resource.uri, /^ward:\/\/run\/\w+\/cell\/\d+\/result\/0\.html$/);
  assert.equal(rich.content[2].resource.text, "*md*");
  assert.match(text(rich), /display: +a\n0 +1\n1 +2\n +text\/html \(resource block 1\)\ndisplay: <ward_display.Markdown object>\n +text\/markdown \(resource block 2\)\nresult: <PIL.Image.Image[^\n]*\n +image: image\/png \(image block 3\)/);
  assert.deepEqual(rich.structuredContent.results.map((r) => r.is_main_result), [false, false, true]);
  // A result larger than a response carries is left out, with a note.
  const big = await client.callTool({ name: "run_code", arguments: { session_id: sid, code:
    "from ward_display import HTML\nHTML('<p>' + 'x' * 3000000 + '</p>')" } });
  assert.ok(!big.isError, text(big));
  assert.equal(big.content.length, 1, "no block for the left-out HTML");
  assert.match(text(big), /text\/html: 3000007 bytes, left out \(a response carries at most 1024 KiB/);
  assert.deepEqual(big.structuredContent.results[0].left_out, { html: 3000007 });
  assert.equal(big.structuredContent.results[0].html, undefined);
  seen.rich = blocks.length;

  // An exception is an error result, with its name and traceback.
  const boom = await client.callTool({ name: "run_code",
    arguments: { session_id: sid, code: "def f():\n    return 1 / 0\nf()" } });
  assert.equal(boom.isError, true);
  assert.equal(boom.structuredContent.error.name, "ZeroDivisionError");
  assert.match(text(boom), /ZeroDivisionError: division by zero/);
  assert.match(boom.structuredContent.error.traceback, /line 2, in f/);
  // ... and the session survives it.
  const after = await client.callTool({ name: "run_code", arguments: { session_id: sid, code: "x" } });
  assert.equal(after.structuredContent.results.find((r) => r.is_main_result)?.text, "41");

  // Files in and out of the session.
  const wrote = await client.callTool({ name: "write_file",
    arguments: { session_id: sid, path: "in.txt", text: "hello from the agent\n" } });
  assert.ok(!wrote.isError, text(wrote));
  const used = await client.callTool({ name: "run_code", arguments: { session_id: sid,
    code: "open('out.txt', 'w').write(open('in.txt').read().upper())" } });
  assert.ok(!used.isError, text(used));
  const read = await client.callTool({ name: "read_file", arguments: { session_id: sid, path: "out.txt" } });
  assert.ok(!read.isError, text(read));
  assert.equal(text(read), "HELLO FROM THE AGENT\n");
  const files = await client.callTool({ name: "list_files", arguments: { session_id: sid } });
  seen.files = files.structuredContent.files.map((f) => f.path).sort();

  // A one-shot run (no session) and an unknown session.
  const once = await client.callTool({ name: "run_code", arguments: { code: "print(6 * 7)" } });
  assert.equal(once.structuredContent.logs.stdout.join(""), "42\n");
  const lost = await client.callTool({ name: "run_code", arguments: { session_id: "no-such", code: "1" } });
  assert.equal(lost.isError, true);
  assert.match(text(lost), /no-such|session/);

  const listed = await client.callTool({ name: "list_sessions", arguments: {} });
  assert.ok(listed.structuredContent.sessions.some((s) => s.session_id === sid));
  const closed = await client.callTool({ name: "close_session", arguments: { session_id: sid } });
  assert.ok(!closed.isError, text(closed));
  const gone = await client.callTool({ name: "list_sessions", arguments: {} });
  assert.ok(!gone.structuredContent.sessions.some((s) => s.session_id === sid));

  assert.deepEqual(errors, [], "the client saw no protocol errors");
  await client.close();
  console.log(JSON.stringify(seen));
}

main().catch(async (e) => {
  console.error(`e2e: ${e.stack || e}\n--- ward mcp stderr ---\n${stderr}`);
  try { await client.close(); } catch { /* already gone */ }
  process.exit(1);
});
