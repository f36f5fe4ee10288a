"""ward report: one run as a self-contained HTML page or as text; escaping
of what the run wrote; denials by rule with symbolized frames; bad input
(exit 125); and the page in a real browser: headless Chromium over the
DevTools protocol (--remote-debugging-pipe), with no console errors, no
network requests and a screenshot that shows the page."""
import json
import os
import re
import select
import shutil
import signal
import sqlite3
import struct
import subprocess
import time
import zlib

import wardtest

# Output with markup, quotes and bytes that are not UTF-8; a path with them
# too; a denial (with its backtrace); a file written in the workdir.
NASTY = r'''
import os, sys
sys.stdout.write('<script>alert("out")</script> \'single\' & "double"\n')
sys.stdout.flush()
sys.stdout.buffer.write(b"bad bytes \xff\xfe\xc3( end\n\x1b[31mred\xe2\x80\xae\n")
sys.stdout.flush()
name = '<script>"q\'&.txt'
open(name, 'w').write('made by the run\n')
def steal():
    return open('/etc/shadow').read()
try:
    steal()
except OSError as e:
    print('denied:', e.errno)
try:
    open(os.fsdecode(b'/etc/<img src=x onerror=alert(2)>\xff'), 'rb')
except OSError:
    pass
'''


def _nasty_run(ctx):
    r = ctx.run(NASTY, text=False)
    assert r.code == 0, r
    return ctx.last_run()["id"]


def _report(ctx, *args):
    return ctx.ward("report", "--db", ctx.db, *args)


def test_html_escapes_everything_the_run_wrote(ctx):
    run_id = _nasty_run(ctx)
    out = ctx.path("r.html")
    r = _report(ctx, run_id, "-o", out)
    assert r.code == 0 and r.stdout == "", r
    assert oct(os.stat(out).st_mode & 0o777) == "0o600"
    raw = open(out, "rb").read()
    raw.decode("utf-8")  # the page is valid UTF-8, whatever the run wrote
    page = raw.decode()
    # nothing the run wrote became markup
    assert "<script" not in page.lower(), "a script element"
    assert "<img" not in page.lower(), "an img element"
    assert "&lt;script&gt;alert(&quot;out&quot;)&lt;/script&gt;" in page
    assert "&#39;single&#39; &amp; &quot;double&quot;" in page
    assert "&lt;script&gt;&quot;q&#39;&amp;.txt" in page
    # bytes that are not UTF-8, controls and a bidi override: shown escaped
    assert 'bad bytes <span class="bad">\\xff</span><span class="bad">\\xfe</span>' in page
    assert '<span class="esc">\\x1b</span>[31mred<span class="esc">\\u{202e}</span>' in page
    # self-contained: a strict CSP, no script, nothing fetched
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert csp and "default-src 'none'" in csp.group(1), page[:600]
    assert re.search(r"style-src 'sha256-[A-Za-z0-9+/=]+'", csp.group(1)), csp.group(1)
    assert not re.search(r'\s(src|href)="(?!#)', page), "an external reference"
    assert "http://" not in page and "https://" not in page
    # the sections
    for sec in ("verdict", "code", "processes", "timeline", "denials",
                "files", "network", "limits"):
        assert f'<section id="{sec}">' in page, sec


def test_denials_grouped_by_rule_with_symbolized_frames(ctx):
    code = ("import socket\n"
            "for i in range(3):\n"
            "    try: open('/etc/shadow')\n"
            "    except OSError: pass\n"
            "s = socket.socket()\n"
            "try: s.connect(('192.0.2.1', 80))\n"
            "except OSError: pass\n")
    r = ctx.run(code)
    assert r.code == 0, r
    run_id = ctx.last_run()["id"]
    r = _report(ctx, run_id, "--format", "text")
    assert r.code == 0, r
    text = r.stdout
    den = text.split("== Denials by rule ==", 1)[1].split("\n== ", 1)[0]
    groups = re.findall(r"^-- rule (\S+) --\n  (\d+) calls?:", den, re.M)
    assert ("secret-shadow", "3") in groups, groups
    assert ("default", "1") in groups, groups
    shadow = den.split("-- rule secret-shadow --", 1)[1].split("-- rule ", 1)[0]
    assert "errno         EACCES (13)" in shadow, shadow
    assert "target        /etc/shadow" in shadow
    # symbolized from libc's symbol table: the open wrapper, innermost
    assert re.search(r"#0  libc\.so\.6 __(libc_)?open(64)?(_nocancel)?\+0x[0-9a-f]+  \(/", shadow), shadow
    assert "function names from the module files as they are now" in shadow
    # the Python frame that made the call (read from the interpreter)
    if ctx.sql("select count(*) n from events where run_id=? and pyframes is not null",
               run_id)[0]["n"]:
        assert "Python frames" in shadow and "untrusted" in shadow, shadow
        assert re.search(r"<string>:3 in <module>", shadow), shadow
    # the HTML has the same groups
    page = _report(ctx, run_id).stdout
    assert "<h3>rule secret-shadow</h3>" in page and "<h3>rule default</h3>" in page
    assert re.search(r"<li>libc\.so\.6 __(libc_)?open", page), "a symbolized frame"
    # network attempts with their decision
    net = text.split("== Network attempts ==", 1)[1].split("== ", 1)[0]
    assert re.search(r"connect \| 192\.0\.2\.1:80 \| deny \| ECONNREFUSED|connect \| 192\.0\.2\.1:80 \| deny \| E", net), net


def test_text_form_has_every_section(ctx):
    run_id = _nasty_run(ctx)
    r = _report(ctx, run_id[:6], "--format", "text")
    assert r.code == 0, r
    t = r.stdout
    assert "\x1b" not in t, "escape sequences in text not written to a tty"
    assert t.startswith(f"ward report: run {run_id}\n"), t[:200]
    for sec in ("Verdict", "Code", "Process tree", "Timeline", "Denials by rule",
                "Files", "Network attempts", "Limits and timings"):
        assert f"\n== {sec} ==\n" in t, sec
    assert "  status        ok with denials, exit 0; 2 denied\n" in t, t[:800]
    assert "  policy        default, sha256 " in t
    assert re.search(r"^  layers        seccomp on: ", t, re.M), t[:2000]
    # the escaping of a terminal: invalid bytes and controls as \xNN
    assert "bad bytes \\xff\\xfe\\xc3( end" in t, t
    assert "\\x1b[31mred\\u{202e}" in t
    # the file the run created: its hash, recorded at the end of ward run
    want = ctx.sql("select path, sha256 from artifacts where run_id=?", run_id)
    assert [a["path"] for a in want] == ['<script>"q\'&.txt'], want
    import hashlib
    assert want[0]["sha256"] == hashlib.sha256(b"made by the run\n").hexdigest()
    files = t.split("== Files ==", 1)[1]
    assert f"created, written | 1 | 0 | 16 | {want[0]['sha256']}" in files, files
    assert "/etc/shadow | 1 | 1" in files.split("-- Read --", 1)[1], files
    assert "limit         wall_ms = " in t


def test_session_report_groups_by_cell(ctx):
    p = wardtest.spawn([wardtest.ward_bin(), "serve", "--db", ctx.db],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, cwd=ctx.tmp)
    try:
        def call(i, method, **params):
            p.stdin.write(json.dumps({"id": i, "method": method, "params": params}) + "\n")
            p.stdin.flush()
            while True:
                line = p.stdout.readline()
                assert line, p.stderr.read()[-2000:]
                m = json.loads(line)
                if "event" not in m and m.get("id") == i:
                    assert "result" in m, m
                    return m["result"]
        sid = call(1, "session.create", language="python")["session_id"]
        call(2, "run", session_id=sid, code="open('a.txt','w').write('one')\nprint('cell one')")
        call(3, "run", session_id=sid, code="try: open('/etc/shadow')\nexcept OSError: print('no')")
        call(4, "session.close", session_id=sid)
    finally:
        p.stdin.close()
        p.wait(60)
    r = _report(ctx, "last", "--format", "text")
    assert r.code == 0, r
    t = r.stdout
    assert "== Code (cells of the session) ==" in t, t[:1500]
    assert re.search(r"^-- cell 1: ok, ", t, re.M) and re.search(r"^-- cell 2: ok, ", t, re.M), t
    tl = t.split("== Timeline ==", 1)[1].split("\n== ", 1)[0]
    c1, c2 = tl.index("\n  cell 1\n"), tl.index("\n  cell 2\n")
    assert c1 < tl.index("cell one") < c2 < tl.index("DENY | openat /etc/shadow"), tl
    den = t.split("== Denials by rule ==", 1)[1]
    assert "[1] cell 2 DENY openat" in den, den
    files = t.split("== Files ==", 1)[1]
    assert re.search(r"^  1 \| a\.txt \| 3 \| [0-9a-f]{64}$", files, re.M), files


def test_bad_input_exits_125(ctx):
    assert ctx.run("print(1)").code == 0
    r = _report(ctx, "0123456789abcdef")
    assert r.code == 125 and "no run matches '0123456789abcdef'" in r.stderr, r
    assert ctx.path("audit.db") in r.stderr
    r = _report(ctx, "last", "--format", "pdf")
    assert r.code == 125 and "--format pdf: give html or text" in r.stderr, r
    r = _report(ctx)
    assert r.code == 125 and "which run?" in r.stderr, r
    # -o where nothing can be written: the path in the message, no file
    bad = ctx.path("no-such-dir", "r.html")
    r = _report(ctx, "last", "-o", bad)
    assert r.code == 125 and f"cannot write {bad}" in r.stderr, r
    assert not os.path.exists(os.path.dirname(bad))
    # a corrupt database, and a SQLite file that is not ward's
    corrupt = ctx.path("corrupt.db")
    with open(corrupt, "wb") as f:
        f.write(b"SQLite format 3\x00" + os.urandom(4096))
    r = ctx.ward("report", "--db", corrupt, "last")
    assert r.code == 125 and "corrupt.db" in r.stderr and r.stdout == "", r
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.commit()
    con.close()
    r = ctx.ward("report", "--db", foreign, "last")
    assert r.code == 125 and "foreign.db" in r.stderr and "ward" in r.stderr, r
    r = ctx.ward("report", "--help")
    assert r.code == 0 and r.stdout.startswith("usage: ward report RUN"), r


def test_huge_run_is_bounded(ctx):
    code = ("import os\n"
            "for i in range(3000):\n"
            "    open('f%d' % (i % 10), 'w').close()\n"
            "    print('line', i, flush=True)\n")
    r = ctx.run(code)
    assert r.code == 0, r
    r = _report(ctx, "last", "--format", "text")
    assert r.code == 0, r
    tl = r.stdout.split("== Timeline ==", 1)[1].split("\n== ", 1)[0]
    m = re.search(r"\.\.\. (\d+) items left out here: (.*); see `ward show", tl)
    assert m, tl[:3000]
    assert "allowed calls" in m.group(2) and "stdout chunks" in m.group(2), m.group(2)
    assert len([l for l in tl.splitlines() if re.match(r"  [+-]\d", l)]) == 500
    # the last items are shown: the run's last output chunk is there (a
    # slow run merges lines into chunks, and a long chunk is cut, so look
    # for its beginning rather than for "line 2999")
    run_id = ctx.last_run()["id"]
    last = ctx.sql("select data from outputs where run_id = ? order by seq desc limit 1",
                   run_id)[0]["data"]
    assert last.endswith(b"line 2999\n"), last[-40:]
    assert last[:20].decode().replace("\n", "\\n") in tl, "the last items are shown"
    page = _report(ctx, "last").stdout
    assert len(page) < 2_000_000, len(page)


# ------------------------------- the browser -------------------------------

CHROMIUM = "/usr/bin/chromium"


class DevTools:
    """The DevTools protocol over --remote-debugging-pipe: JSON messages,
    each ended by a NUL byte; commands on the browser's fd 3, replies and
    events on its fd 4."""

    def __init__(self, argv, log):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():
            # move the pipe ends to 3 and 4 (dup2 clears close-on-exec)
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=log, preexec_fn=fds, pass_fds=(3, 4),
                                     start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.to_w, data):]
        return self.next_id

    def read(self, timeout):
        end = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                return None
            chunk = os.read(self.from_r, 65536)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, timeout=30, **params):
        i = self.send(method, session, **params)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = self.read(end - time.monotonic())
            if m is None:
                break
            if m.get("id") == i:
                if "error" in m:
                    raise AssertionError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)
        raise AssertionError(f"{method}: no reply in {timeout}s")

    def wait_event(self, method, timeout):
        end = time.monotonic() + timeout
        for m in self.events:
            if m.get("method") == method:
                return m
        while time.monotonic() < end:
            m = self.read(end - time.monotonic())
            if m is None:
                break
            self.events.append(m)
            if m.get("method") == method:
                return m
        return None

    def drain(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            m = self.read(end - time.monotonic())
            if m is None:
                return
            self.events.append(m)

    def close(self):
        try:
            if self.proc.poll() is None:
                self.send("Browser.close")
                self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        # the browser and every helper process it started
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self.to_w, self.from_r):
            try:
                os.close(fd)
            except OSError:
                pass


def _png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0], \
            f"bad CRC in {kind}"
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    assert w, "no IHDR"
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def load_in_chromium(ctx, page, expressions):
    """Loads the file page in headless Chromium, offline (any request past
    the page would fail), and evaluates each JavaScript expression there.
    Returns (errors, requests, {expression: value}, screenshot PNG bytes,
    screenshot path). Skips when Chromium is not installed; no browser
    process is left."""
    if not os.path.exists(CHROMIUM):
        raise wardtest.Skip("chromium is not installed (Debian: apt-get install chromium, "
                            "or tools/install-deps)")
    url = "file://" + page
    profile = ctx.path("chromium-profile")
    argv = [CHROMIUM, "--headless=new", "--remote-debugging-pipe",
            "--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
            "--disable-gpu", "--disable-extensions", "--disable-sync",
            "--disable-background-networking", "--disable-component-update",
            "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
            # any request that got past the page would fail, not leave the host
            "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1280,1600", "about:blank"]
    if os.geteuid() == 0:
        argv.insert(1, "--no-sandbox")
    shot = ctx.path("report.png")
    log = open(ctx.path("chromium.log"), "wb")
    dt = DevTools(argv, log)
    values = {}
    try:
        try:
            targets = dt.call("Target.getTargets")["targetInfos"]
            pages = [t for t in targets if t["type"] == "page"]
            tid = pages[0]["targetId"] if pages else \
                dt.call("Target.createTarget", url="about:blank")["targetId"]
            sid = dt.call("Target.attachToTarget", targetId=tid, flatten=True)["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                dt.call(domain + ".enable", sid)
            dt.events.clear()
            dt.call("Page.navigate", sid, url=url)
            assert dt.wait_event("Page.loadEventFired", 30), "the page did not load"
            dt.drain(0.5)
            png = __import__("base64").b64decode(
                dt.call("Page.captureScreenshot", sid, format="png")["data"])
            with open(shot, "wb") as f:
                f.write(png)
            for e in expressions:
                r = dt.call("Runtime.evaluate", sid, expression=e, returnByValue=True)
                values[e] = r["result"].get("value")
        except Exception:
            log.flush()
            print("chromium log:", ctx.path("chromium.log"))
            raise
        errors = []
        requests = []
        for m in dt.events:
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("text"))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(p.get("args"))
            elif meth == "Log.entryAdded" and p["entry"].get("level") == "error":
                errors.append(p["entry"].get("text"))
            elif meth == "Network.requestWillBeSent":
                requests.append(p["request"]["url"])
    finally:
        dt.close()
        log.close()
        assert wardtest.wait_until(lambda: not wardtest.pids_matching(profile), 10), \
            f"chromium processes left: {wardtest.pids_matching(profile)}"
    return errors, requests, values, png, shot


def test_chromium_loads_the_page_offline_without_errors(ctx):
    run_id = _nasty_run(ctx)
    page = ctx.path("report.html")
    r = _report(ctx, run_id, "-o", page)
    assert r.code == 0, r
    url = "file://" + page
    title_e = "document.title"
    scripts_e = "document.scripts.length + document.images.length"
    sections_e = "document.querySelectorAll('section').length"
    errors, requests, v, png, shot = load_in_chromium(ctx, page,
                                                      [title_e, scripts_e, sections_e])
    assert not errors, f"console errors: {errors} (screenshot {shot})"
    assert requests == [url], f"requests: {requests} (screenshot {shot})"
    assert v[title_e] == f"ward report {run_id}", v
    assert v[scripts_e] == 0, "a script or image in the page"
    assert v[sections_e] == 8, v
    # a real screenshot of the page: a PNG of the window's size, not blank
    try:
        w, h, bpp, rows = _png_pixels(png)
        assert (w, h) == (1280, 1600) or (w >= 800 and h >= 600), (w, h)
        assert len(png) > 20000, len(png)
        bg = rows[h - 1][:bpp]
        colours, ink = set(), 0
        for y in range(0, h, 4):
            row = rows[y]
            for x in range(0, w * bpp, bpp * 4):
                px = row[x:x + bpp]
                colours.add(px)
                ink += px != bg
        assert len(colours) > 16, f"{len(colours)} colours"
        assert ink > (w // 4) * (h // 4) // 50, f"{ink} non-background pixels"
    except AssertionError as e:
        raise AssertionError(f"{e} (screenshot {shot})")


def test_ward_run_hashes_the_files_it_created_or_changed(ctx):
    import hashlib
    os.chmod(ctx.tmp, 0o755)
    wd = ctx.path("wd")
    os.makedirs(wd)
    for name, text in (("keep.txt", "same\n"), ("edit.txt", "old\n")):
        with open(os.path.join(wd, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(wd, name), 0o666)
    os.chmod(wd, 0o777)
    code = ("import os\n"
            "open('edit.txt', 'a').write('new\\n')\n"
            "os.makedirs('out', exist_ok=True)\n"
            "open('out/data.bin', 'wb').write(bytes(range(256)))\n"
            "open('tmp/scratch', 'w').write('not an artifact')\n"
            "os.symlink('/etc/passwd', 'link')\n")
    r = ctx.run(code, "--workdir", wd)
    assert r.code == 0, r
    run_id = ctx.last_run()["id"]
    arts = {a["path"]: a for a in ctx.sql(
        "select cell, path, size, sha256 from artifacts where run_id=?", run_id)}
    assert set(arts) == {"edit.txt", "out/data.bin"}, arts
    assert all(a["cell"] == 0 for a in arts.values())
    assert arts["out/data.bin"]["sha256"] == hashlib.sha256(bytes(range(256))).hexdigest()
    assert arts["edit.txt"]["size"] == 8
    assert arts["edit.txt"]["sha256"] == hashlib.sha256(b"old\nnew\n").hexdigest()


def _sections(page):
    return re.findall(r'<section id="([a-z]+)">', page)


def test_verdict_first_never_plain_ok_with_denials(ctx):
    """The verdict a reviewer needs comes first: a run that had denials or
    a kill is never shown as a plain (green) ok, and the denials come
    before the timeline, in HTML and in text."""
    deny2 = ("for i in range(2):\n"
             "    try: open('/etc/shadow')\n"
             "    except OSError: pass\n")
    cases = [
        ((deny2,), "ok with denials, exit 0; 2 denied", "v-warn"),
        (("print(1)",), "ok, exit 0", "v-ok"),
        ((deny2, "--profile", "audit"),
         "ok with would-be denials, exit 0; 2 would be denied", "v-warn"),
        (("import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)",),
         "killed, killed by SIGSYS; 1 killed", "v-bad"),
    ]
    for (code, *opts), want, cls in cases:
        ctx.run(code, *opts)
        run_id = ctx.last_run()["id"]
        page = _report(ctx, run_id).stdout
        assert f'<span class="verdict {cls}">{want}</span>' in page, (want, page[:3000])
        secs = _sections(page)
        assert secs[:2] == ["verdict", "denials"], secs
        assert secs.index("denials") < secs.index("timeline"), secs
        nav = re.search(r"<nav>(.*?)</nav>", page).group(1)
        assert nav.index("#denials") < nav.index("#timeline"), nav
        t = _report(ctx, run_id, "--format", "text").stdout
        assert f"\n  status        {want}\n" in t, (want, t[:1500])
        assert t.index("== Denials by rule ==") < t.index("== Timeline =="), t[:3000]
    # the verdict's colours: amber for ok with denials, never the green ok
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    assert ".v-warn{" in css, css
