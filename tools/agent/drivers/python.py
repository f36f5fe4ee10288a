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
        _exc[0] = e
        interrupted = _fired[0]
        error = _error(e)
    _in_cell[0] = False
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _figures(results)
    # the main result comes last, as in a notebook
    results.sort(key=lambda r: r["is_main_result"])
    return results, error, interrupted


_exc = [None]  # the exception that ended the last cell


def _main():
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    # Up: ward ends the start-up's CPU pinning (tracer/output.c) and drops
    # this line; the cells then run with every CPU.
    os.write(_RESULT_FD, b'{"ward":"ready"}\n')
    while True:
        head = _read_line()
        if head is None:
            return
        h = _head(head)
        code = _read_exact(h["len"])
        if code is None:
            return
        results, error, interrupted = _run(ns, h["n"],
                                           code.decode("utf-8", "replace"),
                                           h.get("timeout_s", 0))
        sys.stdout.flush()
        sys.stderr.flush()
        frame = {"nonce": h["nonce"], "n": h["n"], "results": results,
                 "error": error, "interrupted": interrupted}
        if isinstance(_exc[0], SystemExit):
            # sys.exit(N) ends the cell, not the session, with N as its
            # exit code, as the interpreter would exit with it
            c = _exc[0].code
            frame["exit_code"] = (0 if c is None else c & 0xff
                                  if isinstance(c, int) else 1)
        _exc[0] = None
        frame = _json(frame) + "\n"
        data = frame.encode("utf-8", "replace")
        while data:
            data = data[os.write(_RESULT_FD, data):]


_main()
