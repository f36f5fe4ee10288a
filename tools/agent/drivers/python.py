# ward session driver for Python (embedded in ward; see tools/agent/session.c).
# Cells arrive on fd 5 as a JSON header line {"n", "nonce", "timeout_s",
# "len"} and len bytes of code; each result leaves on fd 6 as one JSON line
# carrying the cell's nonce. Both fds are made close-on-exec at once, so
# processes the code starts cannot read or write them. Code in this
# process can (see docs/security.md): the nonce only tells the supervisor
# which cell a frame answers and exposes a second frame for a cell.
# SIGINT (the server cancelling a cell) and the cell's SIGALRM interrupt
# the cell's code only: between cells they are ignored.
import _signal
import os
import sys

# Each module the driver imports at start is start-up time of every
# session: the C module _signal instead of signal, and a JSON codec of its
# own for the two shapes it needs instead of json (those bring enum, re
# and contextlib, ~3 ms); no _ast (its ~120 node types take ~2 ms to make:
# _split finds the last expression with compile() alone); traceback,
# types, base64 and io are imported when first needed.

_CELL_FD, _RESULT_FD = 5, 6
os.set_inheritable(_CELL_FD, False)
os.set_inheritable(_RESULT_FD, False)
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)
_buf = bytearray()


def _read_exact(n):
    global _buf
    while len(_buf) < n:
        chunk = os.read(_CELL_FD, max(65536, n - len(_buf)))
        if not chunk:
            return None
        _buf += chunk
    out, _buf = bytes(_buf[:n]), _buf[n:]
    return out


def _read_line():
    global _buf
    while b"\n" not in _buf:
        chunk = os.read(_CELL_FD, 65536)
        if not chunk:
            return None
        _buf += chunk
    i = _buf.index(b"\n")
    out, _buf = bytes(_buf[:i]), _buf[i + 1:]
    return out


def _head(line):
    # The frame header ward writes (tools/agent/session.c send_cell), a flat
    # object: {"n":N,"nonce":"HEX","timeout_s":G,"len":N}.
    h = {}
    for part in line.decode().strip().strip("{}").split(","):
        k, v = part.split(":", 1)
        k, v = k.strip().strip('"'), v.strip()
        h[k] = v.strip('"') if v.startswith('"') else float(v)
    h["n"], h["len"] = int(h["n"]), int(h["len"])
    return h


def _jstr(s):
    t = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if "\r" in t or "\t" in t:
        t = t.replace("\r", "\\r").replace("\t", "\\t")
    if t.isprintable():
        return '"' + t + '"'
    import json  # other control or unprintable characters: rare
    return json.dumps(s, ensure_ascii=False)


def _json(v):
    # JSON text of the result frame: dicts with string keys, lists,
    # strings, integers, booleans and None. Non-ASCII text stays as it is
    # (the frame is sent as UTF-8; a lone surrogate becomes "?").
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, str):
        return _jstr(v)
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, dict):
        return "{" + ",".join(_jstr(str(k)) + ":" + _json(x)
                              for k, x in v.items()) + "}"
    return "[" + ",".join(_json(x) for x in v) + "]"


_fired = [False]
_in_cell = [False]
_DRIVER = globals()  # frames running in it are the driver's own


def _alarm(signum, frame):
    # The cell's time is up: the same KeyboardInterrupt as a SIGINT.
    if _in_cell[0]:
        _fired[0] = True
        raise KeyboardInterrupt("cell timeout")


def _sigint(signum, frame):
    if _in_cell[0]:
        raise KeyboardInterrupt()


_signal.signal(_signal.SIGINT, _sigint)


def _figures(results):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    import base64
    import io
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            out = io.BytesIO()
            fig.savefig(out, format="png")
            results.append({"png": base64.b64encode(out.getvalue()).decode(),
                            "text": repr(fig), "is_main_result": False})
        plt.close("all")
    except Exception as e:  # a broken figure must not end the session
        results.append({"text": "figure not rendered: %r" % (e,),
                        "is_main_result": False})


def _strip(e, seen):
    import types
    # The driver's frames (where the cell was called from, the signal
    # handler that interrupted it) leave the traceback of e and of the
    # exceptions chained to it: what remains is the code's.
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        kept = []
        tb = e.__traceback__
        while tb is not None:
            if (tb.tb_frame.f_globals is not _DRIVER and
                    tb.tb_frame.f_code is not _loop[1]):
                kept.append(tb)
            tb = tb.tb_next
        new = None
        for t in reversed(kept):
            new = types.TracebackType(new, t.tb_frame, t.tb_lasti,
                                      t.tb_lineno)
        e.__traceback__ = new
        _strip(e.__cause__, seen)
        e = e.__context__


def _error(e):
    import traceback
    try:
        _strip(e, set())
    except Exception:
        pass  # a traceback with the driver's frames is still one
    return {"name": type(e).__name__, "value": str(e),
            "traceback": "".join(traceback.format_exception(
                type(e), e, e.__traceback__))}


# Top-level await, as in IPython: compiled with this flag (the value of
# ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), a cell that awaits is a coroutine code
# object (CO_COROUTINE), run on the session's own asyncio loop; asyncio is
# imported only then.
_AWAIT, _CO_COROUTINE = 0x2000, 0x80
_loop = [None, None]  # the loop, and the code of its run_until_complete


def _go(code, ns):
    if not code.co_flags & _CO_COROUTINE:
        return eval(code, ns)
    import asyncio
    if _loop[0] is None:
        _loop[0] = asyncio.new_event_loop()
        _loop[1] = type(_loop[0]).run_until_complete.__code__  # not shown
    try:
        return _loop[0].run_until_complete(eval(code, ns))
    except BaseException:
        # stopped inside the loop (an interrupt, a limit): a new loop
        # for the next cell, not one stopped halfway
        loop, _loop[0] = _loop[0], None
        try:
            loop.close()
        except BaseException:
            pass
        raise


def _ast_split(code, name):
    # The exact split, by the syntax tree: when _split cannot tell.
    import _ast
    tree = compile(code, name, "exec", _ast.PyCF_ONLY_AST | _AWAIT)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    return (compile(tree, name, "exec", _AWAIT),
            last and compile(last, name, "eval", _AWAIT))


def _split(code, name):
    # The cell as (its statements, its last expression or None), as a
    # notebook splits it, with compile() alone. The last top-level
    # statement starts at column 0, or after a ';' on the last line. From
    # the bottom, each such place is tried: the part after it compiling
    # as an expression and the part before as statements is the split
    # (both compile, so the tokenizer cuts the cell there the same way);
    # the part after it compiling only as statements means the last
    # statement is no expression; compiling neither way, it began higher
    # up. After 16 places, or a part before that does not compile, the
    # syntax tree decides. Line numbers stay the cell's.
    lines = code.split("\n")
    tries = 0
    for k in range(len(lines) - 1, -1, -1):
        first = lines[k][:1]
        if not first or first in " \t\f\r#)]}":
            continue
        tries += 1
        if tries > 16:
            break
        cuts = [None]
        if not "".join(lines[k + 1:]).strip():
            cuts += [i for i in range(len(lines[k]) - 1, 0, -1)
                     if lines[k][i] == ";"]
        for semi in cuts:
            if semi is None:
                head, tail = "\n".join(lines[:k]), "\n".join(lines[k:])
            else:
                head = "\n".join(lines[:k] + [lines[k][:semi]])
                tail = lines[k][semi + 1:].lstrip(" \t")
            try:
                expr = compile("\n" * k + tail, name, "eval", _AWAIT)
            except SyntaxError:
                continue
            try:
                return compile(head, name, "exec", _AWAIT), expr
            except SyntaxError:
                return _ast_split(code, name)
        try:
            compile("\n" * k + "\n".join(lines[k:]), name, "exec", _AWAIT)
        except SyntaxError:
            continue
        return compile(code, name, "exec", _AWAIT), None
    return _ast_split(code, name)


def _run(ns, n, code, timeout):
    results, error, interrupted = [], None, False
    name = "<cell %d>" % n
    _fired[0] = False
    _signal.signal(_signal.SIGALRM, _alarm)
    try:
        code, evaled = _split(code, name)
        _in_cell[0] = True
        if timeout > 0:
            _signal.setitimer(_signal.ITIMER_REAL, timeout)
        _go(code, ns)
        value = _go(evaled, ns) if evaled is not None else None
        text = repr(value) if value is not None else None
        _in_cell[0] = False
        if value is not None:
            ns["_"] = value
            results.append({"text": text, "is_main_result": True})
    except BaseException as e:
        _in_cell[0] = False
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        interrupted = _fired[0]
        error = _error(e)
    _in_cell[0] = False
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _figures(results)
    # the main result comes last, as in a notebook
    results.sort(key=lambda r: r["is_main_result"])
    return results, error, interrupted


# --- The hub: contexts, other languages, commands (tools/agent/session-ctx.c).
# A frame whose header has "x" carries a JSON body instead of code: {op:
# "run"|"command", lang, ctx, cwd, env, code | cmd, stdin, drop, driver?,
# argv0}. Python contexts are globals dicts of this process; a js or bash
# context is a driver of its own (drivers/node.js, drivers/sh.sh) that this
# process starts on its first cell: a child in a process group of its own,
# its fds 5 and 6 a socket and a pipe of this process, its stdout and
# stderr this process's (the session's output). Its frames are passed on
# as they are; a SIGINT (a timeout, a cancel) is passed on to its group.
# Everything it does is the session's run: same supervisor, same policy.
_ctx_ns = {}   # a python context's id -> its globals
_ctx_cwd = {}  # a python context's id -> its working directory
_kids = {}     # a js or bash context's id (its language: the default) -> kid
_drivers = {}  # "node", "sh" -> the driver's text, as ward sent it
_HOME = os.getcwd()  # the session's workdir, as the code sees it


def _put(frame):
    data = (frame if isinstance(frame, bytes) else
            (_json(frame) + "\n").encode("utf-8", "replace"))
    while data:
        data = data[os.write(_RESULT_FD, data):]


def _failed(h, name, value, code=1):
    return {"nonce": h["nonce"], "n": h["n"], "results": [],
            "error": {"name": name, "value": value, "traceback": ""},
            "interrupted": False, "exit_code": code}


def _fresh_ns():
    return {"__name__": "__main__", "__builtins__": __builtins__}


def _env_set(env):
    # The cell's own variables, and what to put back after it.
    saved = [(k, os.environ.get(k)) for k in env]
    os.environ.update(env)
    return saved


def _env_back(saved):
    for k, v in saved:
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _drop(cid):
    # A context removed or restarted: its state goes now.
    _ctx_ns.pop(cid, None)
    _ctx_cwd.pop(cid, None)
    kid = _kids.pop(cid, None)
    if kid is not None:
        _kid_end(kid)


def _py_cell(ns, h, m):
    cid, here = m.get("ctx"), None
    g = ns if cid is None else _ctx_ns.setdefault(cid, _fresh_ns())
    saved = _env_set(m.get("env") or {})
    try:
        if cid is not None:
            here = os.getcwd()
            os.chdir(_ctx_cwd.get(cid) or m.get("cwd") or _HOME)
        results, error, interrupted = _run(g, h["n"], m["code"],
                                           h.get("timeout_s", 0))
        if cid is not None:
            _ctx_cwd[cid] = os.getcwd()
    except OSError as e:  # the context's directory is gone
        results, error, interrupted = [], _error(e), False
    finally:
        _env_back(saved)
        if here is not None:
            try:
                os.chdir(here)
            except OSError:
                pass
    return {"nonce": h["nonce"], "n": h["n"], "results": results,
            "error": error, "interrupted": interrupted}


def _kid_start(lang, m):
    # [pid, cells socket, results fd, lang]; OSError when it cannot start
    # (the policy refused the exec: the server names the rule).
    import socket
    drv = _drivers[lang]
    argv = ([m["argv0"], "-e", drv] if lang == "node"
            else [m["argv0"], "-c", drv, "sh"])
    a, b = socket.socketpair()
    r, w = os.pipe()
    here = os.getcwd()
    try:
        os.chdir(m.get("cwd") or _HOME)
        pid = os.posix_spawn(argv[0], argv, dict(os.environ), setpgroup=0,
                             file_actions=[
                                 (os.POSIX_SPAWN_DUP2, b.fileno(), 5),
                                 (os.POSIX_SPAWN_DUP2, w, 6)])
    except OSError:
        a.close()
        os.close(r)
        raise
    finally:
        b.close()
        os.close(w)
        os.chdir(here)
    kid = [pid, a, r, lang]
    if not _kids:
        import atexit
        atexit.register(_kids_close)
    if _kid_line(kid, b'"ward":"ready"') is None:  # dropped
        _kid_end(kid)
        raise OSError("the %s driver ended as it started" % lang)
    return kid


def _kid_end(kid):
    # Its group killed while its channel is still open (at EOF it would
    # end by itself: a group gone, or a zombie's, is not the run's to
    # signal), unless it is gone already; then its status.
    try:
        pid, st = os.waitpid(kid[0], os.WNOHANG)
        if pid == 0:
            try:
                os.killpg(kid[0], _signal.SIGKILL)
            except OSError:
                pass
            st = os.waitpid(kid[0], 0)[1]
    except ChildProcessError:  # a cell reaped it
        st = None
    kid[1].close()
    os.close(kid[2])
    return st


def _kids_close():
    # The session is over: each kid gets EOF and ends (sh: its background
    # jobs too), so that the session's run ends with them, not by ward
    # ending what its interpreter left; one that lingers is killed.
    import time
    for kid in _kids.values():
        kid[1].close()
    end = time.monotonic() + 2
    for kid in _kids.values():
        while time.monotonic() < end and _kid_alive(kid):
            time.sleep(0.005)
        _kid_end(kid)


def _kid_alive(kid):
    try:
        return os.waitpid(kid[0], os.WNOHANG)[0] == 0
    except ChildProcessError:
        return False


def _kid_line(kid, mark):
    # The kid's result lines up to the one with mark (the cell's nonce),
    # or None at its end: frames the code wrote before it pass on with it,
    # for the server to reject. Meanwhile cancel lines for the kid on fd 5
    # are passed on (and _kid_cell passes a SIGINT on).
    import select
    global _buf
    got, fds = b"", [kid[2], _CELL_FD]
    try:
        while not got.endswith(b"\n") or mark not in got:
            ready = select.select(fds, [], [])[0]
            if kid[2] in ready:
                chunk = os.read(kid[2], 65536)
                if not chunk:
                    return None
                got += chunk
            if _CELL_FD in ready:
                chunk = os.read(_CELL_FD, 65536)
                if not chunk:
                    fds = [kid[2]]  # closed: the kid's answer still counts
                _buf += chunk
                _kid_cancels(kid)
    except OSError:
        return None
    return got


def _kid_int(kid):
    try:
        os.killpg(kid[0], _signal.SIGINT)
    except OSError:
        pass


def _kid_cancels(kid):
    global _buf
    while _buf.startswith(b'{"cancel"') and b"\n" in _buf:
        i = _buf.index(b"\n") + 1
        if kid[3] == "node":
            kid[1].sendall(bytes(_buf[:i]))
        _buf = _buf[i:]


def _shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _sh_code(code, env):
    # bash: the cell's variables exported around it and put back after;
    # the code itself in an eval of its own, so that a syntax error in it
    # leaves the putting back to run.
    if not env:
        return code
    pre, post = [], ["__ward_rc=$?"]
    for i, (k, v) in enumerate(env.items()):
        if not k.isidentifier() or not k.isascii():
            raise ValueError("env: %r is not a shell variable name" % k)
        pre.append("__ward_h%d=${%s+1} __ward_o%d=${%s-}; export %s=%s"
                   % (i, k, i, k, k, _shq(v)))
        post.append('if [ -n "$__ward_h%d" ]; then %s=$__ward_o%d; '
                    'else unset %s; fi' % (i, k, i, k))
    post.append('__ward_ret() { return "$1"; }; __ward_ret "$__ward_rc"')
    return "\n".join(pre + ["eval " + _shq(code)] + post)


def _kid_cell(h, m):
    lang, cid = m["lang"], m.get("ctx")
    key = cid if cid is not None else lang
    if "driver" in m:
        _drivers[lang] = m["driver"]
    kid = _kids.get(key)
    if kid is None:
        try:
            kid = _kids[key] = _kid_start(lang, m)
        except OSError as e:
            return _failed(h, "InterpreterStartError",
                           "cannot start %s for this context (in %s): %s"
                           % (m["argv0"], m.get("cwd") or _HOME, e), 126)
    env = m.get("env") or None
    if lang == "node":
        body = m["code"].encode("utf-8", "replace")
        head = ('{"n":%d,"nonce":"%s","timeout_s":%g,"len":%d,"env":%s}\n'
                % (h["n"], h["nonce"], h.get("timeout_s", 0), len(body),
                   _json(env))).encode()
    else:
        try:
            code = _sh_code(m["code"], env)
        except ValueError as e:
            return _failed(h, "ValueError", str(e))
        if not code.endswith("\n"):
            code += "\n"
        body = code.encode("utf-8", "replace")
        head = b"%s %d %g %d\n" % (h["nonce"].encode(), h["n"],
                                   h.get("timeout_s", 0), code.count("\n"))
    _signal.signal(_signal.SIGINT, lambda s, f: _kid_int(kid))
    try:
        kid[1].sendall(head + body)
        line = _kid_line(kid, b'"nonce":"%s"' % h["nonce"].encode())
    except OSError:
        line = None
    finally:
        _signal.signal(_signal.SIGINT, _sigint)
    if line is not None:
        return line
    del _kids[key]
    st = _kid_end(kid)
    code = (128 + os.WTERMSIG(st) if st is not None and os.WIFSIGNALED(st)
            else os.WEXITSTATUS(st) if st is not None else 1)
    return _failed(h, "ContextEnded",
                   "the %s interpreter of this context ended (status %d); "
                   "its state is gone, the next cell starts a new one"
                   % (lang, code), code)


def _command(h, m):
    # /bin/bash -c CMD in a process group of its own, its output the
    # session's; its timeout kills the group; a SIGINT (a cancel) too.
    import subprocess
    frame = {"nonce": h["nonce"], "n": h["n"], "results": [], "error": None,
             "interrupted": False, "exit_code": 0}
    env = dict(os.environ)
    env.update(m.get("env") or {})
    stdin = m.get("stdin")
    group = ({"process_group": 0} if sys.version_info >= (3, 11)
             else {"start_new_session": True})
    try:
        p = subprocess.Popen([m["argv0"], "-c", m["cmd"]], env=env,
                             cwd=m.get("cwd") or _HOME,
                             stdin=(subprocess.DEVNULL if stdin is None
                                    else subprocess.PIPE), **group)
    except OSError as e:
        return _failed(h, "CommandStartError", "cannot run %s in %s: %s"
                       % (m["argv0"], m.get("cwd") or _HOME, e), 126)
    t = h.get("timeout_s", 0) or None
    _in_cell[0] = True
    try:
        p.communicate(None if stdin is None else stdin.encode(), timeout=t)
    except subprocess.TimeoutExpired:
        frame["interrupted"] = True
    except KeyboardInterrupt:
        frame["error"] = {"name": "Cancelled", "value": "the command was "
                          "killed when its request was cancelled",
                          "traceback": ""}
    finally:
        _in_cell[0] = False
        if p.returncode is None:
            try:
                os.killpg(p.pid, _signal.SIGKILL)
            except OSError:
                pass
            p.wait()
    rc = p.returncode
    frame["exit_code"] = rc if rc >= 0 else 128 - rc
    return frame


def _ext(ns, h, body):
    import json
    try:
        m = json.loads(body)
        for cid in m.get("drop") or ():
            _drop(cid)
        sys.stdout.flush()
        sys.stderr.flush()
        if m["op"] == "command":
            frame = _command(h, m)
        elif m["lang"] == "python":
            frame = _py_cell(ns, h, m)
        else:
            frame = _kid_cell(h, m)
    except Exception as e:  # the hub's own bug: the session goes on
        frame = _failed(h, "HubError", "ward's hub failed: %r" % (e,))
    sys.stdout.flush()
    sys.stderr.flush()
    _put(frame)


def _main():
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    # Up: ward ends the start-up's CPU pinning (tracer/output.c) and drops
    # this line; the cells then run with every CPU.
    os.write(_RESULT_FD, b'{"ward":"ready"}\n')
    while True:
        head = _read_line()
        if head is None:
            return
        if head.startswith(b'{"cancel"'):
            continue  # for a js cell that is over (_kid_line)
        h = _head(head)
        code = _read_exact(h["len"])
        if code is None:
            return
        if "x" in h:
            _ext(ns, h, code)
            continue
        results, error, interrupted = _run(ns, h["n"],
                                           code.decode("utf-8", "replace"),
                                           h.get("timeout_s", 0))
        sys.stdout.flush()
        sys.stderr.flush()
        frame = _json({"nonce": h["nonce"], "n": h["n"],
                       "results": results, "error": error,
                       "interrupted": interrupted}) + "\n"
        data = frame.encode("utf-8", "replace")
        while data:
            data = data[os.write(_RESULT_FD, data):]


_main()
