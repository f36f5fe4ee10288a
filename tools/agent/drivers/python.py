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
import _thread
import os
import sys

# Each module the driver imports at start is start-up time of every
# session: the C module _signal instead of signal, and a JSON codec of its
# own for the two shapes it needs instead of json (those bring enum, re
# and contextlib, ~3 ms); no _ast (its ~120 node types take ~2 ms to make:
# _split finds the last expression with compile() alone); traceback,
# types, base64 and io are imported when first needed. Nor is code that
# few cells need compiled at start (the driver comes as -c text, compiled
# anew by every session): rich results and escape lines are _RICH, a
# string compiled when first needed.

_CELL_FD, _RESULT_FD = 5, 6
os.set_inheritable(_CELL_FD, False)
os.set_inheritable(_RESULT_FD, False)
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)
_buf = bytearray()
_wlock = _thread.allocate_lock()  # whole frames on fd 6


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


class _Raw(str):
    # JSON text made by the json module (a result's "json" value)
    __slots__ = ()


def _json(v):
    # JSON text of the result frame: dicts with string keys, lists,
    # strings, integers, booleans and None. Non-ASCII text stays as it is
    # (the frame is sent as UTF-8; a lone surrogate becomes "?").
    if type(v) is _Raw:
        return str(v)
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


# Results as Jupyter makes them: a value's mimebundle (its _repr_*_
# methods, text/plain always), display() as in IPython, and figures. Each
# result is a dict in E2B's shape: one key per MIME type (_KEYS; others in
# "extra") and is_main_result. Methods are looked up on the value's type,
# so an object whose __getattr__ answers every name does not pass for
# rich. A value without them is its repr; the code for the others (and
# for escape lines, below) is _RICH, compiled when a cell first needs it:
# compiling it costs every session's start several ms (the driver comes
# as -c text, never cached), and base64, json, tokenize are imported only
# then, by what needs them.
_REPR_NAMES = ("_repr_mimebundle_", "_repr_html_", "_repr_markdown_",
               "_repr_svg_", "_repr_png_", "_repr_jpeg_", "_repr_pdf_",
               "_repr_latex_", "_repr_json_", "_repr_javascript_")
# A cell's results are part of its frame and of its record: past this
# many bytes, a result is replaced by a note saying what was left out.
_RESULTS_MAX = 32 << 20
_shown = []  # what display() showed while the cell ran, in order
_shown_figs = set()  # the figures rendered in it (ids), not again at its end


def _rich():
    # (an interrupt may stop it halfway: until its last line has run, it
    # runs again when next needed)
    if "_RICH_DONE" not in _DRIVER:
        exec(compile(_RICH, "<ward driver>", "exec"), _DRIVER)


def _result(v):
    # v's result: its formats when it has any, else its repr.
    t, mf = type(v), sys.modules.get("matplotlib.figure")
    if ((mf is None or not isinstance(v, mf.Figure)) and
            not any(getattr(t, n, None) is not None for n in _REPR_NAMES)):
        return {"text": repr(v)}
    _rich()
    return _bundle(v)


def display(*objs, **kwargs):
    """Show each of objs as a result of the running cell, in order, as
    IPython's display(*objs, include=None, exclude=None, raw=False) does
    (raw=True: each is a mimebundle, a dict of MIME type to data). No
    display ids or updates."""
    _rich()
    _display(*objs, **kwargs)


def _ward_display(name):
    # ward_display's attributes other than display, made when first asked
    if name.startswith("__"):
        raise AttributeError(name)
    _rich()
    m = sys.modules["ward_display"]
    del m.__getattr__
    _display_classes(m)
    return getattr(m, name)


def _figures(results):
    # Open pyplot figures at the end of a cell, then closed, as the
    # inline backend shows them: not the ones the cell displayed.
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            if id(fig) not in _shown_figs:
                _rich()
                r = _bundle(fig)
                r["is_main_result"] = False
                results.append(r)
        plt.close("all")
    except Exception as e:  # a broken figure must not end the session
        results.append({"text": "figure not rendered: %r" % (e,),
                        "is_main_result": False})


def _cap(results):
    # Results past _RESULTS_MAX bytes in all become a note.
    used = 0
    for i, r in enumerate(results):
        size = sum(len(v) for v in r.values() if isinstance(v, str))
        size += sum(len(v) for v in r.get("extra", {}).values())
        if used + size > _RESULTS_MAX:
            results[i] = {"text": "ward: a result of %d bytes was left out: "
                          "a cell's results hold at most %d MiB" %
                          (size, _RESULTS_MAX >> 20),
                          "is_main_result": r["is_main_result"]}
            size = 0
        used += size
    return results


def _cell_results(main):
    # display() output and figures in the order they came, the value of
    # the last expression last, as in a notebook.
    results = list(_shown)
    del _shown[:]
    _figures(results)
    _shown_figs.clear()
    if main is not None:
        main["is_main_result"] = True
        results.append(main)
    return _cap(results)


def _display_module():
    m = type(sys)("ward_display")
    m.__doc__ = "display() and IPython.display's simple formats, for ward"
    m.display = display
    m.__getattr__ = _ward_display
    return m


_RICH = r'''
# The parts of the driver compiled when first needed (_rich).
_KEYS = {"text/plain": "text", "text/html": "html",
         "text/markdown": "markdown", "image/svg+xml": "svg",
         "image/png": "png", "image/jpeg": "jpeg", "application/pdf": "pdf",
         "text/latex": "latex", "application/json": "json",
         "application/javascript": "javascript"}
_REPRS = (("_repr_html_", "text/html"), ("_repr_markdown_", "text/markdown"),
          ("_repr_svg_", "image/svg+xml"), ("_repr_png_", "image/png"),
          ("_repr_jpeg_", "image/jpeg"), ("_repr_pdf_", "application/pdf"),
          ("_repr_latex_", "text/latex"),
          ("_repr_json_", "application/json"),
          ("_repr_javascript_", "application/javascript"))
_BINARY = ("image/png", "image/jpeg", "application/pdf")


def _warn(what, e):
    sys.stderr.write("ward: %s failed: %s: %s\n" % (what, type(e).__name__,
                                                     e))


def _mime_value(mime, data):
    # data as the frame carries it for mime, or None (left out): base64
    # for the binary types (bytes, or a str that is base64 already, as
    # IPython takes it), a JSON value for JSON and for other types' dicts
    # and lists, text for the rest; TypeError for data of another kind.
    if isinstance(data, tuple) and len(data) == 2:
        data = data[0]  # (data, metadata)
    if data is None:
        return None
    if mime in _BINARY:
        if isinstance(data, str):
            import base64
            data = "".join(data.split())
            base64.b64decode(data, validate=True)  # else ValueError
            return data
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("%s is not bytes" % type(data).__name__)
        import base64
        return base64.b64encode(data).decode()
    if mime == "application/json" or (mime not in _KEYS and
                                      not isinstance(data, (str, bytes))):
        import json
        if isinstance(data, (str, bytes)):
            data = json.loads(data)
        return _Raw(json.dumps(data, ensure_ascii=False, allow_nan=False))
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    if not isinstance(data, str):
        raise TypeError("%s is not str" % type(data).__name__)
    return data


def _put(out, mime, data, what):
    try:
        v = _mime_value(mime, data)
    except Exception as e:  # a value of the wrong kind: left out
        _warn("%s (%s)" % (what, mime), e)
        return
    if v is None:
        return
    key = _KEYS.get(mime)
    if key:
        out[key] = v
    else:
        out.setdefault("extra", {})[mime] = v


def _figure_png(v):
    # A matplotlib figure's PNG (matplotlib is imported by the code if at
    # all), as IPython's inline backend renders it; else None.
    mf = sys.modules.get("matplotlib.figure")
    if mf is None or not isinstance(v, mf.Figure):
        return None
    import io
    out = io.BytesIO()
    v.savefig(out, format="png")
    _shown_figs.add(id(v))
    return out.getvalue()


def _bundle(v, include=None, exclude=None):
    # v's formats by key: text (repr: its error is the caller's), then
    # each other format v offers; a format whose method fails is left out
    # with a warning on stderr, as IPython does.
    t, fmt = type(v), {}
    if getattr(t, "_ward_no_such_method_", None) is None:
        if getattr(t, "_repr_mimebundle_", None) is not None:
            try:
                b = v._repr_mimebundle_(include=include, exclude=exclude)
                b = b[0] if isinstance(b, tuple) else b
                fmt.update(b if isinstance(b, dict) else {})
            except Exception as e:
                _warn("%s._repr_mimebundle_()" % t.__name__, e)
        for name, mime in _REPRS:
            if mime not in fmt and getattr(t, name, None) is not None:
                try:
                    fmt[mime] = getattr(v, name)()
                except Exception as e:
                    _warn("%s.%s()" % (t.__name__, name), e)
    if "image/png" not in fmt:
        try:
            fmt["image/png"] = _figure_png(v)
        except Exception as e:
            _warn("a figure's PNG", e)
    out = {"text": fmt.pop("text/plain", None)}
    if not isinstance(out["text"], str):
        out["text"] = repr(v)
    for mime, data in fmt.items():
        if ((include is None or mime in include) and
                (exclude is None or mime not in exclude)):
            _put(out, mime, data, "%s's %s" % (t.__name__, mime))
    return out


def _display(*objs, include=None, exclude=None, metadata=None,
             transient=None, display_id=None, raw=False, clear=False,
             **kwargs):
    # display(), with IPython's arguments (those it does not use too)
    for obj in objs:
        if raw:
            r = {}
            for mime, data in dict(obj).items():
                _put(r, mime, data, "display(raw=True)")
        else:
            r = _bundle(obj, include, exclude)
        r["is_main_result"] = False
        _shown.append(r)


def _display_classes(m):
    # ward_display's classes, like IPython.display's (HTML, Markdown, SVG,
    # Latex, JSON, Javascript, Image): each one's value is its data in
    # one format.

    class _Format:
        _mime, _binary = "text/plain", False

        def __init__(self, data=None, url=None, filename=None,
                     metadata=None):
            if filename is not None:
                with open(filename, "rb" if self._binary else "r") as f:
                    data = f.read()
            self.data, self.url, self.metadata = data, url, metadata

        def __repr__(self):
            return "<ward_display.%s object>" % type(self).__name__

        def _repr_mimebundle_(self, include=None, exclude=None):
            return {self._mime: self.data}

    for name, mime in (("HTML", "text/html"), ("Markdown", "text/markdown"),
                       ("SVG", "image/svg+xml"), ("Latex", "text/latex"),
                       ("JSON", "application/json"),
                       ("Javascript", "application/javascript")):
        setattr(m, name, type(name, (_Format,), {"_mime": mime,
                                                 "__module__": m.__name__}))

    class Image(_Format):
        """PNG or JPEG bytes, from data or a file (data may name one)."""
        _binary = True

        def __init__(self, data=None, url=None, filename=None, format=None,
                     **kwargs):
            if isinstance(data, str) and filename is None:
                data, filename = None, data
            super().__init__(data, url, filename)
            head = bytes(self.data or b"")[:4]
            fmt = format or ("jpeg" if head[:2] == b"\xff\xd8" else "png")
            self._mime = "image/jpeg" if fmt in ("jpeg", "jpg") else \
                "image/png"

    Image.__module__ = m.__name__
    m.Image = Image


class UsageError(Exception):
    """A line magic ward does not have (IPython's name for it)."""


def _escape_lines(code):
    # code with its escape lines made calls, line for line (line numbers
    # stay). A line is one when a statement starts with it, not inside a
    # string or brackets: its place is found by tokenizing code with the
    # line as "pass" (tokenize is imported only for such a cell).
    lines = code.split("\n")
    cand = {}
    for i, line in enumerate(lines):
        at = _escape_at(line)
        if at and not (at[2] == "%" and at[3][:1] == "%"):  # not %%cell
            cand[i] = at
    import io
    import tokenize
    probe = list(lines)
    for i, at in cand.items():
        probe[i] = at[0] + "pass"
    starts, prev = set(), tokenize.NEWLINE
    skip = (tokenize.NL, tokenize.COMMENT)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(
                "\n".join(probe) + "\n").readline):
            if tok.type in skip:
                continue
            if (tok.start[0] - 1 in cand and tok.string == "pass" and
                    prev in (tokenize.NEWLINE, tokenize.INDENT,
                             tokenize.DEDENT)):
                starts.add(tok.start[0] - 1)
            prev = tok.type
    except (tokenize.TokenError, SyntaxError):
        return code  # compile() says what is wrong
    for i in starts:
        indent, target, kind, text = cand[i]
        call = "_ward_escape(%r, %r%s)" % (kind, text,
                                            ", True" if target else "")
        lines[i] = indent + (target + " = " if target else "") + call
    return "\n".join(lines)


def _expand(text, frame):
    # IPython's expansion of an escape line in the caller's namespace:
    # {expr} is the expression's value, $name (dotted) a variable's, $$ a
    # $, {{ and }} braces; when any part fails, the line stays as it was
    # (awk '{print $1}', the shell's own $HOME).
    out, i, n = [], 0, len(text)
    g, loc = frame.f_globals, frame.f_locals
    try:
        while i < n:
            c, nxt = text[i], text[i + 1:i + 2]
            if c + nxt in ("$$", "{{", "}}"):
                out.append(c)
                i += 2
            elif c == "$" and (nxt.isalpha() or nxt == "_"):
                j = i + 1
                while j < n and (text[j].isalnum() or text[j] in "_."):
                    j += 1
                out.append(str(eval(text[i + 1:j], g, loc)))
                i = j
            elif c == "{":
                j = text.index("}", i)
                out.append(str(eval(text[i + 1:j], g, loc)))
                i = j + 1
            else:
                out.append(c)
                i += 1
    except Exception:
        return text
    return "".join(out)


def _ward_escape(kind, text, capture=False):
    # What an escape line runs (_escape_lines wrote the call); capture
    # (name = !cmd): the output's lines (stderr too), as a list.
    frame = sys._getframe(1)
    text = _expand(text, frame)
    line = kind + text
    if kind == "%":
        name, _, args = text.partition(" ")
        if name == "matplotlib":
            return  # figures come back inline already (notebooks say so)
        if name != "pip":
            raise UsageError("Line magic function `%%%s` not found (ward "
                             "has %%pip, %%matplotlib and !command lines)."
                             % name)
        import shlex
        argv = [sys.executable, "-m", "pip"] + shlex.split(args)
    else:
        argv = ["/bin/sh", "-c", text]
    import subprocess
    sys.stdout.flush()
    sys.stderr.flush()
    out = subprocess.PIPE if capture else None
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out,
                           stderr=subprocess.STDOUT if capture else None)
        code = p.returncode
    except KeyboardInterrupt as e:
        # the cell's timeout or a cancel (the command is killed): said at
        # the cell's line, not inside subprocess's wait
        raise KeyboardInterrupt(*e.args) from None
    except OSError as e:
        sys.stderr.write("%s: %s: %s\n" % (line, argv[0], e.strerror))
        code, p = 126 if e.errno in (1, 13) else 127, None  # as sh says
        _failed.append({"line": line, "program": argv[0],
                        "exit_code": code})
    else:
        if code == 126:
            _failed.append({"line": line, "exit_code": code})
    frame.f_globals["_exit_code"] = code
    if capture:
        return p.stdout.decode("utf-8", "replace").splitlines() if p else []


sys.modules["builtins"]._ward_escape = _ward_escape
_RICH_DONE = True
'''


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
    _lines()
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


# IPython's line escapes: a line whose statement starts with "!" runs the
# rest with /bin/sh, "%pip ..." runs python3 -m pip; both write to the
# cell's stdout and stderr and set _exit_code, as in IPython. Whether the
# program may run is the policy's: a command that could not start (the
# exec refused: the spawn's error, or the shell's status 126) is listed in
# the frame, and ward names the rule that refused it (session-cell.c).
_sources = {}  # each cell's source by its file name, for tracebacks
_failed = []  # the escapes of the running cell that could not start


def _escape_at(line):
    # (indent, target, kind, text) if line has the form of an escape line
    # ("!cmd", "%magic args", "name = !cmd"), else None
    body = line.lstrip(" \t")
    indent, target = line[:len(line) - len(body)], ""
    if body[:1] not in ("!", "%"):
        left, eq, right = body.partition("=")
        right = right.lstrip(" \t")
        if right[:1] != "!" or right[:2] == "!=" or \
                not left.strip().isidentifier():
            return None
        target, body = left.strip(), right
    return indent, target, body[0], body[1:].strip()


def _escapes(code):
    for line in code.split("\n"):
        if _escape_at(line):
            _rich()
            return _escape_lines(code)
    return code


def _lines():
    # The cells' sources where traceback finds lines (linecache, once it
    # is imported: not at start), so a traceback shows the cell's line.
    lc = sys.modules.get("linecache")
    if lc is not None:
        for name, src in _sources.items():
            if name not in lc.cache:
                lc.cache[name] = (len(src), None,
                                  src.splitlines(True), name)


def _run(ns, n, code, timeout):
    results, error, interrupted = [], None, False
    name = "<cell %d>" % n
    _sources[name] = code
    _lines()
    del _failed[:]
    main = None
    _fired[0] = False
    _signal.signal(_signal.SIGALRM, _alarm)
    try:
        code, evaled = _split(_escapes(code), name)
        _in_cell[0] = True
        if timeout > 0:
            _signal.setitimer(_signal.ITIMER_REAL, timeout)
        _go(code, ns)
        value = _go(evaled, ns) if evaled is not None else None
        main = _result(value) if value is not None else None
        _in_cell[0] = False
        if value is not None:
            ns["_"] = value
    except BaseException as e:
        _in_cell[0] = False
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _exc[0] = e
        interrupted = _fired[0]
        error = _error(e)
    _in_cell[0] = False
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    results = _cell_results(main)
    return results, error, interrupted


_exc = [None]  # the exception that ended the last cell


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


def _send_frame(frame):
    data = (frame if isinstance(frame, bytes) else
            (_json(frame) + "\n").encode("utf-8", "replace"))
    with _wlock:  # the commands' threads write frames too
        while data:
            data = data[os.write(_RESULT_FD, data):]


def _fail_frame(h, name, value, code=1):
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
    return _cell_frame(h, results, error, interrupted)


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
    # Its group killed (an ended kid's group too: until reaped it is
    # still the run's), unless it is reaped already; then its status.
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
            return _fail_frame(h, "InterpreterStartError",
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
            return _fail_frame(h, "ValueError", str(e))
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
    return _fail_frame(h, "ContextEnded",
                   "the %s interpreter of this context ended (status %d); "
                   "its state is gone, the next cell starts a new one"
                   % (lang, code), code)


# Commands run beside the cells: ward sends one as a frame whose header has
# "cmd" (its id), read by _reader, a thread of its own that reads fd 5 all
# the time and passes every other frame on to the main thread through a
# pipe (the cells' _CELL_FD), so a command starts, and is killed, while a
# cell runs. Each command is /bin/bash -c CMD in a process group of its
# own, with pipes of its own: its output leaves as frames tagged with its
# id ({"cmd", "nonce", "s": 1|2, "d": base64}), its pid first, its end
# last (a result frame with "cmd"), never on the session's stdout, so that
# it is not mixed into a cell's output. Frames on fd 6 are whole lines
# under _wlock; a reader that falls behind holds the commands back (their
# pipes fill), never the cells' frames, which ward reads as they come.
_cmds = {}     # a running command's id -> its process
_killed = set()  # ids killed before their process was there
_ended = set()  # ids killed because the session ended (fd 5's EOF)
_clock = _thread.allocate_lock()  # _cmds and _killed


def _quiet(how=_signal.SIG_BLOCK):
    # A thread of the hub's own: the signals for the cells (SIGINT, the
    # cell's SIGALRM) go to the main thread, whose blocking calls they
    # must interrupt. (A thread starts with its maker's mask, and a
    # command with its thread's: unblocked around its start.)
    _signal.pthread_sigmask(how, {_signal.SIGINT, _signal.SIGALRM})


def _cmd_frame(h, **kv):
    f = {"cmd": int(h["cmd"]), "nonce": h["nonce"], "n": h["n"]}
    f.update(kv)
    _send_frame(f)


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _cmd_feed(w, data):
    _quiet()
    try:
        _write_all(w, data)
    except OSError:
        pass
    os.close(w)


def _cmd_out(h, p, deadline):
    # Relays the command's pipes until both end; kills its group at its
    # deadline (True then).
    import base64
    import select
    import time
    fds, over = {p.stdout.fileno(): 1, p.stderr.fileno(): 2}, False
    while fds:
        left = None if deadline is None or over else deadline - time.monotonic()
        if left is not None and left <= 0:
            over = True
            _cmd_kill(p.pid)
            continue
        for fd in select.select(list(fds), [], [], left)[0]:
            d = os.read(fd, 65536)
            if not d:
                del fds[fd]
                continue
            _cmd_frame(h, s=fds[fd], d=base64.b64encode(d).decode())
    return over


def _cmd_kill(pid):
    try:
        os.killpg(pid, _signal.SIGKILL)
    except OSError:
        pass


def _cmd_run(h, m):
    import subprocess
    import time
    cid = int(h["cmd"])
    env = dict(os.environ)
    env.update(m.get("env") or {})
    stdin = m.get("stdin")
    group = ({"process_group": 0} if sys.version_info >= (3, 11)
             else {"start_new_session": True})
    _quiet(_signal.SIG_UNBLOCK)
    try:
        p = subprocess.Popen([m["argv0"], "-c", m["cmd"]], env=env,
                             cwd=m.get("cwd") or _HOME,
                             stdin=(subprocess.DEVNULL if stdin is None
                                    else subprocess.PIPE),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             **group)
    except OSError as e:
        f = _fail_frame(h, "CommandStartError", "cannot run %s in %s: %s"
                        % (m["argv0"], m.get("cwd") or _HOME, e), 126)
        f["cmd"] = cid
        _send_frame(f)
        return
    finally:
        _quiet()
    with _clock:
        _cmds[cid] = p
        if cid in _killed:
            _cmd_kill(p.pid)
    _cmd_frame(h, pid=p.pid)
    if stdin is not None:
        fd = os.dup(p.stdin.fileno())
        p.stdin.close()
        _thread.start_new_thread(_cmd_feed, (fd, stdin.encode()))
    t = h.get("timeout_s", 0)
    over = _cmd_out(h, p, time.monotonic() + t if t > 0 else None)
    rc = p.wait()
    with _clock:
        _cmds.pop(cid, None)
        _killed.discard(cid)
        ended = cid in _ended
    _cmd_frame(h, results=[], error=None, interrupted=over,
               exit_code=rc if rc >= 0 else 128 - rc, end=True,
               session_end=ended)


def _cmd_op(h, body):
    import json
    try:
        m = json.loads(body)
        if m["op"] == "kill":
            with _clock:
                p = _cmds.get(int(h["cmd"]))
                if p is None:
                    _killed.add(int(h["cmd"]))
            if p is not None:
                _cmd_kill(p.pid)
        else:
            _thread.start_new_thread(_cmd_run, (h, m))
    except Exception as e:  # the hub's own bug: the session goes on
        f = _fail_frame(h, "HubError", "ward's hub failed: %r" % (e,))
        f["cmd"] = int(h.get("cmd", 0))
        _thread.start_new_thread(_send_frame, (f,))


def _reader(fd, to):
    # fd 5 to the end: command frames handled here, the rest passed on to
    # the main thread as they came (on the pipe to); at its end, the
    # commands are killed and the main thread gets EOF.
    _quiet()
    buf = bytearray()
    try:
        while True:
            while b"\n" not in buf:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                buf += chunk
            i = buf.index(b"\n") + 1
            line, buf = bytes(buf[:i]), buf[i:]
            if line.startswith(b'{"cancel"'):
                _write_all(to, line)
                continue
            try:
                h = _head(line)
            except Exception:  # not ward's header: the main thread's
                _write_all(to, line)
                continue
            while len(buf) < h["len"]:
                chunk = os.read(fd, max(65536, h["len"] - len(buf)))
                if not chunk:
                    return
                buf += chunk
            body, buf = bytes(buf[:h["len"]]), buf[h["len"]:]
            if "cmd" in h:
                _cmd_op(h, body)
            else:
                _write_all(to, line + body)
    finally:
        with _clock:
            for cid, p in _cmds.items():
                _ended.add(cid)
                _cmd_kill(p.pid)
        os.close(to)


def _script(m):
    # ward batch --pool (tools/agent/session-script.c): the code run as
    # `python3 NAME ARGS...` runs it (a __main__ of its own, sys.argv,
    # stdin, its traceback and exit status), then this interpreter ends
    # with that status, which is the run's. No frame answers it.
    os.close(_CELL_FD)
    os.close(_RESULT_FD)
    if m.get("stdin") is not None:
        data, fd = m["stdin"].encode("utf-8", "surrogatepass"), \
            os.memfd_create("stdin", os.MFD_CLOEXEC)
        while data:
            data = data[os.write(fd, data):]
        os.lseek(fd, 0, 0)
        os.dup2(fd, 0)
        os.close(fd)
    import builtins
    del builtins.display
    sys.modules.pop("ward_display", None)
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGALRM, _signal.SIG_DFL)
    sys.stdout.reconfigure(line_buffering=False)
    sys.stderr.reconfigure(line_buffering=False)
    path = os.path.abspath(m["name"])
    sys.argv[:] = [m["name"]] + list(m.get("args") or ())
    sys.path[0] = os.path.dirname(path)
    main = type(sys)("__main__")
    main.__file__, main.__cached__ = path, None
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    try:
        exec(compile(m["code"], path, "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__  # from the code's first frame on
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        if isinstance(e, KeyboardInterrupt):  # as python3 ends then
            sys.stdout.flush()
            _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
            os.kill(os.getpid(), _signal.SIGINT)
        raise SystemExit(1)
    raise SystemExit(0)


def _ext(ns, h, body):
    import json
    if body.startswith(b'{"op":"script",'):  # ward's own frame: no answer
        _script(json.loads(body))
    try:
        m = json.loads(body)
        for cid in m.get("drop") or ():
            _drop(cid)
        sys.stdout.flush()
        sys.stderr.flush()
        if m["lang"] == "python":
            frame = _py_cell(ns, h, m)
        else:
            frame = _kid_cell(h, m)
    except Exception as e:  # the hub's own bug: the session goes on
        frame = _fail_frame(h, "HubError", "ward's hub failed: %r" % (e,))
    sys.stdout.flush()
    sys.stderr.flush()
    _send_frame(frame)


def _cell_frame(h, results, error, interrupted):
    # A python cell's result frame: with the exit code sys.exit gave and
    # the escape lines that could not start.
    frame = {"nonce": h["nonce"], "n": h["n"], "results": results,
             "error": error, "interrupted": interrupted}
    if isinstance(_exc[0], SystemExit):
        # sys.exit(N) ends the cell, not the session, with N as its
        # exit code, as the interpreter would exit with it
        c = _exc[0].code
        frame["exit_code"] = (0 if c is None else c & 0xff
                              if isinstance(c, int) else 1)
    _exc[0] = None
    if _failed:
        frame["shell_failed"] = list(_failed)
    return frame


def _main():
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.modules["ward_display"] = _display_module()
    sys.modules["builtins"].display = display
    # Up: ward ends the start-up's CPU pinning (tracer/output.c) and drops
    # this line; the cells then run with every CPU.
    os.write(_RESULT_FD, b'{"ward":"ready"}\n')
    global _CELL_FD
    r, w = os.pipe2(os.O_CLOEXEC)
    _thread.start_new_thread(_reader, (_CELL_FD, w))
    _CELL_FD = r
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
        _send_frame(_cell_frame(h, results, error, interrupted))


# ---- the zygote (tracer/zygote.c; docs/performance.md) ----
# With WARD_ZYGOTE=template this interpreter is a template: it runs ward's
# warm-up (WARD_ZYGOTE_WARMUP), says so ({"ward":"ready"} on fd 6, then 'R'
# on fd 5), and then forks a sandbox for each request on fd 5 (a unix
# socket to ward's broker): one byte 'F' with 5 fds (the run's stdout,
# stderr and sync pipe, the cell socket, the result pipe); it answers 'K'
# (forked) or 'E'. The fork, handed off to its own supervisor before it
# runs, makes its sandbox with the calls below, which ward checks one by
# one, in this order; then it is a session driver like any other.

_ZYG_UNSHARE = 0x7E020000  # TRACER_ZYGOTE_UNSHARE: user mnt pid net ipc uts cgroup
# tracer_zygote_filter (tracer/zygote.c), instruction for instruction:
# kill unshare, seccomp and prctl(PR_SET_SECCOMP), and foreign ABIs
_ZYG_FILTER = ((0x20, 0, 0, 4), (0x15, 0, 8, 0xc000003e), (0x20, 0, 0, 0),
               (0x35, 6, 0, 0x40000000), (0x15, 5, 0, 272),
               (0x15, 4, 0, 317), (0x15, 0, 2, 157), (0x20, 0, 0, 16),
               (0x15, 1, 0, 22), (0x06, 0, 0, 0x7fff0000),
               (0x06, 0, 0, 0x80000000))


def _zyg_calls():
    # Made in the template: the fork only calls them (no allocation of
    # ctypes objects between its hand-off and its set-up).
    import ctypes
    import socket
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    sc = libc.syscall
    sc.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(
        b"".join(struct.pack("=HBBI", *i) for i in _ZYG_FILTER))

    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    prog = _Fprog(len(_ZYG_FILTER), ctypes.addressof(buf))
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # capability version 3
    none = (ctypes.c_uint32 * 6)()
    L = ctypes.c_long
    return (lambda: sc(L(272), L(_ZYG_UNSHARE)),
            lambda: sc(L(126), ctypes.byref(hdr), ctypes.byref(none)),
            lambda fd: sc(L(446), L(fd), L(0)),  # landlock_restrict_self
            lambda: sc(L(157), L(22), L(2), ctypes.byref(prog), L(0), L(0)),
            socket.socket, socket.recv_fds, (buf, prog, hdr, none))


def _zyg_wait(kid, reap_all):
    # A and B: ward's, detached once their child exists; they wait for it
    # and end with it (B, pid 1, reaps the orphans too).
    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        _signal.signal(sig, _signal.SIG_DFL)
    os.close(7)
    while True:
        try:
            pid, st = os.waitpid(-1 if reap_all else kid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == kid:
            os._exit(os.waitstatus_to_exitcode(st) & 0xff)


def _zyg_child(fds, calls):
    # The fork, untraced until its supervisor seizes it (its trapped calls
    # fail with ENOSYS till then): ward's fds in place, nothing else open.
    hi = [os.dup(fd) for fd in fds]
    for src, dst in zip(hi, (1, 2, 7, 5, 6)):
        os.dup2(src, dst)
    os.closerange(3, 5)
    os.closerange(8, 1 << 20)
    os.set_inheritable(5, False)
    os.set_inheritable(6, False)
    go = b""
    while len(go) < 2:  # seized, then recorded ('g'); EOF: no run
        b = os.read(7, 2 - len(go))
        if not b:
            os._exit(127)
        go += b
    if go[1:] != b"g":
        os._exit(127)
    unshare, capset, restrict, seccomp, sock, recv_fds, _ = calls
    if unshare() != 0 or capset() != 0:
        os._exit(127)
    kid = os.fork()
    if kid:
        _zyg_wait(kid, False)  # A
    kid = os.fork()
    if kid:
        _zyg_wait(kid, True)  # B, pid 1 of the sandbox's pid namespace
    # C: the code's process: its Landlock domain (the ruleset ward made
    # in its own mount namespace) and its filter, then its own session,
    # workdir (the cwd it inherited is the template's, "/") and random
    # state.
    s = sock(fileno=7)
    msg, got, _, _ = recv_fds(s, 1, 1)
    s.detach()
    os.close(7)
    if msg == b"L" and len(got) == 1:
        if restrict(got[0]) != 0:
            os._exit(127)
        os.close(got[0])
    elif msg != b"N":
        os._exit(127)
    if seccomp() != 0:
        os._exit(127)
    os.setsid()
    os.chdir(os.environ.get("HOME") or "/")
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed()


def _template_main():
    import gc
    import socket
    warm = os.environ.pop("WARD_ZYGOTE_WARMUP", "")
    os.environ.pop("WARD_ZYGOTE", None)
    # its forks leave the template's workdir (never theirs) at once
    os.chdir("/")
    exec(compile(warm, "<ward warm-up>", "exec"), {"__name__": "__ward__"})
    calls = _zyg_calls()
    gc.collect()
    gc.freeze()  # the warm objects stay shared with the forks
    sys.stdout.flush()
    sys.stderr.flush()
    ctl = socket.socket(fileno=_CELL_FD)
    os.write(_RESULT_FD, b'{"ward":"ready"}\n')
    os.write(_RESULT_FD, b'{"ward":"ready","zygote":"template"}\n')
    ctl.sendall(b"R")
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 1, 8)
        except InterruptedError:
            continue
        if not msg:
            os._exit(0)
        kid = -1
        if msg == b"F" and len(fds) == 5:
            try:
                kid = os.fork()
            except OSError:
                kid = -1
            if kid == 0:
                ctl.detach()
                _zyg_child(fds, calls)
                return _main()
        for fd in fds:
            os.close(fd)
        ctl.sendall(b"K" if kid > 0 else b"E")
        while True:  # the forks' A processes that ended
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


if os.environ.get("WARD_ZYGOTE") == "template":
    _template_main()
else:
    _main()
