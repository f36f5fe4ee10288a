"""Python frames of a denial (tracer/pyframe.c): read from the stopped
interpreter's memory, recorded in events.pyframes as untrusted, shown by
ward show (text and --json)."""
import json
import os
import shutil
import tempfile

import wardtest

LEAK = '''import sys


def leak():
    open("/etc/shadow")


def main():
    try:
        leak()
    except OSError as e:
        print("denied", e.errno)


main()
'''


def _pyframes(ctx, run_id):
    rows = ctx.denials(run_id)
    assert rows, "no denial recorded"
    return [json.loads(r["pyframes"]) if r["pyframes"] else None for r in rows]


def _shadow(ctx, run_id):
    rows = [r for r in ctx.denials(run_id) if r["target"] == "/etc/shadow"]
    assert len(rows) == 1, rows
    assert rows[0]["pyframes"], rows[0]
    return rows[0], json.loads(rows[0]["pyframes"])


def test_pyframe_function_and_caller(ctx):
    script = ctx.write("leak.py", LEAK)
    r = ctx.ward("run", script)
    assert r.code == 0 and "denied 13" in r.stdout, r
    run_id = ctx.last_run()["id"]
    row, p = _shadow(ctx, run_id)
    assert p["untrusted"] is True and p["truncated"] is False, p
    assert p["source"] == "cpython-3.11 memory" and p["version"].startswith("3.11."), p
    assert "incomplete" not in p, p
    got = [(os.path.basename(f["file"]), f["line"], f["function"]) for f in p["frames"]]
    assert got == [("leak.py", 5, "leak"), ("leak.py", 10, "main"),
                   ("leak.py", 15, "<module>")], got
    # only where a backtrace is taken: no allowed event carries frames
    assert not ctx.events(run_id, "decision = 'allow' and pyframes is not null")

    r = ctx.ward("show", "last")
    assert r.code == 0, r
    text = r.stdout.split("DENY   openat /etc/shadow", 1)[1]
    assert "    python (from untrusted memory):\n" in text, text
    lines = text.split("python (from untrusted memory):\n", 1)[1].splitlines()
    assert lines[0].strip().startswith("#0  leak  ") and lines[0].endswith("leak.py:5"), lines
    assert lines[1].strip().startswith("#1  main  ") and lines[1].endswith("leak.py:10"), lines
    assert lines[2].strip().startswith("#2  <module>  "), lines
    # under the native backtrace
    assert text.index("backtrace") < text.index("python (from untrusted")

    r = ctx.ward("show", "--json", "last")
    assert r.code == 0, r
    ev = [e for e in r.json()["events"] if e["target"] == "/etc/shadow"][0]
    assert ev["pyframes"]["untrusted"] is True, ev
    assert [f["function"] for f in ev["pyframes"]["frames"]] == ["leak", "main", "<module>"]
    allowed = [e for e in r.json()["events"] if e["decision"] == "allow"]
    assert allowed and all(e["pyframes"] is None for e in allowed)


def test_pyframe_module_level(ctx):
    code = "import os\nx = 1\ntry:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n"
    r = ctx.run(code)
    assert r.code == 0, r
    _, p = _shadow(ctx, ctx.last_run()["id"])
    assert [(f["line"], f["function"]) for f in p["frames"]] == [(4, "<module>")], p


def test_pyframe_thread_has_its_own_stack(ctx):
    code = ("import threading\n"
            "def worker():\n"
            "    try:\n"
            "        open('/etc/shadow')\n"      # 4
            "    except OSError:\n"
            "        pass\n"
            "def main():\n"
            "    t = threading.Thread(target=worker)\n"
            "    t.start()\n"
            "    t.join()\n"                      # 10
            "main()\n")
    r = ctx.run(code)
    assert r.code == 0, r
    row, p = _shadow(ctx, ctx.last_run()["id"])
    assert row["tid"] != row["pid"], "the denial came from the thread"
    frames = p["frames"]
    assert (frames[0]["function"], frames[0]["line"]) == ("worker", 4), frames
    names = [f["function"] for f in frames]
    # the thread's bootstrap, not the main thread's main() and <module>
    assert "Thread._bootstrap" in names and "main" not in names and "<module>" not in names, names
    assert all(f["file"].endswith("threading.py") for f in frames[1:]), frames


def test_pyframe_deep_recursion_truncated(ctx):
    code = ("import sys\n"
            "sys.setrecursionlimit(1000)\n"
            "def down(n):\n"
            "    if n:\n"
            "        return down(n - 1)\n"        # 5
            "    try:\n"
            "        open('/etc/shadow')\n"       # 7
            "    except OSError:\n"
            "        return 0\n"
            "down(200)\n")
    r = ctx.run(code)
    assert r.code == 0, r
    _, p = _shadow(ctx, ctx.last_run()["id"])
    frames = p["frames"]
    assert p["truncated"] is True and len(frames) == 64, (p["truncated"], len(frames))
    assert (frames[0]["function"], frames[0]["line"]) == ("down", 7), frames[0]
    assert all((f["function"], f["line"]) == ("down", 5) for f in frames[1:]), frames


def test_pyframe_forged_memory(ctx):
    """Code that rewrites its own frame (previous -> itself) and its code
    object's qualname (-> a bytes object) while it is denied: the walk ends
    at the cycle with a flag, the wrong type reads "?", ward is unharmed."""
    code = ("import ctypes, sys\n"
            "def forge():\n"
            "    f = sys._getframe()\n"
            "    iframe = ctypes.c_void_p.from_address(id(f) + 24).value\n"
            "    prev = ctypes.c_void_p.from_address(iframe + 48)\n"
            "    qual = ctypes.c_void_p.from_address(id(forge.__code__) + 128)\n"
            "    fake = b'not a str'\n"
            "    saved = (prev.value, qual.value)\n"
            "    prev.value, qual.value = iframe, id(fake)\n"
            "    try:\n"
            "        open('/etc/shadow')\n"      # 11
            "    except OSError:\n"
            "        pass\n"
            "    finally:\n"
            "        prev.value, qual.value = saved\n"
            "forge()\n"
            "print('survived')\n")
    r = ctx.run(code)
    assert r.code == 0 and "survived" in r.stdout, r
    _, p = _shadow(ctx, ctx.last_run()["id"])
    assert p["untrusted"] is True
    assert [(f["function"], f["line"]) for f in p["frames"]] == [("?", 11)], p
    assert "links back" in p.get("incomplete", ""), p
    r = ctx.ward("show", "last")
    assert r.code == 0 and "(stopped: a frame links back" in r.stdout, r


def test_pyframe_not_python(ctx):
    r = ctx.run("cat /etc/shadow; true", lang="sh")
    assert r.code == 0, r
    rows = _pyframes(ctx, ctx.last_run()["id"])
    assert rows and all(p is None for p in rows), rows
    assert any(r["backtrace"] for r in ctx.denials(ctx.last_run()["id"]))
    wardtest.require(wardtest.NODE)
    r = ctx.run("try { require('fs').readFileSync('/etc/shadow') } catch (e) {}", lang="node")
    assert r.code == 0, r
    rows = _pyframes(ctx, ctx.last_run()["id"])
    assert rows and all(p is None for p in rows), rows


SKIP_DIRS = {"test", "tests", "site-packages", "idlelib", "tkinter", "turtledemo", "ensurepip"}


def _link_install(src, dst):
    """Hard links of an interpreter's install (bin, lib) in dst: the code
    runs as nobody, which cannot enter /root where pyenv keeps it."""
    for top in ("bin", "lib"):
        for d, dirs, files in os.walk(os.path.join(src, top)):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("python3.")
                       or d == os.path.join(src, "lib")]
            rel = os.path.relpath(d, src)
            os.makedirs(os.path.join(dst, rel), mode=0o755, exist_ok=True)
            for f in files:
                s = os.path.join(d, f)
                if os.path.islink(s):
                    os.symlink(os.readlink(s), os.path.join(dst, rel, f))
                else:
                    os.link(s, os.path.join(dst, rel, f))


def _other_python(ctx, exe, source):
    """The leak script run by another interpreter (pyenv's, linked to a
    place the code's user can read), with the default policy plus that
    tree; returns the shadow denial's row."""
    wardtest.require(exe)
    home = os.path.dirname(os.path.dirname(exe))
    base = tempfile.mkdtemp(prefix="ward-pyf-", dir="/var/tmp")
    try:
        os.chmod(base, 0o755)
        _link_install(home, base)
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                               "default.json")) as f:
            pol = json.load(f)
        pol["name"] = "default-pyenv"
        pol["fs"].insert(0, {"id": "pyenv", "path": base, "allow": ["read", "exec", "stat"]})
        exe2 = os.path.join(base, "bin", os.path.basename(exe))
        pol["exec"]["allow"].append(exe2)
        ctx.write("pol.json", json.dumps(pol))
        script = ctx.write("leak.py", LEAK)
        r = ctx.ward("run", "--policy", ctx.path("pol.json"), "--interpreter", exe2,
                     "--env", "LD_LIBRARY_PATH=" + os.path.join(base, "lib"), script)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert r.code == 0 and "denied 13" in r.stdout, r
    rows = [r for r in ctx.denials(ctx.last_run()["id"]) if r["target"] == "/etc/shadow"]
    assert len(rows) == 1 and rows[0]["backtrace"], rows
    if source is None:
        return rows[0]
    p = json.loads(rows[0]["pyframes"])
    assert p["source"] == source, p
    got = [(os.path.basename(f["file"]), f["line"], f["function"]) for f in p["frames"]]
    assert got == [("leak.py", 5, "leak"), ("leak.py", 10, "main"),
                   ("leak.py", 15, "<module>")], got
    return rows[0]


def test_pyframe_pyenv_311(ctx):
    _other_python(ctx, "/root/.pyenv/versions/3.11.7/bin/python3.11", "cpython-3.11 memory")


def test_pyframe_pyenv_313(ctx):
    _other_python(ctx, "/root/.pyenv/versions/3.13.0/bin/python3.13", "cpython-3.13 memory")


def test_pyframe_pyenv_312_unsupported(ctx):
    """3.12 has neither the 3.11 layout nor the debug offsets: nothing."""
    row = _other_python(ctx, "/root/.pyenv/versions/3.12.1/bin/python3.12", None)
    assert row["pyframes"] is None, row


def test_pyframe_non_ascii_names(ctx):
    """Latin-1 (1 byte a character), BMP (2) and astral (4) names and file
    names come out as UTF-8."""
    code = ("def año():\n"
            "    def 中文():\n"
            "        def 𝔣():\n"
            "            try:\n"
            "                open('/etc/shadow')\n"
            "            except OSError:\n"
            "                pass\n"
            "        𝔣()\n"
            "    中文()\n"
            "año()\n")
    r = ctx.run(code)
    assert r.code == 0, r
    _, p = _shadow(ctx, ctx.last_run()["id"])
    # Python folds 𝔣 to f (NFKC) in identifiers; the qualified names nest
    assert [f["function"] for f in p["frames"]] == [
        "año.<locals>.中文.<locals>.f", "año.<locals>.中文", "año", "<module>"], p
    # an astral character (4 bytes a character) in the file name
    script = ctx.write("leak-𝔣.py", LEAK)
    r = ctx.ward("run", script)
    assert r.code == 0, r
    _, p = _shadow(ctx, ctx.last_run()["id"])
    assert {os.path.basename(f["file"]) for f in p["frames"]} == {"leak-𝔣.py"}, p
