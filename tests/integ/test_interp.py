"""Benign model-style code gives the same output under ward as natively,
with real python3, node and sh."""
import json
import os
import shutil
import struct

from wardtest import NODE, PYTHON, SH, require

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
WORKLOADS = os.path.join(os.path.dirname(__file__), "workloads")


def same_as_native(ctx, script_name, *ward_opts, inputs=(), lang_argv=(PYTHON,)):
    src = os.path.join(WORKLOADS, script_name)
    nat_wd = ctx.path("native")
    os.makedirs(nat_wd)
    for i in inputs:
        shutil.copy(i, nat_wd)
    shutil.copy(src, nat_wd)
    native = ctx.native(list(lang_argv) + [script_name], workdir=nat_wd)
    assert native.code == 0, native
    opts = list(ward_opts)
    for i in inputs:
        opts += ["--input", i]
    r = ctx.ward("run", *opts, src)
    assert r.code == 0, r
    assert r.stdout == native.stdout, (r.stdout, native.stdout)
    return r


def no_denials(ctx):
    run = ctx.last_run()
    d = ctx.denials(run["id"])
    assert not d, [(e["syscall"], e["target"], e["rule"]) for e in d]
    return run


def test_pandas_median_example(ctx):
    r = same_as_native(ctx, "pandas_median.py", inputs=[os.path.join(EXAMPLES, "sales.csv")])
    assert "median amount" in r.stdout
    run = no_denials(ctx)
    procs = ctx.sql("select exe, argv from processes where run_id=? and kind='process'", run["id"])
    assert procs[0]["exe"].startswith("/usr/bin/python3"), procs
    # Debian's pandas runs `uname -p` on import: allowed, quietly
    assert any(p["exe"] == "/usr/bin/uname" for p in procs), procs


def test_numpy_threads(ctx):
    same_as_native(ctx, "numpy_threads.py")
    run = no_denials(ctx)
    threads = ctx.sql("select count(*) n from processes where run_id=? and kind='thread'", run["id"])
    assert threads[0]["n"] >= 4


def test_matplotlib_png_in_workdir(ctx):
    r = ctx.ward("run", "--keep", os.path.join(WORKLOADS, "chart.py"))
    wd = ctx.host_workdir()
    try:
        assert r.code == 0, r
        png = os.path.join(wd, "chart.png")
        with open(png, "rb") as f:
            head = f.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = struct.unpack(">II", head[16:24])
        assert (w, h) == (640, 480), (w, h)
        no_denials(ctx)
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def test_subprocess_where_policy_allows(ctx):
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles", "default.json")))
    pol["name"] = "default+true"
    pol.setdefault("exec", {}).setdefault("allow", []).append("/usr/bin/true")
    path = ctx.write("allow-true.json", json.dumps(pol, indent=1))
    r = same_as_native(ctx, "spawn.py", "--policy", path)
    assert r.stdout == "10 ok\n"
    run = no_denials(ctx)
    execs = ctx.events(run["id"], "syscall='execve' and target='/usr/bin/true'")
    assert len(execs) >= 10, len(execs)
    procs = ctx.sql("select * from processes where run_id=? and exe='/usr/bin/true'", run["id"])
    assert len(procs) == 10 and all(p["exit_code"] == 0 for p in procs), procs
    # the default profile refuses the same exec
    r = ctx.ward("run", os.path.join(WORKLOADS, "spawn.py"))
    assert r.code == 1 and "PermissionError" in r.stderr, r


def test_node(ctx):
    require(NODE)
    code = ("const fs = require('fs'); fs.writeFileSync('x.txt', 'hi');"
            "const os = require('os'); const path = require('path');"
            "console.log(fs.readFileSync('x.txt', 'utf8'), [1,2,3].map(x => x * 2).join(','),"
            " JSON.stringify({a: [1, {b: 2}]}), path.basename(os.tmpdir()), typeof process.env.HOME);")
    native = ctx.native([NODE, "-e", code])
    assert native.code == 0, native
    r = ctx.run(code, lang="node")
    assert r.code == 0 and r.stdout == native.stdout, (r, native)
    assert r.stdout.startswith("hi 2,4,6 "), r
    no_denials(ctx)
    assert ctx.last_run()["language"] == "node"
    r = ctx.run("require('fs').readFileSync('/etc/shadow')", lang="node")
    assert r.code != 0 and "EACCES" in r.stderr, r


def test_sh(ctx):
    code = "echo hello > f.txt; cat f.txt; ls; printf '%s\\n' $((6*7)); sort -r f.txt | wc -c"
    native = ctx.native([SH, "-c", code])
    assert native.code == 0, native
    r = ctx.run(code, lang="sh")
    assert r.code == 0, r
    assert r.stdout.replace("tmp\n", "") == native.stdout.replace("tmp\n", ""), (r, native)
    assert r.stdout.splitlines()[0] == "hello" and r.stdout.splitlines()[-2:] == ["42", "6"], r
    no_denials(ctx)
    r = ctx.run("cat /etc/shadow", lang="sh")
    assert r.code != 0 and "Permission denied" in r.stderr, r


def test_language_from_extension(ctx):
    p = ctx.write("s.sh", "echo from-sh\n")
    r = ctx.ward("run", p)
    assert r.code == 0 and r.stdout == "from-sh\n", r
    assert ctx.last_run()["language"] == "sh"
