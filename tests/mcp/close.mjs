// A client that closes with sessions open (tests/integ/test_mcp.py runs it):
// node close.mjs WARD_BIN DB_PATH [running]. It opens 6 python sessions with
// the official SDK client, runs a cell in each, and closes the client (the
// SDK ends stdin, then sends SIGTERM 2 s later if ward has not exited, then
// SIGKILL); with "running", a cell of the first session is still running
// then. Prints {ids: the sessions' run ids, close_ms, stderr: ward's}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [ward, db, mode] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: ward, args: ["mcp", "--db", db],
                                             stderr: "pipe" });
let stderr = "";
transport.stderr.on("data", (d) => { stderr += d; });
const client = new Client({ name: "close-test", version: "1.0.0" });
await client.connect(transport);
const ids = [], sids = [];
for (let i = 0; i < 6; i++) {
  const r = await client.callTool({ name: "create_session", arguments: { language: "python" } });
  ids.push(r.structuredContent.run_id);
  sids.push(r.structuredContent.session_id);
  await client.callTool({ name: "run_code", arguments: { session_id: sids[i], code: "x = 1" } });
}
if (mode === "running") {
  client.callTool({ name: "run_code", arguments: { session_id: sids[0],
                                                   code: "import time\ntime.sleep(60)" } })
    .catch(() => {});
  await new Promise((r) => setTimeout(r, 500));
}
const t = Date.now();
await client.close();
await new Promise((r) => setTimeout(r, 200)); // the last of stderr
console.log(JSON.stringify({ ids, close_ms: Date.now() - t, stderr }));
