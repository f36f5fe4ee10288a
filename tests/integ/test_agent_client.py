"""examples/agent_client.py, the standard-library client of `ward serve`
(issue 4, section 4), run as a user would run it."""
import os
import subprocess

import wardtest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_agent_client_example(ctx):
    out = ctx.path("out")
    os.makedirs(out)
    p = subprocess.run([wardtest.PYTHON, os.path.join(ROOT, "examples", "agent_client.py"),
                        "--ward", wardtest.ward_bin(), "--db", ctx.db, "--out", out],
                       capture_output=True, text=True, timeout=200, cwd=ctx.tmp)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    o = p.stdout
    # state across cells, the value of the last expression, errors as values
    assert "result: 4000" in o and "north    55.82" in o, o
    assert "NameError: name 'exchange_rate' is not defined" in o, o
    assert "denied: openat /etc/shadow" in o and "EACCES" in o, o
    assert "stdout @" in o and "'east\\n" in o, o       # streamed events
    with open(os.path.join(out, "chart.png"), "rb") as f:
        png = f.read()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2000, len(png)
    # The session is one run in the record, each cell its own row.
    run_id = o.rsplit("ward show ", 1)[1].split()[0]
    cells = ctx.sql("select n, status from cells where run_id = ? order by n", run_id)
    assert [c["status"] for c in cells] == ["ok", "ok", "ok", "error", "error", "ok"], cells
    assert not wardtest.pids_matching(ctx.db), "ward serve or a session outlived the client"
