// The E2B SDK against `ward serve --listen` (bench/e2b.py runs it with
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY set): N rounds of sandbox
// create, its first cell, warm cells, a pandas chart cell and the kill; then
// 8 sandboxes at once (created together, one sleep(1) cell each). Prints one
// JSON object of samples in ms.
const { Sandbox } = await import("@e2b/code-interpreter").catch(() =>
  import(new URL("../tests/e2b/node_modules/@e2b/code-interpreter/dist/index.mjs", import.meta.url)));

const rounds = Number(process.argv[2] ?? 5), warmN = Number(process.argv[3] ?? 20);
const s = { create: [], first_cell: [], warm_cell: [], pandas_chart: [], kill: [],
            parallel8_create: [], parallel8_sleep1: [] };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const must = (ex, what) => { if (ex.error) throw new Error(`${what}: ${ex.error.name}: ${ex.error.value}`); return ex; };
const CHART = "import pandas as pd, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
  "df = pd.DataFrame({'k': list('abcd') * 250, 'v': range(1000)})\n" +
  "df.groupby('k')['v'].sum().plot.bar()\nplt.show()";

for (let r = 0; r < rounds; r++) {
  let t = process.hrtime.bigint();
  const sbx = await Sandbox.create();
  s.create.push(ms(t));
  t = process.hrtime.bigint();
  must(await sbx.runCode("1+1"), "first cell");
  s.first_cell.push(ms(t));
  for (let i = 0; i < warmN; i++) {
    t = process.hrtime.bigint();
    must(await sbx.runCode("1+1"), "warm cell");
    s.warm_cell.push(ms(t));
  }
  t = process.hrtime.bigint();
  const chart = must(await sbx.runCode(CHART), "pandas chart");
  s.pandas_chart.push(ms(t));
  if (!chart.results.some((x) => x.png)) throw new Error("the chart cell returned no PNG");
  t = process.hrtime.bigint();
  await sbx.kill();
  s.kill.push(ms(t));
}
for (let r = 0; r < Math.max(1, Math.floor(rounds / 2)); r++) {
  let t = process.hrtime.bigint();
  const boxes = await Promise.all(Array.from({ length: 8 }, () => Sandbox.create()));
  s.parallel8_create.push(ms(t));
  await Promise.all(boxes.map((b) => b.runCode("import time")));
  t = process.hrtime.bigint();
  await Promise.all(boxes.map(async (b) => must(await b.runCode("time.sleep(1)"), "sleep")));
  s.parallel8_sleep1.push(ms(t));
  await Promise.all(boxes.map((b) => b.kill()));
}
console.log(JSON.stringify(s));
