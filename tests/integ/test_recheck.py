"""ward recheck: recorded decisions judged again under another policy, without
running anything; its output (text, JSON), --fail-on-change, what it keeps
(ward's floor) and refuses (rows it cannot rebuild), and its errors (exit 125
with a clear message)."""
import json
import sqlite3

import wardtest

WORK = ("import os\n"
        "open('out.txt', 'w').write('x')\n"
        "os.listdir('.')\n"
        "try:\n    open('/etc/shadow').read()\nexcept OSError as e:\n    print('shadow', e.errno)\n")


def _record(ctx, *opts):
    r = ctx.run(WORK, *opts)
    assert r.code == 0, r
    return ctx.last_run()


def _policy(ctx, run, name, edit):
    """The run's own policy, changed by edit(dict), written to name."""
    pol = json.loads(run["policy_json"])
    pol.pop("name", None)
    edit(pol)
    return ctx.write(name, json.dumps(pol, indent=1))


def _fs(pol, rule_id):
    return next(r for r in pol["fs"] if r.get("id") == rule_id)


def test_recheck_own_policy_changes_nothing(ctx):
    run = _record(ctx)
    r = ctx.ward("recheck", run["id"], "--profile", "default", "--db", ctx.db,
                 "--fail-on-change")
    assert r.code == 0, r
    last = r.stdout.splitlines()[-1]
    assert last.startswith("recheck against profile default: 1 run, ") and \
        ": 0 would change in 0 runs" in last and "0 cannot be re-checked" in last, r.stdout
    # every event was judged again, none skipped
    r = ctx.ward("recheck", run["id"], "--profile", "default", "--db", ctx.db, "--json")
    j = json.loads(r.stdout)
    assert j["runs"][0]["rechecked"] == run["events"] > 5, (j, run["events"])


def test_recheck_tighter_and_looser_policy(ctx):
    run = _record(ctx)

    def edit(pol):
        _fs(pol, "workdir")["allow"] = ["read", "stat"]       # tighter
        pol["fs"] = [r for r in pol["fs"] if r.get("id") != "secret-shadow"]
        pol["fs"].append({"id": "shadow-ok", "path": "/etc/shadow", "allow": ["read"]})
    p = _policy(ctx, run, "new.json", edit)
    r = ctx.ward("recheck", run["id"][:6], "--policy", p, "--db", ctx.db)
    assert r.code == 0, r
    out = r.stdout
    assert f"run {run['id']} (recorded under default, workdir {run['workdir']})" in out, out
    # the workdir is /home/user: without write there, the profile's /home
    # rule (deny) is the most specific one left
    assert "allowed -> denied (EACCES): rule workdir -> secret-home: 1 event\n" in out, out
    assert f"openat {run['workdir']}/out.txt" in out, out
    assert "denied (EACCES) -> allowed: rule secret-shadow -> shadow-ok: 1 event\n" in out, out
    assert "#" in out and "openat /etc/shadow" in out, out
    assert ": 2 would change in 1 run (1 allowed -> denied or killed, 1 to allowed" in out, out
    r = ctx.ward("recheck", run["id"], "--policy", p, "--db", ctx.db, "--fail-on-change")
    assert r.code == 1, r
    r = ctx.ward("recheck", "last", "--policy", p, "--db", ctx.db, "--json")
    assert r.code == 0, r
    j = json.loads(r.stdout)
    assert j["policy"] == "new" and j["summary"]["changed"] == 2, j
    assert j["summary"]["allowed_to_denied"] == 1 and j["summary"]["denied_to_allowed"] == 1
    ch = {(c["from_rule"], c["to_rule"]): c for c in j["runs"][0]["changes"]}
    c = ch[("workdir", "secret-home")]
    assert c["from"] == "allowed" and c["to"] == "denied" and c["to_errno"] == "EACCES", c
    assert c["count"] == 1 and c["examples"][0]["syscall"] == "openat", c
    assert c["examples"][0]["target"] == run["workdir"] + "/out.txt", c
    c = ch[("secret-shadow", "shadow-ok")]
    assert c["from"] == "denied" and c["to"] == "allowed" and c["from_errno"] == "EACCES", c


def test_recheck_all_and_since(ctx):
    a = _record(ctx)
    b = _record(ctx, "--profile", "audit")
    r = ctx.ward("recheck", "--all", "--profile", "default", "--db", ctx.db, "--json")
    assert r.code == 0, r
    j = json.loads(r.stdout)
    assert [x["id"] for x in j["runs"]] == [a["id"], b["id"]], j
    # the audit run read /etc/shadow: the default profile would deny it
    rb = j["runs"][1]
    assert rb["changed"] == 1 and rb["changes"][0]["from_rule"] == "secret-shadow", rb
    assert rb["changes"][0]["from"] == "allowed" and rb["changes"][0]["to"] == "denied"
    assert j["runs"][0]["changed"] == 0
    r = ctx.ward("recheck", "--since", "2100-01-01", "--profile", "default", "--db", ctx.db)
    assert r.code == 0 and ": 0 runs, 0 events" in r.stdout, r
    r = ctx.ward("recheck", "--since", "1h", "--profile", "default", "--db", ctx.db)
    assert r.code == 0 and ": 2 runs, " in r.stdout, r


def test_recheck_keeps_floor_and_reports_what_it_cannot_judge(ctx):
    r = ctx.run("try:\n    open('/proc/self/mem', 'rb')\nexcept OSError as e:\n    print(e.errno)\n"
                "open('a.txt', 'w').write('a')\n")
    assert r.code == 0 and r.stdout.strip() == "13", r
    run = ctx.last_run()
    floor = ctx.events(run["id"], "rule = 'proc.mem'")
    assert len(floor) == 1, ctx.events(run["id"])
    # the audit profile would allow everything, but not ward's floor
    r = ctx.ward("recheck", "last", "--profile", "audit", "--db", ctx.db, "--json")
    j = json.loads(r.stdout)["runs"][0]
    assert j["kept"] == 1 and j["changed"] == 0, j
    # a row without what the policy reads (as an older ward wrote them)
    seq = ctx.events(run["id"], "target like '%/a.txt'")[0]["seq"]
    con = sqlite3.connect(ctx.db)
    con.execute("update events set args = json_remove(args, '$.access') "
                "where run_id = ? and seq = ?", (run["id"], seq))
    con.commit()
    con.close()
    r = ctx.ward("recheck", "last", "--profile", "default", "--db", ctx.db)
    assert r.code == 0, r
    assert "cannot re-check: 1 event\n" in r.stdout, r.stdout
    assert f"#{seq} openat " in r.stdout and "no access recorded" in r.stdout, r.stdout
    assert "1 cannot be re-checked" in r.stdout.splitlines()[-1], r.stdout
    r = ctx.ward("recheck", "last", "--profile", "default", "--db", ctx.db,
                 "--fail-on-change")
    assert r.code == 1, "a row that cannot be judged is never counted as unchanged"


def test_recheck_errors(ctx):
    run = _record(ctx)
    r = ctx.ward("recheck", "--help")
    assert r.code == 0 and "trap_stat" in r.stdout and "--fail-on-change" in r.stdout, r
    r = ctx.ward("recheck", "ffffffffff", "--profile", "default", "--db", ctx.db)
    assert r.code == 125 and "no run matches 'ffffffffff'" in r.stderr, r
    r = ctx.ward("recheck", run["id"], "--db", ctx.db)
    assert r.code == 125 and "--policy FILE or --profile NAME" in r.stderr, r
    r = ctx.ward("recheck", run["id"], "--all", "--profile", "default", "--db", ctx.db)
    assert r.code == 125 and "exactly one" in r.stderr, r
    r = ctx.ward("recheck", "--since", "yesterdayish", "--profile", "default", "--db", ctx.db)
    assert r.code == 125 and "--since" in r.stderr, r
    r = ctx.ward("recheck", "--all", "--profile", "nosuch", "--db", ctx.db)
    assert r.code == 125 and "no profile named 'nosuch'" in r.stderr, r
    bad = ctx.write("bad.json", '{"version": 1,\n "fs": [{"path": "/x",\n   "allow": ["fly"]}]}')
    r = ctx.ward("recheck", "--all", "--policy", bad, "--db", ctx.db)
    assert r.code == 125 and "bad.json:3:" in r.stderr and "fs[0].allow[0]" in r.stderr, r
    junk = ctx.write("junk.db", "this is not a database, just text\n" * 40)
    r = ctx.ward("recheck", "--all", "--profile", "default", "--db", junk)
    assert r.code == 125 and "junk.db" in r.stderr, r
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.commit()
    con.close()
    r = ctx.ward("recheck", "--all", "--profile", "default", "--db", foreign)
    assert r.code == 125 and "foreign.db" in r.stderr, r
    r = ctx.ward("recheck", "--all", "--profile", "default", "--db", ctx.path("none.db"))
    assert r.code == 125 and "none.db" in r.stderr, r
