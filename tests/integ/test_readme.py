"""README.md's examples, run as a user would run them.

Every fenced block tagged `sh` is an example: `$ ` starts a command (a line
ending in a backslash, an open quote or a here-document goes on to the next
lines); the lines after it, up to the next `$ `, are what the README shows
it printing. A block is left out only when an HTML comment
`<!-- not run: REASON -->` stands right before it, so a new example is
tested unless it says why not. The commands run in order, one shell each,
in one working directory with `examples/` and `bench/` of this tree, with
`ward` (the build under test) first on PATH and HOME a fresh directory, so
the README's default database (~/.local/state/ward/audit.db) is the
test's own and `last` is the run before.

Checked for each command: its exit status (0, or the `# exit N` written at
the end of its line) and the output lines shown, in order, among what it
printed on stdout and stderr together (a shown line matches a whole line;
`...` alone skips any lines, `…` or `...` within a line matches any text;
runs of blanks match any blanks).

Also here: every block of README.md carries a language tag and only `sh`
blocks show `$ ` prompts; the quick start's test command is the one
.ci/run runs; every relative link of README.md
and docs/*.md points to a file that exists and, with `#anchor`, to one of
its headings; the README stays under 450 lines (long text goes to docs/,
benchmark history to bench/results/).
"""
import os
import re
import shlex
import shutil
import subprocess

import wardtest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(ROOT, "README.md")
MAX_LINES = 450
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")
EXIT = re.compile(r"\s#\s*exit\s+(\d+)\s*$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
RUN_TAGS = ("sh",)


# ---------------------------------------------------------------- parsing

def fenced_blocks(text):
    """[(first line number, info string, lines, not-run reason or None)]"""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(2), m.group(3).strip(), i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = NOT_RUN.match(lines[k].strip()) if k >= 0 else None
        out.append((start, info, lines[start:j], mark.group(1) if mark else None))
        i = j + 1
    return out


def _complete(cmd):
    if cmd.endswith("\\"):
        return False
    try:
        shlex.split(cmd, comments=False)
    except ValueError:
        return False
    return True


class Command:
    def __init__(self, lineno, text, exit_code):
        self.lineno, self.text, self.exit_code = lineno, text, exit_code
        self.expected = []

    def __repr__(self):
        return f"README.md:{self.lineno}: $ {self.text}"


def commands(start, lines):
    """The commands of one sh block, each with its expected exit status and
    output lines."""
    cmds, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if not cmds:
                raise AssertionError(
                    f"README.md:{start + i + 1}: a sh block's first line must be a `$ ` command "
                    f"(or mark the block <!-- not run: why -->): {line!r}")
            cmds[-1].expected.append(line)
            i += 1
            continue
        first = i
        parts = [line[2:]]
        i += 1
        while not _complete("\n".join(parts)) and i < len(lines):
            parts.append(lines[i])
            i += 1
        m = HEREDOC.search("\n".join(parts))
        if m:
            while i < len(lines) and lines[i] != m.group(2):
                parts.append(lines[i])
                i += 1
            if i == len(lines):
                raise AssertionError(f"README.md:{start + first + 1}: here-document {m.group(2)} not ended")
            parts.append(lines[i])
            i += 1
        code = 0
        for p in (parts[0], parts[-1]):
            e = EXIT.search(p)
            if e:
                code = int(e.group(1))
        cmds.append(Command(start + first + 1, "\n".join(parts), code))
    return cmds


def examples():
    with open(README) as f:
        text = f.read()
    return [(start, info, lines, reason) for start, info, lines, reason in fenced_blocks(text)]


def _pattern(shown):
    out = []
    for tok in re.split(r"(\.\.\.|…|\s+)", shown.strip()):
        if tok in ("...", "…"):
            out.append(".*")
        elif tok and tok.isspace():
            out.append(r"\s+")
        elif tok:
            out.append(re.escape(tok))
    return re.compile("".join(out))


def check_output(cmd, printed):
    """The README's lines of cmd, in order, among the lines it printed."""
    got = [l.strip() for l in printed.split("\n")]
    pos = 0
    for shown in cmd.expected:
        if shown.strip() in ("", "...", "…"):
            continue
        rx = _pattern(shown)
        while pos < len(got) and not rx.fullmatch(got[pos]):
            pos += 1
        if pos == len(got):
            return f"the line {shown!r} is not in what it printed (in order)"
        pos += 1
    return None


# ---------------------------------------------------------------- running

def _workdir(ctx):
    """cwd with this tree's examples/ and bench/, HOME, and a bin/ with ward."""
    work, home, bindir = ctx.path("work"), ctx.path("home"), ctx.path("bin")
    for d in (work, home, bindir):
        os.makedirs(d)
    for name in ("examples", "bench"):
        os.symlink(os.path.join(ROOT, name), os.path.join(work, name))
    os.symlink(os.path.abspath(wardtest.ward_bin()), os.path.join(bindir, "ward"))
    env = {"HOME": home, "PATH": f"{bindir}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "TERM": "dumb"}
    for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):  # make asan
        if name in os.environ:
            env[name] = os.environ[name]
    return work, env


def test_readme_examples(ctx):
    """Runs every sh block of README.md not marked `not run`, in order."""
    for tool in ("jq", "sqlite3", "strace", "cc"):
        if not shutil.which(tool, path="/usr/bin:/bin"):
            raise wardtest.Skip(f"{tool} is not installed (tools/install-deps installs it)")
    work, env = _workdir(ctx)
    failures, ran = [], 0
    for start, info, lines, reason in examples():
        if info not in RUN_TAGS or reason:
            continue
        for cmd in commands(start, lines):
            try:
                p = subprocess.run(["/bin/bash", "-c", cmd.text], cwd=work, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=300,
                                   text=True, errors="replace")
            except subprocess.TimeoutExpired:
                failures.append(f"{cmd}\n   timed out")
                continue
            ran += 1
            why = None
            if p.returncode != cmd.exit_code:
                why = f"exit {p.returncode}, the README says {cmd.exit_code}"
            else:
                why = check_output(cmd, p.stdout)
            if why:
                failures.append(f"{cmd}\n   {why}\n   it printed:\n{p.stdout[-3000:]}")
    assert ran >= 20, f"only {ran} README commands found: has the README's format changed?"
    assert not failures, "\n\n".join(failures)


def test_readme_blocks_marked(ctx):
    """A block is run (sh, with `$ ` prompts) or says why not; other blocks
    show no prompts, so no example goes untested unnoticed."""
    bad, runs, skipped = [], 0, []
    for start, info, lines, reason in examples():
        if reason:
            skipped.append(reason)
            continue
        if not info:
            bad.append(f"README.md:{start}: a block without a language tag (sh, json, text, ...)")
        elif info in RUN_TAGS:
            runs += len(commands(start, lines))
        elif any(l.startswith("$ ") for l in lines):
            bad.append(f"README.md:{start}: a {info} block with `$ ` prompts: tag it sh (it is then "
                       f"run) or mark it <!-- not run: why -->")
    assert not bad, "\n".join(bad)
    assert runs >= 20, runs
    for r in skipped:  # the reasons say why, in a few words
        assert len(r) > 10, r


def test_quick_start_is_ci(ctx):
    """The quick start's two commands: the demo, and the test command that
    .ci/run runs."""
    quick = [b for b in examples() if b[3] and "make demo" in "\n".join(b[2])]
    assert len(quick) == 1, "README.md: no quick start block with `make demo`"
    cmds = [l.split("#")[0].strip() for l in quick[0][2] if l.strip()]
    assert cmds == ["tools/install-deps && make demo", "make test"], cmds
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = "\n".join(l.split("#")[0] for l in f)
    for cmd in ("tools/install-deps", "make test"):
        assert re.search(r"(^|[;&|(\s])" + re.escape(cmd) + r"($|[;&|)\s])", ci, re.M), \
            f".ci/run does not run `{cmd}`, the README's quick start does"



# ---------------------------------------------------------------- links

def _slug(heading):
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")


def _anchors(path):
    with open(path) as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.M):
        s = _slug(m.group(1))
        n = seen.get(s, 0)
        out.add(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


def test_doc_links(ctx):
    """Relative links in README.md and docs/*.md name files that exist, and
    headings that exist in them."""
    docs = os.path.join(ROOT, "docs")
    pages = [README] + [os.path.join(docs, f) for f in sorted(os.listdir(docs)) if f.endswith(".md")]
    bad = []
    for page in pages:
        with open(page) as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, ROOT)
            if not os.path.exists(full):
                bad.append(f"{rel}: link to {target}: no such file")
            elif anchor and full.endswith(".md") and anchor not in _anchors(full):
                bad.append(f"{rel}: link to {target}: no such heading")
    assert not bad, "\n".join(bad)


def test_readme_length(ctx):
    """The README is for users: what ward is, the quick start, usage by task,
    one performance table. Long explanations go to docs/, benchmark history
    to bench/results/."""
    with open(README) as f:
        n = sum(1 for _ in f)
    assert n < MAX_LINES, (f"README.md has {n} lines (< {MAX_LINES}): move the long parts to "
                           f"docs/ (usage, agents, forensics, performance) and link them")
