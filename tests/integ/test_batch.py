"""ward batch: many samples, one sandbox each, one database; result lines,
categories, progress, Ctrl-C, --resume after kill -9, --shard, the HTML
report in Chromium, bad input."""
import json
import os
import pty
import signal
import sqlite3
import subprocess
import time

import test_report
import wardtest


def _jsonl(ctx, name, samples):
    return ctx.write(name, "".join(json.dumps(s) + "\n" for s in samples))


def _batch(ctx, *args, **kw):
    return ctx.ward("batch", "--db", ctx.db, *args, **kw)


def _lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f]


def _by_id(path):
    out = {}
    for l in _lines(path):
        assert l["id"] not in out, f"two result lines for {l['id']}"
        out[l["id"]] = l
    return out


def _tagged_runs(ctx):
    """{sample id: [runs tagged with it, oldest first]} from the record."""
    runs = {}
    for r in ctx.sql("select id, argv, status, cause from runs order by started_ns"):
        argv = json.loads(r["argv"])
        if "--tag" in argv:
            tag = argv[argv.index("--tag") + 1]
            assert tag.startswith("ward-batch:"), tag
            runs.setdefault(tag.split(":", 2)[2], []).append(r)
    return runs


def _no_ward_left(marker):
    assert wardtest.wait_until(lambda: not wardtest.pids_matching(marker), 10), \
        f"processes left: {wardtest.pids_matching(marker)}"


def test_files_and_jsonl_samples_with_expectations(ctx):
    a = ctx.write("a.py", "import sys\nprint('py', sys.argv[1:])\n")
    b = ctx.write("b.sh", "echo from-sh; exit 3\n")
    s = _jsonl(ctx, "s.jsonl", [
        {"id": "sum", "code": "print(1 + 1)", "expect_stdout": "2\n", "expect_exit": 0},
        {"id": "io", "code": "import sys\nprint(sys.argv[1:], open('data.txt').read(), "
                             "sys.stdin.read())",
         "args": ["x", "y z"], "files": {"data.txt": "DATA"}, "stdin": "IN",
         "expect_stdout": "['x', 'y z'] DATA IN\n"},
        {"id": "wrong", "code": "print('no')", "expect_stdout": "yes\n", "expect_exit": 2},
        {"id": 7, "language": "node", "code": "console.log(6 * 7)", "expect_stdout": "42\n"},
        {"id": "sh", "language": "sh", "code": "echo $0 ok; exit 4", "expect_exit": 4},
    ])
    out = ctx.path("results.jsonl")
    r = _batch(ctx, "--out", out, "--jobs", "2", a, b, s)
    # one sample failed its expectations: exit 1
    assert r.code == 1, r
    res = _by_id(out)
    assert sorted(res) == sorted([a, b, "sum", "io", "wrong", "7", "sh"]), res
    for l in res.values():
        assert set(l) >= {"id", "run_id", "status", "exit_code", "duration_ms", "pass",
                          "denials", "categories"}, l
        run = ctx.sql("select * from runs where id = ?", l["run_id"])
        assert run and run[0]["status"] == l["status"], (l, run)
        assert run[0]["exit_code"] == l["exit_code"], (l, run)
        assert l["duration_ms"] == run[0]["duration_ms"], (l, run)
    assert res[a]["status"] == "ok" and res[a]["pass"] is None
    assert res[b]["status"] == "error" and res[b]["exit_code"] == 3
    assert res["sum"]["pass"] is True and "expect_failed" not in res["sum"]
    assert res["io"]["pass"] is True, res["io"]
    assert res["wrong"]["pass"] is False
    assert res["wrong"]["expect_failed"] == ["stdout", "exit"], res["wrong"]
    assert res["7"]["pass"] is True, res["7"]
    assert res["sh"]["pass"] is True and res["sh"]["exit_code"] == 4
    # each run is a ward run of its own, in the one database
    io = ctx.sql("select code_name, language from runs where id = ?", res["io"]["run_id"])[0]
    assert io["language"] == "python"
    out_io = ctx.sql("select data from outputs where run_id = ? and stream = 'stdout' "
                     "order by seq", res["io"]["run_id"])
    assert "".join(o["data"] if isinstance(o["data"], str) else o["data"].decode()
                   for o in out_io) == "['x', 'y z'] DATA IN\n", out_io
    # the summary table
    assert "outcome" in r.stdout and "category" in r.stdout, r
    assert "expectations: 4 pass, 1 fail" in r.stdout, r.stdout
    for line in ("ok", "error"):
        assert any(l.split()[:1] == [line] for l in r.stdout.splitlines()), r.stdout


CATEGORY_SAMPLES = [
    ("net", "import socket\ntry: socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
            "except OSError as e: print(e)", ["network"]),
    ("write-etc", "try: open('/etc/ward-batch-test', 'w')\nexcept OSError as e: print(e)",
     ["write_outside_workdir"]),
    ("shadow", "try: open('/etc/shadow').read()\nexcept OSError as e: print(e)",
     ["secret_read"]),
    ("exec", "import subprocess\ntry: subprocess.run(['/usr/bin/gcc', '--version'])\n"
             "except OSError as e: print(e)", ["exec_denied"]),
    ("kill1", "import os, signal\ntry: os.kill(1, signal.SIGTERM)\n"
              "except OSError as e: print(e)", ["signal_others"]),
    ("floor", "import ctypes\nctypes.CDLL(None).syscall(425, 1, 0)",  # io_uring_setup
     ["kernel_attack_surface"]),
    ("memory", "x = bytearray(400 << 20)\nx[::4096] = b'1' * len(x[::4096])\nprint(len(x))",
     ["resource_limit"]),
    ("timeout", "import time\ntime.sleep(30)", ["timeout"]),
    ("segv", "import ctypes\nctypes.string_at(0)", ["crash"]),
    ("clean", "print('fine')", []),
]


def test_behaviour_categories_from_the_record(ctx):
    s = _jsonl(ctx, "cats.jsonl",
               [{"id": i, "code": c} for i, c, _ in CATEGORY_SAMPLES])
    out = ctx.path("r.jsonl")
    r = _batch(ctx, "--out", out, "--memory", "200M", "--timeout", "3", s, timeout=180)
    assert r.code == 0, r
    res = _by_id(out)
    for i, _, cats in CATEGORY_SAMPLES:
        assert res[i]["categories"] == cats, (i, res[i])
    assert res["shadow"]["denials"] == {"secret-shadow": 1}, res["shadow"]
    assert res["floor"]["denials"] == {"floor.kill": 1}, res["floor"]
    assert res["kill1"]["denials"] == {"signals": 1}, res["kill1"]
    assert res["clean"]["denials"] == {}, res["clean"]
    assert res["timeout"]["status"] == "timeout"
    assert res["memory"]["status"] == "limit"
    assert res["segv"]["signal"] == signal.SIGSEGV and res["segv"]["exit_code"] is None
    assert not os.path.exists("/etc/ward-batch-test")
    # the summary counts one sample per category
    table = {l.split()[0]: l.split()[1] for l in r.stdout.splitlines()
             if len(l.split()) == 2}
    for c in ("network", "secret_read", "crash", "timeout", "resource_limit"):
        assert table.get(c) == "1", (c, r.stdout)


def test_progress_jsonl_and_bar(ctx):
    s = _jsonl(ctx, "p.jsonl", [{"id": f"p{i}", "language": "sh", "code": f"echo {i}"}
                                for i in range(4)])
    r = _batch(ctx, "--progress", "jsonl", "--jobs", "2", s)
    assert r.code == 0, r
    prog = [json.loads(l) for l in r.stderr.splitlines()]
    assert [p["done"] for p in prog] == [1, 2, 3, 4], r.stderr
    assert all(p["total"] == 4 for p in prog)
    assert sorted(p["id"] for p in prog) == ["p0", "p1", "p2", "p3"]
    assert prog[-1]["counts"] == {"ok": 4} and prog[-1]["eta_s"] == 0
    assert all(p["rate"] > 0 and p["status"] == "ok" for p in prog)
    # on a terminal: a bar redrawn in place
    master, slave = pty.openpty()
    try:
        p = subprocess.run([wardtest.ward_bin(), "batch", "--db", ctx.db, s],
                           stdout=subprocess.PIPE, stderr=slave, timeout=120)
        os.close(slave)
        slave = -1
        tty = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            tty += chunk
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert p.returncode == 0, p
    assert b"\r\x1b[K[" in tty and b"4/4" in tty and b"ETA" in tty, tty
    assert b"] 1/4" in tty and b"ok 4" in tty, tty


def _slow_samples(ctx, n, secs):
    return _jsonl(ctx, "slow.jsonl", [
        {"id": f"s{i}", "code": f"import time\nprint({i}, flush=True)\ntime.sleep({secs})",
         "files": {"f.txt": str(i)}}
        for i in range(n)])


def _staged():
    """The sample files' directories ward batch staged in /tmp."""
    return {d for d in os.listdir("/tmp")
            if d.startswith("ward-batch-") and os.path.isdir("/tmp/" + d)}


def test_sigint_cancels_running_samples(ctx):
    s = _slow_samples(ctx, 6, 30)
    out = ctx.path("r.jsonl")
    p = wardtest.spawn([wardtest.ward_bin(), "batch", "--db", ctx.db, "--out", out,
                        "--jobs", "2", s], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    # both running samples have their output recorded: their code runs
    def printed():
        try:
            return len(ctx.sql("select 1 from outputs")) == 2
        except sqlite3.OperationalError:  # not made yet
            return False
    assert wardtest.wait_until(printed, 30), "the samples did not start"
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, stdout, stderr)
    res = _by_id(out)
    assert sorted(res) == ["s0", "s1"], res
    for l in res.values():
        assert l["status"] == "cancelled", l
        run = ctx.sql("select status, cause from runs where id = ?", l["run_id"])[0]
        assert run["status"] == "aborted" and "SIGTERM" in run["cause"], run
    # nothing else started; the summary says so
    assert len(ctx.sql("select id from runs")) == 2
    assert "2 cancelled" in stdout and "4 not started" in stdout, stdout
    _no_ward_left(ctx.db)


def _kill9_after(ctx, out, lines, samples, jobs):
    """Starts a batch and kills it (SIGKILL) once out has this many lines;
    waits until none of its ward runs is left."""
    p = wardtest.spawn([wardtest.ward_bin(), "batch", "--db", ctx.db, "--out", out,
                        "--jobs", str(jobs), samples], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    assert wardtest.wait_until(
        lambda: os.path.exists(out) and len(open(out).read().splitlines()) >= lines, 60)
    p.kill()
    p.wait(10)
    _no_ward_left(ctx.db)


def test_kill9_then_resume_runs_each_sample_once(ctx):
    s = _slow_samples(ctx, 8, 0.8)
    out = ctx.path("r.jsonl")
    staged = _staged()
    _kill9_after(ctx, out, 3, s, 2)
    before = _by_id(out)
    assert 3 <= len(before) < 8, before
    r = _batch(ctx, "--out", out, "--jobs", "2", "--resume", s)
    assert r.code == 0, r
    after = _by_id(out)
    assert sorted(after) == [f"s{i}" for i in range(8)], after
    for i, l in before.items():
        assert after[i] == l, (i, l, after[i])
    assert all(l["status"] == "ok" for l in after.values()), after
    # the record: one finished run per sample; the runs the kill
    # interrupted are aborted (each ward run was stopped with the batch)
    for i, runs in _tagged_runs(ctx).items():
        done = [r for r in runs if r["status"] == "ok"]
        assert len(done) == 1 and done[0]["id"] == after[i]["run_id"], (i, runs)
        assert all(r["status"] == "aborted" for r in runs if r not in done), runs
    assert "done before (--resume)" in r.stdout, r.stdout
    # what the killed batch staged (its samples' files) was swept
    assert not _staged() - staged, _staged() - staged


def test_resume_never_takes_another_batchs_runs(ctx):
    s = _slow_samples(ctx, 4, 0.5)
    first = ctx.path("first.jsonl")
    assert _batch(ctx, "--out", first, "--jobs", "2", s).code == 0
    # the same samples again into the same database, killed early
    out = ctx.path("second.jsonl")
    _kill9_after(ctx, out, 1, s, 1)
    r = _batch(ctx, "--out", out, "--resume", s)
    assert r.code == 0, r
    a, b = _by_id(first), _by_id(out)
    assert sorted(b) == sorted(a), b
    assert all(l["batch"] == b["s0"]["batch"] != a["s0"]["batch"] for l in b.values()), b
    # every sample of the second batch ran in the second batch
    assert not {l["run_id"] for l in a.values()} & {l["run_id"] for l in b.values()}
    assert open(out + ".batch").read() == '{"ward_batch":"%s"}\n' % b["s0"]["batch"]
    # without its id file, --resume refuses
    os.unlink(out + ".batch")
    r = _batch(ctx, "--out", out, "--resume", s)
    assert r.code == 125 and "second.jsonl.batch" in r.stderr, r


def test_resume_takes_a_finished_run_whose_line_was_lost(ctx):
    s = _jsonl(ctx, "q.jsonl", [{"id": f"q{i}", "language": "sh", "code": f"echo {i}"}
                                for i in range(4)])
    out = ctx.path("r.jsonl")
    r = _batch(ctx, "--out", out, s)
    assert r.code == 0, r
    lines = open(out).read().splitlines(True)
    full = _by_id(out)
    # the batch died after q's run ended but before its line was written,
    # and power went while writing another line: a torn last line
    with open(out, "w") as f:
        f.writelines(lines[:2])
        f.write(lines[2][:25])
    runs_before = len(ctx.sql("select id from runs"))
    r = _batch(ctx, "--out", out, "--resume", s)
    assert r.code == 0, r
    assert len(ctx.sql("select id from runs")) == runs_before, "a finished sample ran again"
    assert _by_id(out) == full
    assert open(out).read().count("\n") == 4


def test_shards_cover_every_sample_once(ctx):
    samples = [{"id": f"id-{i}", "language": "sh", "code": "true"} for i in range(9)]
    s = _jsonl(ctx, "all.jsonl", samples)
    seen = []
    for i in (1, 2, 3):
        out = ctx.path(f"shard{i}.jsonl")
        r = _batch(ctx, "--out", out, "--shard", f"{i}/3", s)
        assert r.code == 0, r
        seen += list(_by_id(out))
    assert sorted(seen) == sorted(x["id"] for x in samples), seen
    # deterministic: by id, whatever the order of the samples
    rev = _jsonl(ctx, "rev.jsonl", samples[::-1])
    out = ctx.path("again.jsonl")
    assert _batch(ctx, "--out", out, "--shard", "2/3", rev).code == 0
    assert sorted(_by_id(out)) == sorted(_by_id(ctx.path("shard2.jsonl")))


def test_report_in_chromium_links_each_run(ctx):
    s = _jsonl(ctx, "h.jsonl", [
        {"id": "<script>alert(1)</script>", "code": "print('<b>hi</b>')"},
        {"id": "shadow", "code": "try: open('/etc/shadow').read()\nexcept OSError: pass"},
        {"id": "net", "code": "import socket\ntry: socket.create_connection(('192.0.2.1', 80), 1)\n"
                              "except OSError: pass"},
        {"id": "bad", "language": "sh", "code": "exit 9", "expect_exit": 0},
    ])
    page = ctx.path("batch.html")
    out = ctx.path("r.jsonl")
    r = _batch(ctx, "--out", out, "--report", page, s)
    assert r.code == 1, r
    res = _by_id(out)
    html = open(page).read()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "default-src 'none'" in html
    for l in res.values():
        rep = ctx.path("batch-runs", l["run_id"] + ".html")
        assert os.path.exists(rep), rep
        assert f'href="batch-runs/{l["run_id"]}.html"' in html
    links_e = "Array.from(document.links).map(a => a.href)"
    shadow_e = ("Array.from(document.querySelectorAll('#cat-secret_read + ul a'))"
                ".map(a => a.textContent)")
    meters_e = "document.querySelectorAll('meter').length"
    title_e = "document.title + '|' + document.scripts.length"
    errors, requests, v, png, shot = test_report.load_in_chromium(
        ctx, page, [links_e, shadow_e, meters_e, title_e])
    assert not errors, f"console errors: {errors} (screenshot {shot})"
    assert requests == ["file://" + page], requests
    assert sorted(v[links_e]) == sorted(
        "file://" + ctx.path("batch-runs", l["run_id"] + ".html") for l in res.values()
        for _ in range(1 + len(l["categories"]))), v[links_e]
    assert v[shadow_e] == ["shadow"], v[shadow_e]
    assert v[meters_e] == 2, v  # ok, error
    assert v[title_e] == "ward batch report|0", v
    # a linked page is the run's own ward report
    one = open(ctx.path("batch-runs", res["shadow"]["run_id"] + ".html")).read()
    assert f"<title>ward report {res['shadow']['run_id']}</title>" in one


def test_bad_input_exits_125(ctx):
    good = ctx.write("ok.py", "print(1)\n")
    cases = [
        ([ctx.path("missing.py")], "missing.py: cannot read the sample"),
        ([_jsonl(ctx, "nocode.jsonl", [{"id": "a", "code": "1"}, {"id": "b"}])],
         "nocode.jsonl:2: the sample has no \"code\""),
        ([ctx.write("syntax.jsonl", '{"id": "a", "code": "1"}\n\n{"id": oops}\n')],
         "syntax.jsonl:3:"),
        ([_jsonl(ctx, "dup.jsonl", [{"id": "a", "code": "1"}, {"id": "a", "code": "2"}])],
         "dup.jsonl:2: sample id \"a\" was already used at"),
        ([_jsonl(ctx, "key.jsonl", [{"id": "a", "code": "1", "expected_stdout": "1"}])],
         "key.jsonl:1: unknown key \"expected_stdout\""),
        ([_jsonl(ctx, "lang.jsonl", [{"id": "a", "code": "1", "language": "ruby"}])],
         "lang.jsonl:1: language \"ruby\""),
        ([_jsonl(ctx, "file.jsonl", [{"id": "a", "code": "1", "files": {"../x": "1"}}])],
         "file.jsonl:1: files: \"../x\" is not a plain file name"),
        (["--shard", "3/2", good], "--shard: '3/2' is not I/N"),
        (["--shard", "1-2", good], "--shard: '1-2' is not I/N"),
        (["--resume", good], "--resume needs --out"),
        (["--jobs", "0", good], "--jobs: '0'"),
        ([], "no samples"),
    ]
    for args, msg in cases:
        r = _batch(ctx, *args)
        assert r.code == 125, (args, r)
        assert msg in r.stderr, (args, msg, r.stderr)
    assert not os.path.exists(ctx.db) or not ctx.sql("select id from runs")


def test_a_sample_ward_run_refuses_is_failed(ctx):
    s = _jsonl(ctx, "f.jsonl", [{"id": "a", "code": "print(1)"}, {"id": "b", "code": "print(2)"}])
    out = ctx.path("r.jsonl")
    r = _batch(ctx, "--out", out, "--policy", ctx.path("no-such-policy.json"), s)
    assert r.code == 1, r
    res = _by_id(out)
    for l in res.values():
        assert l["status"] == "failed" and l["run_id"] is None, l
        assert "no-such-policy.json" in l["error"], l
    assert "2 could not run" in r.stdout, r.stdout
