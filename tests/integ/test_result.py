"""events.result: every decided call's row carries what the kernel did
with it (the return value, or -errno), NULL only where the call never
returned; show, export, report, diff and recheck use it."""
import json
import os
import sqlite3
import subprocess

import wardtest

PROFILES = os.path.join(os.path.dirname(__file__), "..", "..", "profiles")

# Each probe prints one line; the rows are then found by their targets.
CODE = r'''import os, subprocess
def tryopen(p, mode="r"):
    try:
        open(p, mode).close()
        return "ok"
    except OSError as e:
        return e.errno
print("missing", tryopen("/usr/lib/ward-no-such-file"))
print("denied", tryopen("/etc/hostname"))
print("made", tryopen("made.txt", "w"))
print("data", tryopen("data.txt"))
r = subprocess.run(["/usr/bin/python3", "-c", "pass"])
print("child", r.returncode)
# a PATH search: the first exec fails, the second runs the program
r = subprocess.run(["uname"], env={"PATH": "/usr/local/bin:/usr/bin"},
                   stdout=subprocess.DEVNULL)
print("path", r.returncode)
'''


def _run(ctx, *opts):
    r = ctx.run(CODE, *opts)
    run = ctx.last_run()
    return r, run, ctx.events(run["id"])


def _row(rows, target_end, syscall="openat"):
    got = [e for e in rows if e["syscall"] == syscall and (e["target"] or "").endswith(target_end)]
    assert got, f"no {syscall} of {target_end}: {[(e['syscall'], e['target']) for e in rows]}"
    return got[-1]


def test_rows_carry_the_kernels_result(ctx):
    r, run, rows = _run(ctx)
    assert r.code == 0, r
    assert "missing 2\n" in r.stdout and "denied 13\n" in r.stdout, r
    # allowed, and the kernel said ENOENT: not the same as a success
    miss = _row(rows, "/usr/lib/ward-no-such-file")
    assert miss["decision"] == "allow" and miss["result"] == -2, miss
    # denied: ward's answer
    den = _row(rows, "/etc/hostname")
    assert den["decision"] == "deny" and den["result"] == -13, den
    # allowed and done: a file descriptor
    made = _row(rows, "/made.txt")
    assert made["decision"] == "allow" and made["result"] >= 3, made
    data = _row(rows, "/data.txt")
    assert data["result"] == -2, data
    # a successful exec never returns: NULL; the clone that made the child
    # returned its pid (as the parent saw it)
    execs = [e for e in rows if e["syscall"] == "execve"]
    failed = [e for e in execs if e["target"] == "/usr/local/bin/uname"]
    assert len(failed) == 1 and failed[0]["result"] == -2, execs
    ran = [e for e in execs if e not in failed]
    assert len(ran) >= 3 and all(e["result"] is None for e in ran), execs
    clones = [e for e in rows if e["syscall"] in ("clone", "vfork", "fork")
              and e["decision"] == "allow"]
    assert clones and all(e["result"] > 0 for e in clones), clones
    # every other row has a result
    rest = [e for e in rows if e["syscall"] != "execve" and e["result"] is None]
    assert "path 0" in r.stdout, r
    assert not rest, rest
    v = ctx.ward("verify", "--db", ctx.db, run["id"], db=False)
    assert v.code == 0 and "intact" in v.stdout, v


def test_show_export_and_report_carry_it(ctx):
    r, run, rows = _run(ctx)
    assert r.code == 0, r
    s = ctx.ward("show", run["id"])
    assert s.code == 0, s
    line = [l for l in s.stdout.splitlines() if "openat" in l and "ward-no-such-file" in l]
    assert line and "= -ENOENT" in line[0], s.stdout
    j = ctx.ward("show", run["id"], "--json")
    evs = j.json()["events"]
    m = [e for e in evs if (e["target"] or "").endswith("ward-no-such-file")]
    assert m and m[0]["result"] == -2, m
    ex = ctx.ward("export", "--db", ctx.db, run["id"], db=False)
    assert ex.code == 0, ex
    er = [json.loads(l) for l in ex.stdout.splitlines()]
    er = [o for o in er if o.get("table") == "events" or "syscall" in json.dumps(o)]
    assert any("ward-no-such-file" in json.dumps(o) and '"result": -2' in json.dumps(o)
               for o in er), ex.stdout[:2000]
    oc = ctx.ward("export", "--db", ctx.db, run["id"], "--format", "ocsf", db=False)
    assert oc.code == 0, oc
    found = [o for o in map(json.loads, oc.stdout.splitlines())
             if (o.get("file") or {}).get("path", "").endswith("ward-no-such-file")]
    assert found and found[0]["unmapped"]["ward"]["result"] == -2, found
    rep = ctx.ward("report", "--db", ctx.db, run["id"], "-o", ctx.path("r.html"), db=False)
    assert rep.code == 0, rep


def test_diff_names_the_call_whose_result_differs(ctx):
    """Two runs of the same code: with data.txt given and without. Their
    decisions are the same; the first divergence is the open that failed."""
    data = ctx.write("data.txt", "x")
    r1, a, _ = _run(ctx, "--input", data)
    r2, b, _ = _run(ctx)
    assert r1.code == 0 and r2.code == 0, (r1, r2)
    d = ctx.ward("diff", "--db", ctx.db, a["id"], b["id"], "--json", db=False)
    assert d.code == 1, d
    got = d.json()
    txt = json.dumps(got)
    assert "data.txt" in txt and "= ok" in txt and "= -ENOENT" in txt, got


def test_a_call_that_never_returns_is_recorded_without_result(ctx):
    """A FIFO's open blocks for ever: the run's timeout ends it, and the
    open's row is there, without a result (it never returned)."""
    r = ctx.run("import os\nos.mkfifo('f')\nprint('go', flush=True)\nopen('f')",
                "--timeout", "2")
    assert r.code != 0 and "go" in r.stdout, r
    run = ctx.last_run()
    assert run["status"] == "timeout", run
    rows = ctx.events(run["id"], "target like '%/f'")
    opens = [e for e in rows if e["syscall"] == "openat"]
    assert opens and opens[-1]["result"] is None, rows


def test_recheck_shows_what_the_call_returned(ctx):
    r, run, rows = _run(ctx)
    with open(os.path.join(PROFILES, "default.json")) as f:
        pol = json.load(f)
    pol["fs"].insert(0, {"id": "nosuch", "path": "/usr/lib/ward-no-such-file",
                         "deny": ["read"]})
    pf = ctx.path("strict.json")
    with open(pf, "w") as f:
        json.dump(pol, f)
    rc = ctx.ward("recheck", "--db", ctx.db, "--policy", pf, run["id"], "--json", db=False)
    assert rc.code in (0, 1), rc
    ex = [x for r in rc.json()["runs"] for c in r["changes"] for x in c["examples"]]
    assert [x["result"] for x in ex if x["target"].endswith("ward-no-such-file")] == [-2], ex
    rc = ctx.ward("recheck", "--db", ctx.db, "--policy", pf, run["id"], db=False)
    assert "ward-no-such-file (returned -ENOENT)" in rc.stdout, rc


def _layer(layers, name):
    return [l for l in json.loads(layers or "[]") if l["name"] == name]


def test_both_ways_of_reading_results_agree(ctx):
    """As root, results come from the kernel's sys_exit (a BPF program for
    the run's pid namespace: no second stop); an unprivileged ward takes
    each call's exit stop. Both record the same results."""
    if os.geteuid() != 0:
        raise wardtest.Skip("needs root (the BPF way)")
    r, run, rows = _run(ctx)
    assert r.code == 0, r
    l = _layer(run["layers"], "results")
    assert l, run["layers"]
    if "cannot be used" in l[0]["detail"]:
        raise wardtest.Skip("the kernel's sys_exit is not usable here: " + l[0]["detail"])
    assert "sys_exit" in l[0]["detail"], l
    nobody = 65534
    home = ctx.path("nobody")
    os.mkdir(home)
    os.chown(home, nobody, nobody)
    os.chmod(ctx.tmp, 0o711)

    def drop():
        os.setgroups([])
        os.setgid(nobody)
        os.setuid(nobody)
    db = os.path.join(home, "a.db")
    p = subprocess.run([wardtest.ward_bin(), "run", "--db", db, "--workdir",
                        os.path.join(home, "wd"), "-c", CODE],
                       preexec_fn=drop, capture_output=True, text=True, timeout=120,
                       cwd=home, env={"HOME": home, "PATH": "/usr/bin:/bin"})
    if "namespaces are not available" in p.stderr:
        raise wardtest.Skip("no user namespaces for ordinary users: " + p.stderr.strip())
    assert p.returncode == 0 and p.stdout == r.stdout, (p.stdout, p.stderr, r.stdout)
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        run2 = dict(con.execute("select * from runs").fetchone())
        rows2 = [dict(x) for x in con.execute(
            "select * from events where run_id=? order by seq", (run2["id"],))]
    finally:
        con.close()
    l = _layer(run2["layers"], "results")
    assert l and "exit stop" in l[0]["detail"] and "cannot be used" in l[0]["detail"], l

    def by_target(rs):
        return {(e["syscall"], e["target"]): e["result"] for e in rs
                if e["syscall"] == "openat" and e["target"] and "ward-no-such" in e["target"]
                or (e["target"] or "").endswith(("/made.txt", "/data.txt"))}
    a, b = by_target(rows), by_target(rows2)
    assert a and a.keys() == b.keys(), (a, b)
    for k in a:
        assert (a[k] >= 0) == (b[k] >= 0) and (a[k] < 0) <= (a[k] == b[k]), (k, a[k], b[k])
    assert not [e for e in rows2 if e["syscall"] != "execve" and e["result"] is None], rows2
