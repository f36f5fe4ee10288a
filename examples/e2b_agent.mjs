// An agent's code-interpreter tool on the official E2B SDK, unmodified,
// against ward (`ward serve --listen`) instead of E2B's cloud.
//
//   WARD_API_KEY=secret ward serve --listen 127.0.0.1:49982 --profile sh &
//   export E2B_API_URL=http://127.0.0.1:49982 E2B_SANDBOX_URL=http://127.0.0.1:49982
//   export E2B_API_KEY=secret
//   node examples/e2b_agent.mjs [OUT_DIR]
//
// It uploads a CSV, runs pandas cells that build on each other (output
// streamed), saves a matplotlib chart, runs a shell command, and shows what
// a denial looks like to the model (the rule and errno in the error). Every
// cell and command is in ward's audit database: `ward show RUN` (printed).
// In your own project: npm install @e2b/code-interpreter. In ward's tree the
// copy tools/install-deps put in tests/e2b/ is used.
import { readFileSync, writeFileSync } from "node:fs";

const { Sandbox } = await import("@e2b/code-interpreter").catch(() =>
  import(new URL("../tests/e2b/node_modules/@e2b/code-interpreter/dist/index.mjs", import.meta.url)));

const out = process.argv[2] ?? ".";
const sbx = await Sandbox.create({ timeoutMs: 300_000, metadata: { agent: "example" } });
try {
  await sbx.files.write("/home/user/data/sales.csv",
                        readFileSync(new URL("sales.csv", import.meta.url), "utf8"));

  await sbx.runCode("import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(len(df), 'rows')",
                    { onStdout: (m) => process.stdout.write(`sandbox> ${m.line}`) });
  const summary = await sbx.runCode("df.groupby('region')['amount'].sum().round(2)");
  console.log(`totals by region:\n${summary.text}`);

  const chart = await sbx.runCode(
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
    "df.groupby('region')['amount'].sum().plot.bar()\nplt.title('sales by region')\nplt.show()");
  const png = chart.results.find((r) => r.png)?.png;
  if (png) {
    writeFileSync(`${out}/chart.png`, Buffer.from(png, "base64"));
    console.log(`saved ${out}/chart.png`);
  }

  const ls = await sbx.commands.run("ls -l data && wc -l data/sales.csv");
  console.log(ls.stdout.trimEnd());

  // What the model sees when the sandbox refuses something.
  const net = await sbx.runCode("import urllib.request\nurllib.request.urlopen('http://192.0.2.1', timeout=3)");
  console.log(`a denial, as the model reads it: ${net.error?.name}: ${net.error?.value.trim()}`);

  const { metadata } = await Sandbox.getInfo(sbx.sandboxId);
  console.log(`record: ward show ${metadata.ward_run_id}`);
} finally {
  await sbx.kill();
}
