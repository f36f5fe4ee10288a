"""ward serve: other languages, code contexts, per-cell env and commands
inside one python session (tools/agent/session-ctx.c; the python driver as
the hub), each a cell of the session's one run."""
import json
import re

import wardtest
from test_serve import PARAMS, METHOD, serve, _stdout, _main

# The sh profile runs the programs of /usr/bin and /bin: python3, node,
# bash. The default one runs python3 and a few helpers only.
OPEN = "sh"


def _err(r):
    return r["error"]["name"] + ": " + r["error"]["value"] if r["error"] else None


def test_python_session_runs_js_and_bash_cells_keeping_state(ctx):
    s = serve(ctx)
    c = s.ok("session.create", {"language": "python", "profile": OPEN})
    sid, run = c["session_id"], c["run_id"]
    assert s.run(sid, "x = 41")["status"] == "ok"
    r = s.run(sid, "let a = 5; console.log('js', typeof x); a * 2", language="js")
    assert r["status"] == "ok" and _main(r) == "10" and _stdout(r) == "js undefined\n", r
    assert r["run_id"] == run and r["language"] == "node", r
    r = s.run(sid, "a + 1", language="js")
    assert _main(r) == "6", r
    r = s.run(sid, "B=7; mkdir -p sub; cd sub; echo \"$x\"; sleep 60 &", language="bash")
    assert r["status"] == "ok" and _stdout(r) == "\n" and r["language"] == "sh", r
    r = s.run(sid, "echo \"$B $(basename $PWD) $BASH_VERSION\" >&2; false", language="bash")
    out = "".join(r["logs"]["stderr"]).split()
    assert out[:2] == ["7", "sub"] and len(out) == 3, r  # bash's own variable
    assert r["status"] == "error" and r["exit_code"] == 1, r
    r = s.run(sid, "x + 1")
    assert _main(r) == "42", r
    r = s.run(sid, "a", language="node")  # node is js
    assert _main(r) == "5", r
    assert s.close() == 0
    cells = ctx.sql("select n, code, status, result from cells where run_id=? order by n", run)
    assert [x["n"] for x in cells] == [1, 2, 3, 4, 5, 6, 7], cells
    langs = [json.loads(x["result"]).get("language") for x in cells]
    assert langs == [None, "node", "node", "sh", "sh", None, "node"], langs
    # the js and bash interpreters ended with the session's, not ended by
    # ward as processes its interpreter left
    row = ctx.sql("select status, cause from runs where id=?", run)[0]
    assert row["status"] == "ok" and not row["cause"], row
    execs = [e["target"] for e in ctx.events(run, "syscall = 'execve' and decision = 'allow'")]
    assert "/usr/bin/node" in execs and any(p.endswith("/bash") for p in execs), execs


def test_a_language_the_policy_does_not_run_is_an_error_naming_the_rule(ctx):
    s = serve(ctx)
    sid = s.create()  # the default profile: python3 only
    r = s.run(sid, "1 + 1", language="js")
    assert r["status"] == "error" and r["error"]["name"] == "InterpreterStartError", r
    assert "the policy denied execve /usr/bin/node (rule default, EACCES)" in \
        r["error"]["value"], r
    assert r["policy"]["denials"][0]["target"] == "/usr/bin/node", r
    r = s.run(sid, "echo hi", language="bash")
    assert "the policy denied execve" in r["error"]["value"] and "bash" in r["error"]["value"], r
    r = s.ok("command.run", {"session_id": sid, "cmd": "echo hi"})
    assert r["status"] == "error" and r["exit_code"] == 126, r
    assert r["error"].startswith("CommandStartError: ") and \
        "the policy denied execve" in r["error"] and "(rule default, EACCES)" in r["error"], r
    assert _main(s.run(sid, "6 * 7")) == "42"  # the session goes on
    assert s.close() == 0


def test_contexts_do_not_share_state(ctx):
    s = serve(ctx)
    sid = s.create(profile=OPEN)
    mk = lambda **p: s.ok("context.create", dict(p, session_id=sid))
    p1, p2 = mk(), mk(language="python", cwd="/tmp")
    assert p1["language"] == "python" and p1["cwd"] == wardtest.HOME, p1
    assert p2["cwd"] == "/tmp" and p1["context_id"] != p2["context_id"], p2
    j1, j2, b1, b2 = mk(language="js"), mk(language="js"), mk(language="bash"), mk(language="bash")
    assert (j1["language"], b1["language"]) == ("js", "bash"), (j1, b1)
    lst = s.ok("context.list", {"session_id": sid})["contexts"]
    assert lst == [p1, p2, j1, j2, b1, b2], lst
    run = lambda code, c, **p: s.run(sid, code, context_id=c["context_id"], **p)
    assert run("v = 'one'", p1)["status"] == "ok"
    r = run("v", p2)
    assert r["error"]["name"] == "NameError" and r["context_id"] == p2["context_id"], r
    assert _main(run("v", p1)) == "'one'"
    assert s.run(sid, "v")["error"]["name"] == "NameError"  # the default context
    r = run("import os\nos.getcwd()", p2)
    assert _main(r) == "'/tmp'", r
    assert _main(s.run(sid, "import os\nos.getcwd()")) == repr(wardtest.HOME)
    assert run("var w = 1", j1)["status"] == "ok"
    assert _main(run("typeof w", j2)) == "'undefined'"
    assert _main(run("w + 1", j1, language="js")) == "2"
    assert _main(s.run(sid, "typeof w", language="js")) == "'undefined'"
    assert run("Q=1", b1)["status"] == "ok"
    assert _stdout(run('echo "[$Q]"', b2)) == "[]\n"
    assert _stdout(run('echo "[$Q]"', b1)) == "[1]\n"
    # unknown, and of another language
    m = s.err("run", {"session_id": sid, "code": "1", "context_id": "ctx-nope"}, PARAMS)
    assert "ctx-nope" in m, m
    m = s.err("run", {"session_id": sid, "code": "1", "context_id": j1["context_id"],
                      "language": "python"}, PARAMS)
    assert "js context" in m, m
    assert s.close() == 0


def test_context_restart_clears_and_remove_forgets(ctx):
    s = serve(ctx)
    sid = s.create(profile=OPEN)
    p = s.ok("context.create", {"session_id": sid})
    j = s.ok("context.create", {"session_id": sid, "language": "js"})
    b = s.ok("context.create", {"session_id": sid, "language": "bash"})
    run = lambda code, c: s.run(sid, code, context_id=c["context_id"])
    run("v = 1", p)
    run("var w = 2", j)
    run("Q=3", b)
    for c in (p, j, b):
        assert s.ok("context.restart", {"session_id": sid, "context_id": c["context_id"]}) == \
            {"context_id": c["context_id"], "restarted": True}
    r = run("v", p)
    assert r["error"]["name"] == "NameError" and not r["policy"]["denials"], r
    assert _main(run("typeof w", j)) == "'undefined'"
    assert _stdout(run('echo "[$Q]"', b)) == "[]\n"
    assert s.ok("context.remove", {"session_id": sid, "context_id": j["context_id"]}) == \
        {"context_id": j["context_id"], "removed": True}
    s.err("run", {"session_id": sid, "code": "1", "context_id": j["context_id"]}, PARAMS)
    s.err("context.restart", {"session_id": sid, "context_id": j["context_id"]}, PARAMS)
    ids = [c["context_id"] for c in s.ok("context.list", {"session_id": sid})["contexts"]]
    assert ids == [p["context_id"], b["context_id"]], ids
    r = s.run(sid, "1")  # the next frame ends the removed context's node
    run_id = r["run_id"]
    assert s.close() == 0
    # two node processes, the context's before and after its restart,
    # each ended by the cell after its restart or removal
    last = ctx.sql("select max(ended_ns) t from cells where run_id=?", run_id)[0]["t"]
    nodes = ctx.sql("select pid, exit_ns from processes where run_id=? and kind='process' "
                    "and exe like '%node'", run_id)
    assert len(nodes) == 2 and all(n["exit_ns"] and n["exit_ns"] < last for n in nodes), \
        (nodes, last)


def test_env_is_the_cells_own_in_each_language(ctx):
    s = serve(ctx)
    sid = s.create(profile=OPEN)
    env = {"WARD_T": "one two", "HOME": "/elsewhere"}
    r = s.run(sid, "import os\n(os.environ['WARD_T'], os.environ['HOME'])", env=env)
    assert _main(r) == "('one two', '/elsewhere')", r
    r = s.run(sid, "(os.environ.get('WARD_T'), os.environ['HOME'])")
    assert _main(r) == "(None, %r)" % wardtest.HOME, r
    r = s.run(sid, "[process.env.WARD_T, process.env.HOME]", language="js", env=env)
    assert _main(r) == "[ 'one two', '/elsewhere' ]", r
    r = s.run(sid, "[process.env.WARD_T, process.env.HOME]", language="js")
    assert _main(r) == "[ undefined, '%s' ]" % wardtest.HOME, r
    r = s.run(sid, 'echo "$WARD_T|$HOME"; sh -c \'echo "$WARD_T"\'', language="bash", env=env)
    assert _stdout(r) == "one two|/elsewhere\none two\n", r
    r = s.run(sid, 'echo "[${WARD_T-unset}]|$HOME"\nsyntax error (', language="bash",
              env=env)
    assert _stdout(r) == "[one two]|/elsewhere\n" and r["status"] == "error", r
    r = s.run(sid, 'echo "[${WARD_T-unset}]|$HOME"', language="bash")
    assert _stdout(r) == "[unset]|%s\n" % wardtest.HOME, r
    s.err("run", {"session_id": sid, "code": "1", "env": {"A=B": "x"}}, PARAMS)
    assert s.close() == 0


def _cmd(s, sid, cmd, **p):
    p.update({"session_id": sid, "cmd": cmd})
    return s.ok("command.run", p)


def test_command_run(ctx):
    s = serve(ctx)
    sid = s.create(profile=OPEN)
    r = _cmd(s, sid, "echo out; echo err >&2")
    assert (r["status"], r["exit_code"], r["stdout"], r["stderr"], r["error"]) == \
        ("ok", 0, "out\n", "err\n", None), r
    assert r["session_id"] == sid and r["execution_count"] == 1 and r["duration_ms"] >= 0, r
    r = _cmd(s, sid, "echo partial; exit 3")
    assert (r["status"], r["exit_code"], r["stdout"]) == ("error", 3, "partial\n"), r
    r = _cmd(s, sid, "pwd; cat; echo \"$WARD_T\"", cwd="/tmp", stdin="typed\n",
             env={"WARD_T": "v"})
    assert r["stdout"] == "/tmp\ntyped\nv\n", r
    assert _cmd(s, sid, "pwd; echo \"[$WARD_T]\"")["stdout"] == wardtest.HOME + "\n[]\n"
    # streamed as it comes, stdout and stderr apart
    msgs = s.call_all("command.run", {"session_id": sid, "stream": True,
                                      "cmd": "for i in 1 2; do echo o$i; echo e$i >&2; "
                                             "sleep 0.3; done"})
    ev = [(m["event"], m["data"]) for m in msgs[:-1]]
    # each as it came (0.3 s apart); the two pipes of one moment in either order
    assert sorted(ev[:2]) == [("stderr", "e1\n"), ("stdout", "o1\n")], msgs
    assert sorted(ev[2:]) == [("stderr", "e2\n"), ("stdout", "o2\n")], msgs
    assert msgs[-1]["result"]["stdout"] == "o1\no2\n", msgs
    # a timeout kills the command's process group, background jobs too
    r = _cmd(s, sid, "sleep 60 & echo $! > bg.pid; echo started; wait", timeout_s=1)
    assert (r["status"], r["exit_code"], r["stdout"]) == ("timeout", 137, "started\n"), r
    assert "timeout" in r["error"] and r["duration_ms"] < 5000, r
    r = _cmd(s, sid, "kill -0 $(cat bg.pid) 2>/dev/null && echo alive || echo gone")
    assert r["stdout"] == "gone\n", r
    # long output: head and tail, with the note of what was left out
    r = _cmd(s, sid, "head -c 200000 /dev/zero | tr '\\0' x")
    assert r["truncated"]["stdout"] and "bytes left out here" in r["stdout"], r["truncated"]
    assert len(r["stdout"]) < 70000, len(r["stdout"])
    assert _main(s.run(sid, "6 * 7")) == "42"
    for bad in ({"cmd": ""}, {"cmd": "true", "cwd": "rel"}, {"cmd": "true", "bogus": 1}):
        s.err("command.run", dict(bad, session_id=sid), PARAMS)
    assert s.close() == 0


def test_commands_run_beside_cells_and_in_the_background(ctx):
    """Commands hold no turn: a background command answers its id at once,
    a cell and a foreground command answer while commands and cells run;
    command.wait/kill/list; the server's end kills what is left, and every
    command keeps its row saying how it ended."""
    import time
    s = serve(ctx)
    c = s.ok("session.create", {"language": "python", "profile": OPEN})
    sid, run = c["session_id"], c["run_id"]
    t0 = time.monotonic()
    b = s.ok("command.run", {"session_id": sid, "cmd": "echo start; sleep 3; echo done",
                             "background": True})
    assert (b["command_id"], b["background"]) == (1, True) and time.monotonic() - t0 < 1, b
    t0 = time.monotonic()
    r = s.run(sid, "print('cell'); 1+1")
    assert _main(r) == "2" and _stdout(r) == "cell\n", r  # not the command's output
    assert time.monotonic() - t0 < 1, time.monotonic() - t0
    k = s.ok("command.run", {"session_id": sid, "cmd": "sleep 30", "background": True})
    listed = s.ok("command.list", {"session_id": sid})["commands"]
    assert [(x["command_id"], x["running"]) for x in listed] == [(1, True), (2, True)], listed
    # a foreground command does not wait for a running cell
    s.send_raw((json.dumps({"id": 100, "method": "run", "params": {
        "session_id": sid, "code": "import time; time.sleep(2); print('slow')"}}) + "\n").encode())
    time.sleep(0.3)
    t0 = time.monotonic()
    s.send_raw((json.dumps({"id": 101, "method": "command.run", "params": {
        "session_id": sid, "cmd": "echo fg"}}) + "\n").encode())
    first = s.read()
    assert first["id"] == 101 and first["result"]["stdout"] == "fg\n", first
    assert time.monotonic() - t0 < 1.5, time.monotonic() - t0
    second = s.read()
    assert second["id"] == 100 and _stdout(second["result"]) == "slow\n", second
    assert s.ok("command.kill", {"session_id": sid, "command_id": 2}) == \
        {"command_id": 2, "killed": True}
    r = s.ok("command.wait", {"session_id": sid, "command_id": 2})
    assert (r["status"], r["exit_code"]) == ("cancelled", 137) and "killed" in r["error"], r
    r = s.ok("command.wait", {"session_id": sid, "command_id": 1})
    assert (r["status"], r["exit_code"], r["stdout"]) == ("ok", 0, "start\ndone\n"), r
    s.err("command.wait", {"session_id": sid, "command_id": 1}, PARAMS)  # answered once
    assert s.ok("command.list", {"session_id": sid})["commands"] == []
    s.err("command.run", {"session_id": sid, "cmd": "true", "background": True, "stream": True},
          PARAMS)
    s.ok("command.run", {"session_id": sid, "cmd": "echo left; sleep 30", "background": True})
    time.sleep(0.5)
    t0 = time.monotonic()
    assert s.close() == 0
    assert time.monotonic() - t0 < 10, time.monotonic() - t0
    rows = {r["code"]: r for r in ctx.sql(
        "select n, code, status, result from cells where run_id=? order by n", run)}
    assert rows["echo start; sleep 3; echo done"]["status"] == "ok", rows
    assert rows["sleep 30"]["status"] == "cancelled", rows
    left = rows["echo left; sleep 30"]
    res = json.loads(left["result"])
    assert left["status"] == "cancelled" and res["error"]["name"] == "SessionEnded", res
    assert res["logs"]["stdout"] == ["left\n"] and res["kind"] == "command", res


def _outputs(ctx, run):
    rows = ctx.sql("select seq, stream, data, cmd from outputs where run_id=? order by seq", run)
    got = {}
    for r in rows:
        key = (r["cmd"], r["stream"])
        got[key] = got.get(key, b"") + bytes(r["data"])
    return got


def test_a_background_commands_output_is_all_in_the_record(ctx):
    """Every byte a command writes is in the run's outputs, under the
    number of its cells row (outputs.cmd), none in the output of the cell
    that runs meanwhile; the chain verifies and `ward show` prints it,
    labelled."""
    import subprocess
    import time
    want = subprocess.run(["seq", "-f", "line %06g of the command", "1", "15000"],
                          capture_output=True, check=True).stdout
    assert len(want) > 300000, len(want)
    s = serve(ctx)
    c = s.ok("session.create", {"language": "python", "profile": OPEN})
    sid, run = c["session_id"], c["run_id"]
    s.run(sid, "1")  # then the ids of a command, and the rows' numbers, differ
    _cmd(s, sid, "true")
    b = s.ok("command.run", {"session_id": sid, "background": True,
                             "cmd": "sleep 0.3; seq -f 'line %06g of the command' 1 15000;"
                                    " echo cmd-err >&2"})
    r = s.run(sid, "import time\nprint('cell start', flush=True)\n"
                   "time.sleep(1.5)\nprint('cell end')")
    assert _stdout(r) == "cell start\ncell end\n", r
    w = s.ok("command.wait", {"session_id": sid, "command_id": b["command_id"]})
    assert (w["status"], w["exit_code"]) == ("ok", 0) and w["truncated"]["stdout"], w
    assert s.close() == 0
    got = _outputs(ctx, run)
    cid = w["execution_count"]
    # the command's own row (3, or 4 when the cell beside it took its row
    # first), never the hub's command id
    assert b["command_id"] == 1 and cid in (3, 4), (b, cid)
    row = ctx.sql("select code from cells where run_id=? and n=?", run, cid)
    assert row and "seq -f" in row[0]["code"], row
    assert got[(cid, "stdout")] == want, (len(got[(cid, "stdout")]), len(want))
    assert re.fullmatch(rb"cmd-err\n(ward denied [^\n]*\n)*", got[(cid, "stderr")]), got
    assert got[(None, "stdout")] == b"cell start\ncell end\n", got[(None, "stdout")][:200]
    assert set(got) <= {(None, "stdout"), (None, "stderr"), (cid, "stdout"), (cid, "stderr")}
    v = ctx.ward("verify", run, "--db", ctx.db, db=False)
    assert v.code == 0 and "intact" in v.stdout, v
    shown = ctx.ward("show", run).stdout
    assert re.search(r"cmd %d stdout\| line 000001 of the command\n" % cid, shown), shown[-3000:]
    assert "line 015000 of the command\n" in shown and "cmd %d stderr| cmd-err" % cid in shown
    assert re.search(r"^ *[+][0-9.]+ +stdout\| cell start$", shown, re.M), shown[-3000:]
    out = [x for x in json.loads(ctx.ward("show", run, "--json").stdout)["outputs"]
           if x.get("cmd") == cid and x["stream"] == "stdout"]
    assert "".join(x["text"] for x in out).encode() == want


def test_a_commands_flood_is_kept_to_the_runs_limit_and_counted(ctx):
    """A command's output counts against the run's output limit as the
    code's own does: the record keeps its first bytes up to the limit,
    exactly, and counts them all (runs.stdout_bytes, stdout_truncated)."""
    import subprocess
    want = subprocess.run(["seq", "-f", "flood %06g", "1", "30000"],
                          capture_output=True, check=True).stdout
    path = wardtest.profile_with(ctx, "sh", output_bytes=100000)
    s = serve(ctx)
    c = s.ok("session.create", {"language": "python", "policy": path})
    sid, run = c["session_id"], c["run_id"]
    b = s.ok("command.run", {"session_id": sid, "background": True,
                             "cmd": "seq -f 'flood %06g' 1 30000"})
    w = s.ok("command.wait", {"session_id": sid, "command_id": b["command_id"]})
    assert (w["status"], w["exit_code"]) == ("ok", 0), w
    assert w["truncated"]["stdout_bytes_total"] == len(want), w["truncated"]
    assert _stdout(s.run(sid, "print('after')")) == "after\n"
    assert s.close() == 0
    got = _outputs(ctx, run)
    n = w["execution_count"]
    assert got[(n, "stdout")] == want[:100000], len(got[(n, "stdout")])
    r = ctx.sql("select * from runs where id=?", run)[0]
    assert r["stdout_truncated"] == 1 and r["stdout_bytes"] == len(want) + 6, r
    v = ctx.ward("verify", run, "--db", ctx.db, db=False)
    assert v.code == 0 and "intact" in v.stdout, v


def test_a_forged_command_frame_is_recorded_as_a_commands_not_the_cells(ctx):
    """The code can write a command's frame on the result channel itself:
    its bytes are recorded under the row number it names, never as the
    code's own stdout, which stays whole beside it."""
    s = serve(ctx)
    c = s.ok("session.create", {"language": "python", "profile": OPEN})
    sid, run = c["session_id"], c["run_id"]
    s.run(sid, "import os\nprint('real 1', flush=True)\n"
               "os.write(6, b'{\"cmd\": 1, \"nonce\": \"x\", \"n\": 99, \"s\": 1, "
               "\"d\": \"Zm9yZ2VkCg==\"}\\n')\nprint('real 2')")
    assert s.close() == 0
    got = _outputs(ctx, run)
    assert got[(99, "stdout")] == b"forged\n", got
    assert got[(None, "stdout")] == b"real 1\nreal 2\n", got
    v = ctx.ward("verify", run, "--db", ctx.db, db=False)
    assert v.code == 0 and "intact" in v.stdout, v


def test_command_the_policy_refuses_names_the_rule(ctx):
    s = serve(ctx)
    sid = s.create(profile=OPEN)  # exec: /usr/bin/* and /bin/* only
    r = _cmd(s, sid, "/usr/sbin/nologin")
    assert r["status"] == "error" and r["exit_code"] == 126, r
    assert "Permission denied" in r["stderr"], r
    assert r["error"].startswith("the policy denied execve /usr/sbin/nologin "
                                 "(rule default, EACCES)"), r
    assert s.close() == 0


def test_cells_and_commands_are_one_run(ctx):
    s = serve(ctx)
    c = s.ok("session.create", {"profile": OPEN})
    sid = c["session_id"]
    s.run(sid, "print('py')")
    _cmd(s, sid, "echo cmd")
    s.run(sid, "console.log('js')", language="js")
    x = s.ok("context.create", {"session_id": sid, "language": "bash"})
    s.run(sid, "echo sh", context_id=x["context_id"])
    assert s.close() == 0
    cells = ctx.sql("select n, code, status, result from cells where run_id=? order by n",
                    c["run_id"])
    assert [(x["n"], x["code"]) for x in cells] == [
        (1, "print('py')"), (2, "echo cmd"), (3, "console.log('js')"), (4, "echo sh")], cells
    assert json.loads(cells[1]["result"])["kind"] == "command", cells[1]
    assert json.loads(cells[3]["result"])["context_id"] == x["context_id"], cells[3]
    r = ctx.ward("show", c["run_id"])
    assert r.code == 0, r
    marks = [l.split(None, 1)[1] for l in r.stdout.splitlines()
             if re.match(r" *[+][0-9.]+ (>>|<<) \[-\] cell \d+: ", l)
             or re.match(r" *[+][0-9.]+ +(cmd \d+ )?stdout\| ", l)]
    # a command's output is its own (pipes of its own, relayed by the hub):
    # in its row, and in the run's outputs under its row's n (outputs.cmd)
    assert json.loads(cells[1]["result"])["logs"]["stdout"] == ["cmd\n"], cells[1]
    assert marks == [">> [-] cell 1: print('py')", "stdout| py", "<< [-] cell 1: ok",
                     ">> [-] cell 2: echo cmd", "cmd 2 stdout| cmd", "<< [-] cell 2: ok",
                     ">> [-] cell 3: console.log('js')", "stdout| js", "<< [-] cell 3: ok",
                     ">> [-] cell 4: echo sh", "stdout| sh", "<< [-] cell 4: ok"], marks


def test_only_a_python_session_hosts_them(ctx):
    s = serve(ctx)
    sid = s.create(language="sh")
    for m, p in (("run", {"code": "1", "language": "python"}),
                 ("run", {"code": "true", "env": {"A": "1"}}),
                 ("command.run", {"cmd": "true"}),
                 ("context.create", {"language": "bash"})):
        msg = s.err(m, dict(p, session_id=sid), PARAMS)
        assert "need a python session" in msg, msg
    assert s.run(sid, "echo ok")["status"] == "ok"
    s.err("context.list", {}, PARAMS)
    s.err("context.bogus", {}, METHOD)
    assert s.close() == 0


def test_help_lists_the_methods(ctx):
    r = ctx.ward("serve", "--help")
    assert r.code == 0, r
    for m in ("context.create", "context.list", "context.remove", "context.restart",
              "command.run", "context_id"):
        assert m in r.stdout, m


def test_cancel_interrupts_a_js_or_bash_cell_of_a_python_session(ctx):
    # through ward mcp, whose notifications/cancelled interrupts the
    # running cell: the hub passes the SIGINT (and node's cancel line) on
    import time
    from test_mcp import Mcp, _start_call, _until, _started, _cancel, text_of
    m = Mcp(ctx, "--profile", OPEN)
    m.initialize()
    s = m.call("create_session", language="python")["structuredContent"]
    sid = s["session_id"]
    cases = [("node", "var x = 7", "console.log('started'); for (;;) {}", "x"),
             ("node", None, "new Promise(() => setTimeout(() => console.log('started'), 50))",
              "x"),
             ("sh", "x=7", "echo started; sleep 30", "echo $x")]
    want = []
    for i, (lang, setup, code, probe) in enumerate(cases):
        if setup:
            r = m.call("run_code", session_id=sid, language=lang, code=setup)
            assert not r.get("isError"), r
            want.append("ok")
        rid = _start_call(m, "run_code", progress="t%d" % i, session_id=sid, language=lang,
                          code=code)
        _until(m, _started("t%d" % i))
        t = time.monotonic()
        _cancel(m, rid)
        r = m.request("tools/call", {"name": "run_code", "arguments": {
            "session_id": sid, "language": lang, "code": probe}})
        assert time.monotonic() - t < 10, (lang, r)
        assert "7" in text_of(r["result"]), (lang, r)
        want += ["cancelled", "ok"]
    r = m.call("run_code", session_id=sid, code="'python still here'")
    assert "python still here" in text_of(r), r
    assert m.close() == 0
    cells = ctx.sql("select n, status from cells where run_id=? order by n", s["run_id"])
    assert [c["status"] for c in cells] == want + ["ok"], cells


def test_js_and_bash_timeouts_keep_their_context(ctx):
    s = serve(ctx)
    sid = s.create(profile=OPEN)
    s.run(sid, "var x = 7", language="js")
    r = s.run(sid, "for (;;) {}", language="js", timeout_s=1)
    assert r["status"] == "timeout" and r["interrupted"] is True, r
    assert "timed out" in r["error"]["value"], r
    assert _main(s.run(sid, "x", language="js")) == "7"
    s.run(sid, "y=8", language="bash")
    r = s.run(sid, "sleep 30", language="bash", timeout_s=1)
    assert r["status"] == "timeout" and r["duration_ms"] < 5000, r
    assert _stdout(s.run(sid, "echo $y", language="bash")) == "8\n"
    r = s.run(sid, "process.exit(3)", language="js")
    assert (r["status"], r["exit_code"], r["error"]["name"]) == ("error", 3, "ContextEnded"), r
    assert not r["policy"]["denials"], r  # nothing signalled that was gone
    r = s.run(sid, "typeof x", language="js")  # a new node: x is gone
    assert _main(r) == "'undefined'", r
    assert s.close() == 0
