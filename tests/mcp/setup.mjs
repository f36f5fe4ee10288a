// A session with a setup phase (docs/policy.md "phases") created through
// the official MCP SDK client: the tool's schema takes setup, the result
// (checked by the SDK against create_session's outputSchema) says how it
// went, the cells see what it made and cannot redo it.
// tests/integ/test_phases.py runs it: node setup.mjs WARD_BIN DB POLICY.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import assert from "node:assert/strict";

const [ward, db, policy] = process.argv.slice(2);
assert.ok(ward && db && policy, "usage: node setup.mjs WARD_BIN DB_PATH POLICY");
const transport = new StdioClientTransport({
  command: ward, args: ["mcp", "--db", db, "--policy", policy], stderr: "pipe",
});
let stderr = "";
transport.stderr.on("data", (d) => { stderr += d; });
const client = new Client({ name: "ward-setup", version: "1.0.0" });

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function main() {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const create = tools.find((t) => t.name === "create_session");
  assert.deepEqual(create.inputSchema.properties.setup.required, ["code"]);
  const made = await client.callTool({ name: "create_session", arguments: {
    language: "python",
    setup: { code: "open('made', 'w').write('by setup'); print('set up')" } } });
  assert.ok(!made.isError, text(made));
  assert.equal(made.structuredContent.setup.status, "ok");
  assert.equal(made.structuredContent.setup.stdout, "set up\n");
  const sid = made.structuredContent.session_id;
  const read = await client.callTool({ name: "run_code",
    arguments: { session_id: sid, code: "print(open('made').read())" } });
  assert.equal(read.structuredContent.logs.stdout.join(""), "by setup\n");
  const write = await client.callTool({ name: "run_code",
    arguments: { session_id: sid, code: "open('made', 'w')" } });
  assert.equal(write.structuredContent.error.name, "PermissionError");
  const failed = await client.callTool({ name: "create_session",
    arguments: { setup: { code: "raise SystemExit(5)" } } });
  assert.equal(failed.isError, true);
  assert.match(text(failed), /setup failed/);
  await client.close();
  console.log(JSON.stringify({ run_id: made.structuredContent.run_id }));
}

main().catch(async (e) => {
  console.error(`setup.mjs: ${e.stack || e}\n--- ward mcp stderr ---\n${stderr}`);
  try { await client.close(); } catch { /* already gone */ }
  process.exit(1);
});
