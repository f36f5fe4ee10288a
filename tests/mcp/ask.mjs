// "ask" rules over MCP with the official SDK client (elicitation):
// node ask.mjs WARD_BIN DB_PATH POLICY [noelicit]. The policy asks
// before a read of /etc/hostname (ask_timeout 2 s). With elicitation the
// client answers allow_once, deny, allow_always in turn (a fourth read is
// not asked: allowed for the run); a second session's question is
// answered only after the timeout (denied). Without the capability
// (noelicit) every question is denied at once. Prints one JSON line of
// what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import assert from "node:assert/strict";

const [ward, db, policy, mode] = process.argv.slice(2);
assert.ok(ward && db && policy, "usage: node ask.mjs WARD_BIN DB_PATH POLICY [noelicit]");
const elicit = mode !== "noelicit";

const transport = new StdioClientTransport({
  command: ward, args: ["mcp", "--db", db, "--policy", policy], stderr: "pipe",
});
let stderr = "";
transport.stderr.on("data", (d) => { stderr += d; });
const client = new Client({ name: "ward-ask-test", version: "2.0.0" },
  { capabilities: elicit ? { elicitation: {} } : {} });
const seen = { asked: [], stdout: [] };
let answers = ["allow_once", "deny", "allow_always"];
let delay = 0;

if (elicit)
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    seen.asked.push({ message: req.params.message, ask: req.params._meta?.["ward/ask"],
                      schema: req.params.requestedSchema });
    if (delay) {
      await new Promise((r) => setTimeout(r, delay));
      return { action: "accept", content: { answer: "allow_once" } };
    }
    const answer = answers.shift();
    return answer ? { action: "accept", content: { answer } } : { action: "decline" };
  });

const READ = "def read():\n    try:\n        return open('/etc/hostname').read() and 'read'\n" +
             "    except PermissionError:\n        return 'denied'\n";

async function run(sid, code) {
  const r = await client.callTool({ name: "run_code", arguments: { session_id: sid, code: READ + code } });
  assert.ok(!r.isError, JSON.stringify(r.content));
  return r.structuredContent;
}

async function main() {
  await client.connect(transport);
  const s1 = (await client.callTool({ name: "create_session", arguments: {} })).structuredContent;
  let r = await run(s1.session_id, "print(read(), read(), read(), read())");
  seen.stdout.push(r.logs.stdout.join(""));
  seen.run_ids = [s1.run_id];
  if (elicit) {
    const s2 = (await client.callTool({ name: "create_session", arguments: {} })).structuredContent;
    delay = 3500; // past ask_timeout (2 s): denied, the late answer changes nothing
    const t0 = Date.now();
    r = await run(s2.session_id, "print(read())");
    seen.timeout_ms = Date.now() - t0;
    seen.stdout.push(r.logs.stdout.join(""));
    seen.run_ids.push(s2.run_id);
    await new Promise((res) => setTimeout(res, 2000)); // the late answer is sent
  }
  await client.close();
  console.log(JSON.stringify(seen));
}

main().catch(async (e) => {
  console.error(`ask: ${e.stack || e}\n--- ward mcp stderr ---\n${stderr}`);
  try { await client.close(); } catch { /* already gone */ }
  process.exit(1);
});
