"""ward rerun and ward diff: a recorded run run again from the database and
compared with the original (decisions normalized, exits, outputs); what
ward run records for it (inputs, env); and their errors (exit 125)."""
import json
import os
import sqlite3

import wardtest

SCRIPT = """import os, sys
data = open('data.txt').read().strip()
print('data', data, 'greeting', os.environ.get('GREETING'),
      'token set', bool(os.environ.get('API_TOKEN')), 'args', sys.argv[1:])
with open('out.txt', 'w') as f:
    f.write(data.upper())
"""
SECRET = "s3cr3t-token-value-4711"


def _env(**extra):
    e = dict(os.environ)
    e.update(extra)
    return e


def _original(ctx, *extra):
    """A deterministic script with an input file, two variables (one from
    ward's environment) and arguments; returns its run row."""
    ctx.write("data.txt", "hello rerun\n")
    script = ctx.write("job.py", SCRIPT)
    r = ctx.ward("run", "--input", ctx.path("data.txt"), "--env", "GREETING=hi",
                 "--env", "API_TOKEN", *extra, script, "--", "one", "two words",
                 env=_env(API_TOKEN=SECRET))
    assert r.code == 0, r
    assert "data hello rerun greeting hi token set True args ['one', 'two words']" in r.stdout, r
    return ctx.last_run()


def _rerun(ctx, *args, env=None):
    return ctx.ward("rerun", "--db", ctx.db, *args, env=env or _env(API_TOKEN=SECRET))


def test_run_records_inputs_and_env_without_secret_values(ctx):
    run = _original(ctx)
    ins = ctx.sql("select n, name, size, sha256, data from inputs where run_id=?", run["id"])
    assert len(ins) == 1 and ins[0]["name"] == "data.txt" and ins[0]["size"] == 12, ins
    assert ins[0]["data"] == b"hello rerun\n"
    import hashlib
    assert ins[0]["sha256"] == hashlib.sha256(b"hello rerun\n").hexdigest()
    env = json.loads(run["env"])
    assert env == [{"name": "GREETING", "value": "hi"},
                   {"name": "API_TOKEN", "from": "environment"}], env
    # the value taken from ward's environment is nowhere in the database
    con = sqlite3.connect(ctx.db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    with open(ctx.db, "rb") as f:
        assert SECRET.encode() not in f.read()


def test_rerun_deterministic_is_equivalent(ctx):
    run = _original(ctx)
    r = _rerun(ctx, run["id"][:8])
    assert r.code == 0, r
    assert f"re-ran {run['id']} as " in r.stdout, r
    assert ": equivalent" in r.stdout and "same 1 processes" in r.stdout, r
    new = ctx.last_run()
    assert new["id"] != run["id"]
    argv = json.loads(new["argv"])
    assert argv[:4] == ["ward", "run", "--rerun-of", run["id"]], argv
    assert argv[-3:] == ["--", "one", "two words"], argv
    assert SECRET not in new["argv"] and json.loads(new["env"]) == json.loads(run["env"])
    assert new["code"] == run["code"] and new["policy_json"] == run["policy_json"]
    assert new["limits"] == run["limits"] and new["workdir"] == run["workdir"] == wardtest.HOME
    assert wardtest.host_workdir(new) != wardtest.host_workdir(run)
    out = b"".join(r["data"] for r in ctx.sql(
        "select data from outputs where run_id=? and stream='stdout' order by seq", new["id"]))
    assert b"token set True args ['one', 'two words']" in out, out
    ins = ctx.sql("select name, sha256 from inputs where run_id=?", new["id"])
    assert ins == ctx.sql("select name, sha256 from inputs where run_id=?", run["id"])
    # --json: the same verdict as an object, and ward diff agrees
    r = _rerun(ctx, run["id"], "--json")
    assert r.code == 0, r
    j = r.json()
    assert j["rerun_of"] == run["id"] and j["diff"]["equivalent"] is True, j
    assert j["diff"]["first_divergence"] is None
    r = ctx.ward("diff", "--db", ctx.db, run["id"], j["run"])
    assert r.code == 0 and ": equivalent" in r.stdout, r


def test_rerun_with_stricter_policy_names_the_denial(ctx):
    run = _original(ctx)
    pol = json.loads(run["policy_json"])
    pol["name"] = "stricter"
    pol["fs"].append({"id": "no-data-file", "path": "$WORKDIR/data.txt", "deny": ["read"]})
    pf = ctx.write("stricter.json", json.dumps(pol))
    r = _rerun(ctx, run["id"], "--policy", pf)
    assert r.code == 1, r
    lines = r.stdout.splitlines()
    assert ": different" in lines[1], r.stdout
    assert lines[2].startswith("first divergence: process 1 (/usr/bin/python3"), lines
    a = [l for l in lines if l.startswith(f"  {run['id']} #")]
    b = [l for l in lines if l.startswith("  ") and "#" in l and run["id"] not in l]
    assert a and b, lines
    assert "openat" in a[0] and "$WORKDIR/data.txt: allow (workdir)" in a[0], a
    assert "openat" in b[0] and "$WORKDIR/data.txt: deny (no-data-file) EACCES" in b[0], b
    assert f"exit: {run['id']}: ok, exit 0;" in r.stdout, r.stdout
    assert "stdout: differs from byte 0" in r.stdout
    # the same as JSON
    r = _rerun(ctx, run["id"], "--policy", pf, "--json")
    assert r.code == 1, r
    fd = r.json()["diff"]["first_divergence"]
    assert fd["process"] == 1 and "allow (workdir)" in fd["a"]["line"], fd
    assert "deny (no-data-file) EACCES" in fd["b"]["line"], fd
    assert r.json()["diff"]["nondeterminism_hints"] == [], r.json()


def test_rerun_random_output_flagged_as_possibly_nondeterministic(ctx):
    r = ctx.run("import random\nprint('value', random.random())\n")
    assert r.code == 0, r
    run = ctx.last_run()
    r = _rerun(ctx, run["id"])
    assert r.code == 1, r
    assert "decisions: the same" in r.stdout, r.stdout
    assert "stdout: differs from byte" in r.stdout, r.stdout
    assert ("possibly nondeterministic (heuristic): stdout differs only in digits"
            in r.stdout), r.stdout
    j = _rerun(ctx, run["id"], "--json").json()
    assert j["diff"]["stdout"]["differs"] and j["diff"]["first_divergence"] is None, j
    assert any("only in digits" in h for h in j["diff"]["nondeterminism_hints"]), j


def test_diff_of_unrelated_runs(ctx):
    assert ctx.run("print('plain')").code == 0
    a = ctx.last_run()["id"]
    code = "try:\n    open('/etc/shadow')\nexcept OSError:\n    print('denied')\n"
    assert ctx.run(code).code == 0
    b = ctx.last_run()["id"]
    r = ctx.ward("diff", "--db", ctx.db, a, b)
    assert r.code == 1, r
    assert f"runs {a} (ok, exit 0) and {b} (ok, exit 0): different" in r.stdout, r.stdout
    assert "first divergence: process 1 (/usr/bin/python3" in r.stdout, r.stdout
    assert "its argv differs" in r.stdout, r.stdout
    assert "stdout: differs from byte 0" in r.stdout and "  " + b + ": denied" in r.stdout
    assert "possibly nondeterministic" not in r.stdout, r.stdout
    j = ctx.ward("diff", "--db", ctx.db, "--json", a, b)
    assert j.code == 1 and j.json()["equivalent"] is False, j
    # a run is equivalent to itself; a prefix and "last" work
    r = ctx.ward("diff", "--db", ctx.db, a[:6], a)
    assert r.code == 0 and ": equivalent" in r.stdout, r
    r = ctx.ward("diff", "--db", ctx.db, b, "last")
    assert r.code == 0, r


def test_diff_masks_workdir_fds_and_pids(ctx):
    """Two runs of code that names its workdir, an fd and a pid in what it
    does compare equal: those are masked."""
    code = ("import os, socket\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
            "try:\n    s.connect(('127.0.0.1', 9))\nexcept OSError:\n    pass\n"
            "open(os.path.join(os.getcwd(), 'f.txt'), 'w').write('x')\n"
            "os.kill(os.getpid(), 0)\n")
    for _ in range(2):
        assert ctx.run(code).code == 0
    a, b = [r["id"] for r in ctx.sql("select id from runs order by started_ns")]
    wa, wb = [wardtest.host_workdir(r) for r in ctx.sql("select * from runs order by started_ns")]
    assert wa != wb
    r = ctx.ward("diff", "--db", ctx.db, a, b)
    assert r.code == 0, r


def test_rerun_input_over_the_cap_must_be_given_again(ctx):
    big = ctx.write("big.bin", "0123456789" * 1000)
    script = ctx.write("size.py", "print(len(open('big.bin').read()))\n")
    r = ctx.ward("run", "--keep-inputs", "1K", "--input", big, script)
    assert r.code == 0 and r.stdout == "10000\n", r
    run = ctx.last_run()
    row = ctx.sql("select size, data from inputs where run_id=?", run["id"])[0]
    assert row["size"] == 10000 and row["data"] is None, row
    r = _rerun(ctx, run["id"])
    assert r.code == 125, r
    assert "input 'big.bin' (10000 bytes) was not kept in the record" in r.stderr, r
    assert f"ward rerun {run['id']} --input PATH/big.bin" in r.stderr, r
    os.makedirs(ctx.path("other"))
    with open(ctx.path("other", "big.bin"), "w") as f:
        f.write("not the same")
    r = _rerun(ctx, run["id"], "--input", ctx.path("other", "big.bin"))
    assert r.code == 125 and "not the file run" in r.stderr, r
    r = _rerun(ctx, run["id"], "--input", ctx.path("nothere.bin"))
    assert r.code == 125 and "no input named 'nothere.bin'" in r.stderr, r
    r = _rerun(ctx, run["id"], "--input", big)
    assert r.code == 0 and ": equivalent" in r.stdout, r


def test_rerun_env_from_environment_must_be_set(ctx):
    run = _original(ctx)
    env = _env()
    env.pop("API_TOKEN", None)
    r = _rerun(ctx, run["id"], env=env)
    assert r.code == 125, r
    assert "was given $API_TOKEN from ward's environment" in r.stderr, r
    assert "set API_TOKEN in the environment of ward rerun" in r.stderr, r


def test_rerun_keep_and_code_forms(ctx):
    """-c code and code from stdin re-run the same; --keep keeps the new
    workdir and says where."""
    assert ctx.run("import sys; print(sys.argv)", "--env", "A=1", "--no-cgroup",
                   "--require", "seccomp").code == 0
    r = _rerun(ctx, "last", "--keep")
    assert r.code == 0, r
    argv = json.loads(ctx.last_run()["argv"])
    assert "--no-cgroup" in argv and argv[argv.index("--require") + 1] == "seccomp", argv
    kept = [l for l in r.stdout.splitlines() if l.startswith("workdir kept: ")]
    assert kept, r.stdout
    wd = kept[0].split(": ", 1)[1]
    try:
        assert os.path.isdir(wd), wd
    finally:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
    r = ctx.ward("run", "-", stdin="print('from stdin')\n")
    assert r.code == 0, r
    r = _rerun(ctx, "last")
    assert r.code == 0 and ": equivalent" in r.stdout, r
    sh = ctx.write("t.sh", "echo sh \"$@\"\n")
    assert ctx.ward("run", sh, "--", "x").code == 0
    r = _rerun(ctx, "last")
    assert r.code == 0 and ": equivalent" in r.stdout, r


def test_rerun_and_diff_errors(ctx):
    assert ctx.run("print(1)").code == 0
    run_id = ctx.last_run()["id"]
    # unknown run ids
    for cmd in (["rerun", "--db", ctx.db, "ffffffffffff"],
                ["diff", "--db", ctx.db, run_id, "ffffffffffff"]):
        r = ctx.ward(*cmd)
        assert r.code == 125, (cmd, r)
        assert "no run matches 'ffffffffffff'" in r.stderr, (cmd, r)
    # a corrupt database and a foreign one
    bad = ctx.write("corrupt.db", "this is not a database at all\n" * 200)
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.commit()
    con.close()
    for db in (bad, foreign):
        for cmd in (["rerun", "--db", db, "last"], ["diff", "--db", db, "a", "b"]):
            r = ctx.ward(*cmd)
            assert r.code == 125, (cmd, r)
            assert r.stderr.startswith("ward: audit database") and db in r.stderr, (cmd, r)
    # a policy file with errors
    pf = ctx.write("bad-policy.json", '{"version": 1, "filesystem": []}')
    r = ctx.ward("rerun", "--db", ctx.db, run_id, "--policy", pf)
    assert r.code == 125, r
    assert "bad-policy.json" in r.stderr and "unknown key" in r.stderr, r
    assert "the re-run did not start" in r.stderr, r
    # arguments
    for args, msg in ((["rerun", "--db", ctx.db], "give one run"),
                      (["rerun", "--db", ctx.db, run_id, "--policy", pf, "--profile", "default"],
                       "not both"),
                      (["rerun", "--db", ctx.db, run_id, "--frob"], "unknown option --frob"),
                      (["diff", "--db", ctx.db, run_id], "give two runs"),
                      (["rerun", "--db", ctx.db, run_id, "--profile", "nosuch"], "no profile named")):
        r = ctx.ward(*args)
        assert r.code == 125 and msg in r.stderr, (args, r)
    # no staging directory is left behind
    assert not [d for d in os.listdir("/tmp") if d.startswith("ward-rerun-")
                and os.stat(os.path.join("/tmp", d)).st_mtime > os.stat(ctx.db).st_ctime - 60]


def test_rerun_of_a_session_is_refused(ctx):
    assert ctx.run("print(1)").code == 0
    run_id = ctx.last_run()["id"]
    con = sqlite3.connect(ctx.db)
    con.execute("update runs set code_name='session' where id=?", (run_id,))
    con.execute("insert into cells(run_id, n, code, started_ns, ended_ns, status, result)"
                " values (?, 1, 'x = 1', 1, 2, 'ok', '{}')", (run_id,))
    con.commit()
    con.close()
    r = ctx.ward("rerun", "--db", ctx.db, run_id)
    assert r.code == 125, r
    assert "rerun of sessions is not supported: run " + run_id in r.stderr, r
    assert "(1 cells)" in r.stderr, r


def test_rerun_and_diff_help(ctx):
    for cmd in ("rerun", "diff"):
        r = ctx.ward(cmd, "--help")
        assert r.code == 0 and r.stdout.startswith(f"usage: ward {cmd} "), r
        assert "exit status: 0" in r.stdout and "125" in r.stdout, r
    assert "$WORKDIR" in ctx.ward("diff", "--help").stdout
    assert "Sessions" in ctx.ward("rerun", "--help").stdout
    r = ctx.ward("run", "--help")
    assert "--keep-inputs SIZE" in r.stdout and "--rerun-of RUN" in r.stdout, r


def test_rerun_of_a_record_without_inputs_or_env_is_refused(ctx):
    """A run recorded before ward kept inputs and env (schema < 4) cannot
    be re-run faithfully: ward rerun says so instead of running without
    them."""
    run = _original(ctx)
    con = sqlite3.connect(ctx.db)
    con.execute("delete from inputs where run_id=?", (run["id"],))
    con.commit()
    con.close()
    r = _rerun(ctx, run["id"])
    assert r.code == 125, r
    assert "was given 1 --input files but the record holds 0" in r.stderr, r
    run = _original(ctx)
    con = sqlite3.connect(ctx.db)
    con.execute("update runs set env = NULL where id=?", (run["id"],))
    con.commit()
    con.close()
    r = _rerun(ctx, run["id"])
    assert r.code == 125 and "was given --env but the record does not say" in r.stderr, r


def test_diff_says_when_output_was_not_all_kept(ctx):
    r = ctx.run("import random\nprint('x' * 20, random.random())\n", "--max-output", "10")
    assert r.code == 0, r
    r = _rerun(ctx, "last")
    assert r.code == 0 and ": equivalent" in r.stdout, r
    assert "note: not all of stdout was kept (ward run --max-output)" in r.stdout, r
    j = _rerun(ctx, "last", "--json").json()
    assert j["diff"]["stdout"]["truncated"] is True and j["diff"]["equivalent"], j
