#!/usr/bin/python3
"""An agent-side client of `ward serve`, with nothing but the standard library.

It does what a code-interpreter tool in an agent does: start ward, open a
session, upload a data file, run cells that build on each other, stream a
cell's output, fetch a chart and save it as a PNG, see an exception come
back as a value, and close the session. Everything it ran is in ward's audit
database afterwards (`ward show RUN`).

    examples/agent_client.py [--ward PATH] [--db PATH] [--out DIR]

The wire format (`ward serve --help`): one JSON request per line,
{"id", "method", "params"}; one response per line with the same id,
{"id", "result"} or {"id", "error": {"code", "message"}}; a run with
"stream": true is preceded by {"id", "event": "stdout"|"stderr", "data", "ts"}
lines.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class WardError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('message')} (code {error.get('code')})")
        self.code = error.get("code")


class Ward:
    """One `ward serve` process; call() sends a request and waits for its
    response, handing stream events to on_event as they arrive."""

    def __init__(self, ward="ward", db=None):
        argv = [ward, "serve"] + (["--db", db] if db else [])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, encoding="utf-8")
        self.next_id = 0

    def call(self, method, on_event=None, **params):
        self.next_id += 1
        req = {"id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"ward serve exited ({self.proc.wait()})")
            msg = json.loads(line)
            if msg.get("id") != self.next_id:
                continue  # not ours (this client sends one request at a time)
            if "event" in msg:
                if on_event:
                    on_event(msg)
                continue
            if "error" in msg:
                raise WardError(msg["error"])
            return msg["result"]

    def close(self):
        self.proc.stdin.close()  # end of input: ward closes every session
        return self.proc.wait(60)


def show(result):
    """What a model would be shown of a cell."""
    out = "".join(result["logs"]["stdout"])
    if out:
        print("  stdout: " + out.rstrip("\n").replace("\n", "\n          "))
    for r in result["results"]:
        if r.get("is_main_result"):
            print("  result: " + str(r.get("text")).replace("\n", "\n          "))
        elif "png" in r:
            print(f"  chart:  {len(base64.b64decode(r['png']))} bytes of PNG")
    if result["error"]:
        e = result["error"]
        print(f"  error:  {e['name']}: {e['value']}")
    for d in result["policy"]["denials"]:
        print(f"  denied: {d['syscall']} {d.get('target')} ({d['rule']}, {d.get('errno')})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ward", default=shutil.which("ward") or "ward",
                    help="the ward binary (default: ward on PATH)")
    ap.add_argument("--db", help="audit database (default: ward's)")
    ap.add_argument("--out", default=".", help="where to save chart.png (default: .)")
    a = ap.parse_args()

    ward = Ward(a.ward, a.db)
    try:
        s = ward.call("session.create", language="python")
        sid = s["session_id"]
        print(f"session {sid} (run {s['run_id']})")

        with open(os.path.join(HERE, "sales.csv")) as f:
            up = ward.call("files.write", session_id=sid, path="sales.csv", text=f.read())
        print(f"uploaded sales.csv: {up['size']} bytes, sha256 {up['sha256'][:12]}...")

        cells = [
            "import pandas as pd\ndf = pd.read_csv('sales.csv')\nlen(df)",
            "by_region = df.groupby('region')['amount'].median().round(2)\nby_region",
            "import matplotlib.pyplot as plt\n"
            "by_region.plot.bar(title='median sale by region')\n"
            "plt.tight_layout()",
            "df['amount'].mean() * exchange_rate",  # a NameError: comes back as a value
            "open('/etc/shadow').read()",
        ]
        chart = None
        for code in cells:
            print(f"\n>>> {code.splitlines()[-1]}")
            r = ward.call("run", session_id=sid, code=code)
            print(f"  [{r['execution_count']}] {r['status']} in {r['duration_ms']} ms")
            show(r)
            for res in r["results"]:
                if "png" in res:
                    chart = base64.b64decode(res["png"])

        print("\n>>> streamed")
        r = ward.call("run", session_id=sid, stream=True,
                      on_event=lambda e: print(f"  {e['event']} @{e['ts']:.3f}: {e['data']!r}"),
                      code="for region in by_region.index:\n    print(region)")
        print(f"  [{r['execution_count']}] {r['status']}")

        if chart is None:
            print("no chart came back", file=sys.stderr)
            return 1
        path = os.path.join(a.out, "chart.png")
        with open(path, "wb") as f:
            f.write(chart)
        print(f"\nsaved {path} ({len(chart)} bytes)")
        files = ward.call("files.list", session_id=sid)["files"]
        print("session files: " + ", ".join(f["path"] for f in files))
        ward.call("session.close", session_id=sid)
        print(f"closed; the record: ward show {s['run_id']}")
    except WardError as e:
        print(f"ward: {e}", file=sys.stderr)
        return 1
    finally:
        ward.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
