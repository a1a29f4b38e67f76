"""Every example in README.md and docs/*.md runs, so the documents cannot drift from the code.

The fenced code blocks (```) of these files are collected, one test per block.  Each block is
one of the following, and a block that is none of them fails (no silent skips):

- **shell example**: its first non-blank line starts with ``$ ``.  Every ``$ `` line is a command
  (a line ending in ``\\`` continues on the next; ``# ...`` is a comment); the lines up to the
  next ``$ `` line are its shown output.  ``$ stam ...`` runs through :func:`stam.cli.main`
  in-process, with stdout and stderr captured together, in a fresh temporary folder per block
  (the commands of one block share it, so ``stam train`` then ``stam table`` works).  ``$ ls``
  and ``$ cat`` run as subprocesses there; no other program may appear.
  The exit status must be 2 when the shown output has a line ``stam...: error: ...``, else 0.
  The shown output is a pattern for the whole output (lines compared with trailing blanks
  stripped): a line ``...`` stands for any number of omitted lines (none included); every other
  line must match the corresponding output line exactly, so output shown with no ``...`` is the
  complete output.  No shown output: only the exit status is checked.
- **python example** (```python): run with this interpreter in a fresh temporary folder; exit 0.
- **make example**: every non-blank line starts with ``make ``.  Not run (``make demo`` and
  ``make test`` create a virtual environment and install); each target named must exist in the
  Makefile.

An HTML comment on the line(s) right before the block (blank lines between are allowed) changes
how a shell example is tested; several directives may share one comment, one per line:

- ``<!-- test-match: numbers -->``: numbers in the shown output match any number and runs of
  blanks any run of blanks (for outputs with wall times); every other character must match.
  ``<!-- test-match: numbers 1% -->``: the same, and every number must lie within that relative
  tolerance of the shown one (for estimates that may move with a library's version, or a solver's
  last digits), except a duration (a number followed by `` s``: a wall time), which matches any number.
- ``<!-- test: CMD -->`` (one ``stam ...`` command per line, as many as the block has commands):
  the quick variant of a long example (a full training, a full synthetic run, the demo); the
  i-th command replaces the block's i-th command.  ``<!-- test-args: ARGS -->`` instead appends
  ARGS to every ``stam`` command of the block.  A quick variant prints other numbers and rows, so
  its output is checked by shape: for every shown line, the text before its first digit or colon
  (when not blank) must begin some output line.
- ``<!-- test-output: PATH -->`` (one path per command of the block, ``-`` for none): for a long example run
  here as a quick variant, the shown output of the full command is what a committed file of
  ``benchmarks/results/`` recorded when it was run (its stdout), line by line and exactly (``...`` as
  above), and the document names that file in the 15 lines before the block, so a reader knows
  where the numbers come from; the quick variant is still run and checked by shape.
- ``<!-- test-needs: stam-demo -->``: the block's folder first receives ``stam-demo``, the output
  of ``stam demo --quick`` (run once per test session and shared between xdist workers, as the
  demo takes 32 s at load 4, 2.5 minutes at load 14); a command ``stam demo --quick`` in a block is served from that same run.
- ``<!-- test-files: PATH ... -->`` (paths relative to the repository, blank-separated): those
  files are copied into the block's folder first (a user's problem file that ``--problem
  FILE.py:NAME`` or a python example imports); for shell and python examples.
- ``<!-- no-test: REASON -->``: only for commands that need CIFAR-10/100, which cannot exist on an
  offline machine: every command must then name cifar, and it is still parsed by ``stam``'s
  argparse parser (a renamed or removed flag fails).

Every shell example writes only into folders that ``.gitignore`` ignores (or rewrites a stored result
of the repository, e.g. ``benchmarks/results/``), so running the examples in a clone leaves ``git
status`` clean: the files a block wrote and every shown command's ``-o/--out`` are checked.

Besides the blocks: no ``$ stam`` example may hide in an indented (unfenced) code block, every
directive must be known, and every file under docs/ (docs/studies/ included) must be linked from README.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
DIRECTIVES = ("test", "test-args", "test-match", "test-needs", "test-files", "test-output", "no-test")
ERROR_LINE = re.compile(r"^stam( [\w-]+)*: error: ")
NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d+)*\.?\d*|\.\d+)(?:e[-+]?\d+)?")
DEMO_ARGV = ["demo", "--quick"]


@dataclass
class Command:
    text: str  # as written after "$ ", continuation lines joined
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    directives: dict[str, str]

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        body = [ln for ln in self.lines if ln.strip()]
        if self.lang == "python":
            return "python"
        if body and body[0].startswith("$ "):
            return "shell"
        if body and all(ln.startswith("make ") for ln in body):
            return "make"
        return "unclassified"

    def commands(self) -> list[Command]:
        cmds: list[Command] = []
        lines = iter(self.lines)
        for ln in lines:
            if ln.startswith("$ "):
                text = ln[2:]
                while text.rstrip().endswith("\\"):
                    text = text.rstrip()[:-1] + " " + next(lines).strip()
                cmds.append(Command(text))
            elif cmds:
                cmds[-1].shown.append(ln.rstrip())
        for c in cmds:
            while c.shown and not c.shown[-1]:
                c.shown.pop()
        return cmds


def _directives(before: list[str]) -> dict[str, str]:
    """The directives of the HTML comments ending right before a fence (blank lines allowed)."""
    out: dict[str, str] = {}
    i = len(before) - 1
    while True:
        while i >= 0 and not before[i].strip():
            i -= 1
        if i < 0 or not before[i].rstrip().endswith("-->"):
            return out
        j = i
        while j >= 0 and "<!--" not in before[j]:
            j -= 1
        text = "\n".join(before[j:i + 1]).strip()
        text = text[text.index("<!--") + 4:text.rindex("-->")]
        key = None
        for ln in text.splitlines():
            m = re.match(r"\s*([\w-]+):\s*(.*)$", ln)
            if m and m.group(1) in DIRECTIVES:
                key = m.group(1)
                assert key not in out, f"directive {key} given twice"
                out[key] = m.group(2).strip()
            elif key and ln.strip():
                out[key] = (out[key] + "\n" + ln.strip()).strip()
            elif ln.strip():
                out.setdefault("?", ln.strip())
        i = j - 1


def collect(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            assert j < len(lines), f"{path}:{i + 1}: unterminated code block"
            blocks.append(Block(path, i + 1, m.group(1), lines[i + 1:j], _directives(lines[:i])))
            i = j + 1
        else:
            i += 1
    return blocks


BLOCKS = [b for f in DOC_FILES for b in collect(f)]


# --------------------------------------------------------------------------------------------
# matching the shown output
# --------------------------------------------------------------------------------------------


def _line_pattern(line: str, numbers: bool) -> re.Pattern:
    if not numbers:
        return re.compile(re.escape(line) + r"\Z")
    parts, pos = [], 0
    for m in NUMBER.finditer(line):
        parts.append(re.escape(line[pos:m.start()]))
        parts.append(r"([-+]?(?:\d[\d.,]*|\.\d+)(?:e[-+]?\d+)?)")
        pos = m.end()
    parts.append(re.escape(line[pos:]))
    return re.compile(re.sub(r"(\\ )+", r"\\s+", "".join(parts)) + r"\Z")


def _close(shown: str, got: str, tol: float) -> bool:
    """Two numbers as printed, within relative tolerance ``tol`` (text that is no number: equal)."""
    try:
        a, b = float(shown.replace(",", "")), float(got.replace(",", ""))
    except ValueError:
        return shown == got
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


#: after a number, the unit of a duration (``0.05 s``, ``(149 s)``): a wall time, which no tolerance bounds
DURATION = re.compile(r" ?s\b")


def _line_matcher(line: str, numbers: bool, tol: float | None):
    pat = _line_pattern(line, numbers)
    if not numbers or tol is None:
        return pat.match
    want = [None if DURATION.match(line, m.end()) else m.group() for m in NUMBER.finditer(line)]

    def match(text: str) -> bool:
        m = pat.match(text)
        return bool(m) and all(w is None or _close(w, g, tol) for w, g in zip(want, m.groups()))
    return match


def matches(shown: list[str], actual: list[str], numbers: bool = False, tol: float | None = None) -> bool:
    """Whether ``actual`` matches the pattern ``shown``: ``...`` lines match any run of lines,
    every other line one line (exactly, or with any numbers when ``numbers``, within the relative
    tolerance ``tol`` when given)."""
    pats = [None if s.strip() == "..." else _line_matcher(s, numbers, tol) for s in shown]
    actual = [a.rstrip() for a in actual]
    while actual and not actual[-1]:
        actual.pop()
    # dynamic programming over (pattern index, line index)
    reach = {0}
    for p in pats:
        nxt = set()
        for k in reach:
            if p is None:
                nxt.update(range(k, len(actual) + 1))
            elif k < len(actual) and p(actual[k]):
                nxt.add(k + 1)
        reach = nxt
        if not reach:
            return False
    return len(actual) in reach


def shape_matches(shown: list[str], actual: list[str]) -> list[str]:
    """The shown lines whose text before the first digit or colon begins no output line.  A quick
    variant marks the lines it computes at smoke-test budgets (``[--quick: ...] `` first); the
    marks are not part of the shape."""
    unmark = lambda line: re.sub(r"^(\s*)(\[[^\]]*\] )+", r"\1", line)  # noqa: E731
    actual = [unmark(a) for a in actual]
    missing = []
    for s in shown:
        prefix = re.split(r"[0-9:]", unmark(s), maxsplit=1)[0].rstrip()
        if prefix.strip() and prefix.strip() != "..." and not any(a.startswith(prefix) for a in actual):
            missing.append(s)
    return missing


def test_matcher():
    out = ["a 1", "b 2", "c 3"]
    assert matches(["a 1", "b 2", "c 3"], out)
    assert not matches(["a 1", "b 2"], out)  # the whole output unless "..." says otherwise
    assert matches(["a 1", "...", "c 3"], out) and matches(["...", "c 3"], out) and matches(["...", "b 2", "..."], out)
    assert matches(["a 1", "...", "b 2", "c 3"], out)  # "..." may stand for no line
    assert not matches(["a 1", "...", "c 4"], out) and not matches(["b 2", "..."], out)
    assert matches(["a 9", "b  22", "..."], out, numbers=True) and not matches(["a x", "..."], out, numbers=True)
    assert matches(["a 1.005", "b 2", "c 3"], out, numbers=True, tol=0.01) and not matches(["a 1.1", "b 2", "c 3"], out, True, 0.01)
    assert matches(["x 1.0 (9 s)"], ["x 1.0 (0.5 s)"], True, 0.01) and not matches(["x 2.0 (9 s)"], ["x 1.0 (0.5 s)"], True, 0.01)
    assert not matches(["9 steps"], ["5 steps"], True, 0.01)  # a count is no duration
    assert shape_matches(["Report: x", "T 10", "    10  2"], ["Report: y", "T 20"]) == []
    assert shape_matches(["Other: x"], ["Report: y"]) == ["Other: x"]
    assert shape_matches(["  Digits, MLP 9"], ["  [--quick: smoke-test budgets] [smoke-test budget (1 epoch)] Digits, MLP 1"]) == []


# --------------------------------------------------------------------------------------------
# running commands
# --------------------------------------------------------------------------------------------


def run_stam(argv: list[str]) -> tuple[int, list[str]]:
    """``stam ARGV`` in-process in the current folder: (exit status, stdout+stderr lines)."""
    from stam.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse (usage errors, --help, --version)
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return rc, buf.getvalue().splitlines()


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory) -> tuple[Path, int, list[str]]:
    """One ``stam demo --quick`` per session, shared by the xdist workers through a lock file."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this session's, for all workers
    out, log = shared / "docs-demo" / "stam-demo", shared / "docs-demo.log"
    with open(shared / "docs-demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not log.exists():
            out.parent.mkdir(exist_ok=True)
            rc, lines = run_stam([*DEMO_ARGV, "--no-progress", "-o", str(out)])
            log.write_text(f"{rc}\n" + "\n".join(lines), encoding="utf-8")
        rc_text, *lines = log.read_text(encoding="utf-8").split("\n")
    return out, int(rc_text), lines


def _argv(text: str) -> list[str]:
    return shlex.split(text, comments=True)


def _check(block: Block, cmd: str, rc: int, out: list[str], shown: list[str], quick: bool) -> None:
    where = f"{block.id}: $ {cmd}"
    want_rc = 2 if any(ERROR_LINE.match(s) for s in shown) else 0
    assert rc == want_rc, f"{where}\nexit status {rc}, expected {want_rc}; output:\n" + "\n".join(out[-40:])
    if not shown:
        return
    if quick:
        missing = shape_matches(shown, out)
        assert not missing, f"{where}\nshown lines of no output line's shape:\n" + "\n".join(missing) + \
            "\n--- output:\n" + "\n".join(out)
    else:
        how = (block.directives.get("test-match") or "").split()
        numbers = how[:1] == ["numbers"]
        tol = float(how[1].rstrip("%")) / 100 if numbers and len(how) > 1 else None
        assert matches(shown, out, numbers, tol), f"{where}\n--- shown:\n" + "\n".join(shown) + \
            "\n--- output:\n" + "\n".join(out)


def _gitignore() -> list[tuple[str, bool, bool]]:
    """The patterns of the repository's ``.gitignore``: (glob, only folders, anchored at the root)."""
    out = []
    for ln in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines():
        ln = ln.strip()
        if ln and not ln.startswith("#"):
            assert not ln.startswith("!"), f".gitignore: negation {ln!r} is not read here"
            out.append((ln.strip("/"), ln.endswith("/"), "/" in ln.rstrip("/")))
    return out


def ignored(rel: str, is_dir: bool = False) -> bool:
    """Whether git ignores the path ``rel`` (relative to the repository; a folder when ``is_dir``): it or a folder
    above it matches a pattern of ``.gitignore`` (git's rules for the plain patterns used there)."""
    from fnmatch import fnmatchcase

    parts = Path(rel).parts
    assert parts and ".." not in parts and not Path(rel).is_absolute(), rel
    for i in range(1, len(parts) + 1):
        path, folder = "/".join(parts[:i]), i < len(parts) or is_dir
        for glob, only_dirs, anchored in _gitignore():
            if (folder or not only_dirs) and fnmatchcase(path if anchored else parts[i - 1], glob):
                return True
    return False


def test_ignored_reads_gitignore_as_git_does():
    assert ignored("results/map/map-digits.json") and ignored("runs/our3", is_dir=True) and ignored("stam-demo/x")
    assert ignored("a/b/__pycache__/c.pyc") and ignored("x.egg-info", is_dir=True) and ignored("results", is_dir=True)
    assert not ignored("README.md") and not ignored("figs/admissible.png") and not ignored("x/results/y")
    assert not ignored("stam_toolkit.egg-info")  # a file: the pattern is for folders


def _written_outside_ignored(tmp_path: Path, before: set[Path]) -> list[str]:
    """The files a block wrote into its folder that a clone's ``git status`` would show: neither ignored nor a
    file of the repository (a stored result the example regenerates, as ``benchmarks/results/...``)."""
    bad = []
    for f in sorted(p for p in tmp_path.rglob("*") if p.is_file() and p not in before):
        rel = f.relative_to(tmp_path).as_posix()
        if not ignored(rel) and not (ROOT / rel).is_file():
            bad.append(rel)
    return bad


def _shown_out(argv: list[str]) -> str | None:
    """The ``-o/--out`` a shown ``stam`` command writes to (given or its default), None when it has none or
    does not parse (an error example)."""
    from stam.cli import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(argv[1:])
    except SystemExit:
        return None
    return getattr(args, "out", None)


def _shell(block: Block, tmp_path: Path, request) -> None:
    d = block.directives
    cmds = block.commands()
    assert cmds, f"{block.id}: a shell example without commands"
    for c in cmds:  # what a reader runs: the shown command, not its quick variant (an error example writes nothing)
        argv = _argv(c.text)
        out = _shown_out(argv) if argv[0] == "stam" and not any(ERROR_LINE.match(s) for s in c.shown) else None
        if out is not None:
            assert ignored(out, is_dir=not Path(out).suffix) or (ROOT / out).is_file(), \
                f"{block.id}: $ {c.text}\nwrites {out}, which .gitignore does not ignore: a clone's git status shows it"
    if "no-test" in d:
        from stam.cli import build_parser

        assert d["no-test"], f"{block.id}: no-test needs a reason"
        for c in cmds:
            argv = _argv(c.text)
            assert argv[0] == "stam" and "cifar" in c.text, f"{block.id}: no-test is only for CIFAR commands: {c.text}"
            try:
                args = build_parser().parse_args(argv[1:])
            except SystemExit as exc:
                pytest.fail(f"{block.id}: {c.text!r} does not parse (exit status {exc.code})")
            assert getattr(args, "func", None) is not None
        return
    if "test-output" in d:
        _check_recorded(block, cmds, d["test-output"].split())
    replacements = None
    if "test" in d:
        replacements = [ln.strip() for ln in d["test"].splitlines() if ln.strip()]
        assert len(replacements) == len(cmds), f"{block.id}: 'test:' needs one command per command of the block"
    if "test-needs" in d:
        assert d["test-needs"] == "stam-demo", f"{block.id}: unknown test-needs {d['test-needs']!r}"
        demo_out, demo_rc, _ = request.getfixturevalue("quick_demo")
        assert demo_rc == 0
        shutil.copytree(demo_out, tmp_path / "stam-demo")
    before = set(tmp_path.rglob("*"))
    for i, c in enumerate(cmds):
        text, argv, quick = c.text, _argv(c.text), False
        if replacements is not None:
            text, quick = replacements[i], True
            argv = _argv(text)
        elif "test-args" in d and argv[0] == "stam":
            argv, quick = argv + _argv(d["test-args"]), True
            text = shlex.join(argv)
        if argv[0] == "stam" and argv[1:3] == DEMO_ARGV:
            assert quick, f"{block.id}: 'stam demo --quick' is only served from the shared run as a quick variant"
            _, rc, out = request.getfixturevalue("quick_demo")
        elif argv[0] == "stam":
            rc, out = run_stam(argv[1:])
        else:
            assert argv[0] in ("ls", "cat"), f"{block.id}: only stam, ls and cat may appear in a shell example: {text}"
            proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
            rc, out = proc.returncode, (proc.stdout + proc.stderr).splitlines()
        _check(block, text, rc, out, c.shown, quick)
    bad = _written_outside_ignored(tmp_path, before)
    assert not bad, f"{block.id}: the example writes files that .gitignore does not ignore (git status shows them):\n" + \
        "\n".join(bad[:10])


def _check_recorded(block: Block, cmds: list[Command], paths: list[str]) -> None:
    """``test-output``: each command's shown output is the stdout a committed file recorded, and the
    15 lines before the block name that file."""
    assert "test" in block.directives, f"{block.id}: test-output is for a long example run here as a quick variant ('test:')"
    assert len(paths) == len(cmds), f"{block.id}: 'test-output:' needs one path (or -) per command of the block"
    before = "\n".join(block.path.read_text(encoding="utf-8").splitlines()[max(0, block.line - 16):block.line - 1])
    for c, rel in zip(cmds, paths):
        if rel == "-":
            continue
        src = ROOT / rel
        assert rel.startswith("benchmarks/results/") and src.is_file(), f"{block.id}: test-output: no file {rel} in benchmarks/results/"
        assert rel in before, f"{block.id}: the 15 lines before the block do not name {rel}, where its numbers come from"
        recorded = src.read_text(encoding="utf-8").splitlines()
        assert matches(c.shown, recorded), f"{block.id}: $ {c.text}\n--- shown:\n" + "\n".join(c.shown) + \
            f"\n--- recorded in {rel}:\n" + "\n".join(recorded)


def _python(block: Block, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", "\n".join(block.lines)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, f"{block.id}\n{proc.stdout}\n{proc.stderr}"


def _make(block: Block) -> None:
    targets = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    for ln in block.lines:
        if ln.strip():
            words = [w for w in _argv(ln)[1:] if "=" not in w and not w.startswith("-")]
            assert words, f"{block.id}: {ln!r} names no target"
            for w in words:
                assert w in targets, f"{block.id}: make target {w!r} is not in the Makefile ({sorted(targets)})"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block: Block, tmp_path, monkeypatch, request):
    unknown = [k for k in block.directives if k not in DIRECTIVES]
    assert not unknown, f"{block.id}: unknown directive(s) {unknown}; known: {DIRECTIVES}"
    kind = block.kind
    if kind != "shell":
        assert set(block.directives) <= {"test-files"} and kind in ("python", "shell") or not block.directives, \
            f"{block.id}: directives apply to shell examples only (test-files: to python examples too)"
    for name in block.directives.get("test-files", "").split():
        src = ROOT / name
        assert src.is_file() and ROOT in src.resolve().parents, f"{block.id}: test-files: no file {name} in the repository"
        shutil.copy(src, tmp_path / src.name)
    monkeypatch.chdir(tmp_path)
    if kind == "shell":
        _shell(block, tmp_path, request)
    elif kind == "python":
        _python(block, tmp_path)
    elif kind == "make":
        _make(block)
    else:
        pytest.fail(f"{block.id}: a code block that is neither a shell, python nor make example "
                    f"(first line {block.lines[:1]}); every block must be tested")


def test_every_block_is_collected_and_classified():
    """The blocks the parametrised test runs are all fenced blocks; none is unclassified; the
    documents do have examples of every kind; no `$ stam` example hides outside a fence."""
    kinds = [b.kind for b in BLOCKS]
    assert "unclassified" not in kinds, [b.id for b in BLOCKS if b.kind == "unclassified"]
    for kind in ("shell", "python", "make"):
        assert kind in kinds
    fences = sum(1 for f in DOC_FILES for ln in f.read_text(encoding="utf-8").splitlines() if ln.startswith("```"))
    assert fences == 2 * len(BLOCKS)
    run = [b for b in BLOCKS if "no-test" not in b.directives]
    marked = [b for b in BLOCKS if "no-test" in b.directives]
    assert len(run) + len(marked) == len(BLOCKS) and all(b.directives["no-test"] for b in marked)
    for f in DOC_FILES:
        inside = False
        for n, ln in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            inside ^= ln.startswith("```")
            assert inside or not re.match(r"^\s+\$ stam", ln), f"{f.name}:{n}: an unfenced stam example"


def test_readme_is_the_front_door():
    """README.md stays short (depth lives in docs/), has an example of every command that
    `stam` registers, links every page of docs/, and every link to a .md file resolves."""
    import argparse

    from stam.cli import build_parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    examples = {tuple(_argv(c.text)[1:3]) for b in BLOCKS if b.path.name == "README.md" and b.kind == "shell"
                for c in b.commands()}
    commands = []
    for action in build_parser()._subparsers._group_actions:
        for name, sub in action.choices.items():
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            commands += [(name, n) for a in nested for n in a.choices] if nested else [(name,)]
    assert len(commands) >= 11
    for cmd in commands:
        assert any(e[:len(cmd)] == cmd for e in examples), f"README.md has no example of stam {' '.join(cmd)}"
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert pages
    for page in pages:
        rel = page.relative_to(ROOT).as_posix()
        assert f"({rel})" in readme, f"{rel} is not linked from README.md"
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", readme):
        assert (ROOT / link).is_file(), link
    for page in pages:
        for link in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / link).resolve().is_file(), f"{page.name}: broken link {link}"


def test_the_demo_time_is_the_recorded_one():
    """docs/benchmarks.md (its generated block demo-time, which docs/figures.md and docs/install.md link to) and
    ``stam demo --help`` give the full demo's time of the run recorded in ``benchmarks/results/demo_2cores.json``
    (the README once said 135 s, --help 'about 2.5 minutes')."""
    import json

    from stam.cli import build_parser
    from stam.figures.findings import BEGIN, END

    seconds = json.loads((ROOT / "benchmarks/results/demo_2cores.json").read_text(encoding="utf-8"))["seconds"]
    page = (ROOT / "docs/benchmarks.md").read_text(encoding="utf-8")
    block = page.split(BEGIN.format("demo-time"), 1)[1].split(END.format("demo-time"), 1)[0]
    assert f"took {seconds:.0f} s" in block
    assert all("benchmarks.md#demo" in (ROOT / "docs" / p).read_text(encoding="utf-8") for p in ("figures.md", "install.md"))
    demo = next(a for a in build_parser()._subparsers._group_actions).choices["demo"]
    assert f"{seconds / 60:.0f} minutes on 2 CPU cores" in " ".join(demo.description.split())


# --------------------------------------------------------------------------------------------
# the README as a front door (issue 58)
# --------------------------------------------------------------------------------------------

#: a number in prose: not part of a word or of another number (``L1``, ``cifar10`` and ``1.5``'s ``5`` are not)
PROSE_NUMBER = re.compile(r"(?<![\w.-])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")


def prose(text: str) -> str:
    """``text`` without its fenced code blocks and HTML comments: what a reader reads as prose."""
    out, inside = [], False
    for ln in text.splitlines():
        if ln.startswith("```"):
            inside = not inside
        elif not inside:
            out.append(ln)
    return re.sub(r"<!--.*?-->", "", "\n".join(out), flags=re.S)


def test_prose_numbers_are_counted_outside_code_and_words():
    text = "A 1.5 and -0.3 [+1.2, 2e-3].\n```\n$ stam x 7 8 9\n```\nL1 cifar10 VGG-16 <!-- 4 5 -->"
    assert PROSE_NUMBER.findall(prose(text)) == ["1.5", "-0.3", "+1.2", "2e-3"]


def test_the_readme_is_short_states_what_the_toolkit_is_first_and_types_few_numbers():
    """At most 200 lines and 120 numbers outside code blocks; its first two lines (after the title) say what the
    toolkit is, with no result number; no test count, suite time or machine load (docs/benchmarks.md keeps speed);
    the methods are named in words; the two commands say what they install."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 200, len(lines)
    numbers = PROSE_NUMBER.findall(prose(readme))
    assert len(numbers) <= 120, (len(numbers), numbers)
    first = [ln for ln in lines[1:] if ln.strip()][:2]
    assert "toolkit" in first[0] and not any(re.search(r"\d", ln) for ln in first), first
    flat = " ".join(prose(readme).split())
    for phrase in (r"\d[\d,]* tests", r"at load \d", r"\d+(\.\d+)? minutes", r"\d+ s\b"):
        assert not re.search(phrase, flat), phrase
    for name in ("BinaryConnect", "BinaryRelax", "projected SGD", "Our1-Our3"):
        assert name in flat, name
    assert "chromium" in flat and "apt-get" in flat and "extras" in flat


# --------------------------------------------------------------------------------------------
# one source for every finding: stam findings (issue 58)
# --------------------------------------------------------------------------------------------


def test_the_pages_are_what_the_result_files_give():
    """``stam findings --check`` (what CI runs through this test): every generated block of README.md and docs/
    is what the committed result files give; ``stam findings`` prints the README's table row for row."""
    from stam.figures.findings import BEGIN, END

    rc, out = run_stam(["findings", "--check"])
    assert (rc, out) == (0, []), out
    rc, table = run_stam(["findings"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(BEGIN.format("findings") + "\n", 1)[1].split("\n" + END.format("findings"), 1)[0]
    assert rc == 0 and table == block.splitlines() and 3 <= len(table) <= 2 + 6
    header, rule, *rows = table
    assert header == "| finding (with its scope) | number | reproduce | results |" and rule == "|---|---|---|---|"
    for row in rows:
        claim, number, command, files = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert claim and re.search(r"\d", number) and command.startswith("`") and files.startswith("`")
        assert all((ROOT / "benchmarks/results" / f.strip("` ")).exists() for f in files.split(", "))


def _copy_repository(tmp_path: Path) -> Path:
    """The pages and the committed result files (no job stores, no figures) under ``tmp_path/repo``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / "README.md", repo / "README.md")
    shutil.copytree(ROOT / "docs", repo / "docs")
    shutil.copytree(ROOT / "benchmarks/results", repo / "benchmarks/results",
                    ignore=shutil.ignore_patterns("jobs", "*.png", "*.pdf", "*.csv"))
    return repo


def test_a_changed_result_file_fails_the_check_until_write(tmp_path):
    """A rerun changes a result file: ``--check`` then exits 1 naming each block it changes (the README's table and
    the study's table), and ``--write`` regenerates them, after which the check passes and the README states the new
    number; nothing else of the pages changes."""
    import json

    repo = _copy_repository(tmp_path)
    rel = repo / "benchmarks/results/tune_digits_default_2cores.json"
    result = json.loads(rel.read_text(encoding="utf-8"))
    stam = next(a for a in result["algorithms"] if a["algo"] == "stam")
    stam["final"]["test_acc"] = [x - 3.0 for x in stam["final"]["test_acc"]]
    stam["final"]["mean"] -= 3.0
    stam["final"]["ci95"] = [v - 3.0 for v in stam["final"]["ci95"]]
    rel.write_text(json.dumps(result), encoding="utf-8")
    before = {p: p.read_text(encoding="utf-8") for p in [repo / "README.md", *(repo / "docs").rglob("*.md")]}
    rc, out = run_stam(["findings", "--check", "--root", str(repo)])
    assert rc == 1
    named = {ln.split(": block ")[0].removeprefix("stam findings: ") + ":" + ln.split(": block ")[1].split()[0] for ln in out}
    assert {"README.md:findings", "docs/studies/digits.md:digits-tuned",
            "docs/studies/digits.md:finding-digits-tuned"} <= named, out
    assert all("differs from what the result files give" in ln for ln in out)
    assert {p: p.read_text(encoding="utf-8") for p in before} == before  # --check writes nothing
    rc, out = run_stam(["findings", "--write", "--root", str(repo)])
    assert rc == 0 and "wrote README.md: findings" in out
    assert run_stam(["findings", "--check", "--root", str(repo)]) == (0, [])
    readme = (repo / "README.md").read_text(encoding="utf-8")
    assert "STAM - BC -3.3 [-4.8, -1.8] points" in readme and "STAM is below BC" in readme
    outside = lambda text: re.sub(r"<!-- findings:begin ([\w-]+) -->.*?<!-- findings:end \1 -->", "", text, flags=re.S)  # noqa: E731
    assert all(outside(p.read_text(encoding="utf-8")) == outside(text) for p, text in before.items())


def test_the_studies_and_benchmarks_blocks_follow_their_files(tmp_path):
    """The band study's worst-case tables, the region benchmark's sizes, the certificates' table and the memory
    estimate's range are generated: a changed worst case of pep_grid.json, a changed region time, a changed rate of a
    committed certificate, a changed ratio of memory_estimate_cpu.json and a changed start of pep_band.json's bisections
    (``history_lo``) fail the check, naming those blocks, until
    ``--write``."""
    import json

    repo = _copy_repository(tmp_path)
    grid = repo / "benchmarks/results/pep_grid.json"
    data = json.loads(grid.read_text(encoding="utf-8"))
    row = next(r for r in data["gamma_lam_scan"] if r["status"] == "optimal")
    row["worst_case"] *= 2
    grid.write_text(json.dumps(data), encoding="utf-8")
    bench = repo / "benchmarks/results/lyapunov_region_bench.json"
    data = json.loads(bench.read_text(encoding="utf-8"))
    data["region_s"] += 100
    bench.write_text(json.dumps(data), encoding="utf-8")
    cert = repo / "benchmarks/results/certificates/general-lsc-lam1-gamma0.946-beta10.json"
    data = json.loads(cert.read_text(encoding="utf-8"))
    data["float"]["1/rho"] *= 2
    cert.write_text(json.dumps(data), encoding="utf-8")
    memory = repo / "benchmarks/results/memory_estimate_cpu.json"
    data = json.loads(memory.read_text(encoding="utf-8"))
    data["ratio_max"] += 1
    memory.write_text(json.dumps(data), encoding="utf-8")
    band = repo / "benchmarks/results/pep_band.json"  # where its bisections start: read from the file, not typed
    data = json.loads(band.read_text(encoding="utf-8"))
    data["history_lo"] *= 2
    band.write_text(json.dumps(data), encoding="utf-8")
    rc, out = run_stam(["findings", "--check", "--root", str(repo)])
    named = {ln.split(": block ")[0].removeprefix("stam findings: ") + ":" + ln.split(": block ")[1].split()[0] for ln in out}
    assert rc == 1 and named == {"docs/studies/band.md:pep-gamma-lam-scan", "docs/benchmarks.md:lyapunov-bench",
                                 "docs/certificates.md:certificates", "docs/benchmarks.md:memory-estimate",
                                 "README.md:findings", "docs/studies/band.md:band",
                                 "docs/studies/band.md:finding-beyond-family"}, out
    assert run_stam(["findings", "--write", "--root", str(repo)])[0] == 0
    assert run_stam(["findings", "--check", "--root", str(repo)]) == (0, [])


#: the reference pages: how to use each command and what it prints, the method and its limits; no record of runs
REFERENCE = ("pep.md", "theory.md", "certificates.md", "methods-theory.md", "synthetic.md", "networks.md", "figures.md",
             "practice.md")
CHRONICLE = re.compile(r"\bissues? #?\d+|\b20\d\d-\d\d-\d\d|\buntil 20\d\d|\b(first|second|third) (run|sitting)\b|"
                       r"\bsittings?\b|\bthis time\b|\bearlier (run|version)s?\b|\bat load \d|\bload average", re.I)


def test_reference_pages_hold_no_chronicle():
    """A reference page says how to use a command and what it prints, not how the runs went: no issue numbers, no
    dates of runs, no sittings, loads or earlier runs (the studies under docs/studies/ keep what was replaced)."""
    assert CHRONICLE.search("the rule until 2026-11-29") and CHRONICLE.search("see issue 35")
    bad = []
    for name in REFERENCE:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        bad += [f"docs/{name}: {m.group(0)!r}" for m in CHRONICLE.finditer(text)
                if not text[max(0, m.start() - 8):m.start()].endswith("oneDNN ")]  # another project's issue tracker
    assert not bad, bad


def test_pep_reference_states_no_finding():
    """docs/pep.md opens with one complete `stam pep` run and one `stam pep --region` run, each output checked by its
    test, and holds no table of results: no generated block and no Markdown table outside its examples (the findings
    are the band study's generated tables)."""
    text = (ROOT / "docs" / "pep.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings[:2] == ["One `stam pep` run", "One `stam pep --region` run"], headings
    assert "findings:begin" not in text
    outside = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    assert not re.search(r"^\|.*\|$", outside, re.M)
    first = next(b for b in BLOCKS if b.path.name == "pep.md")
    assert [c.text.split()[:2] for c in first.commands()] == [["stam", "pep"]] and first.directives.get("test-match")


@pytest.mark.parametrize("edit, message", [
    (lambda repo: (repo / "README.md").write_text("<!-- findings:begin nothing -->\n<!-- findings:end nothing -->\n"),
     "README.md: unknown findings block 'nothing'"),
    (lambda repo: (repo / "README.md").write_text("<!-- findings:begin findings -->\nx\n"),
     "README.md: a findings marker without its pair"),
    (lambda repo: (repo / "benchmarks/results/pep_band.json").write_text("{"),
     "benchmarks/results/pep_band.json: not JSON"),
    (lambda repo: (repo / "benchmarks/results/pep_band.json").unlink(),
     "benchmarks/results/pep_band.json: cannot read"),
    (lambda repo: (repo / "docs/bad.md").write_bytes(b"\xff\xfe"), "docs/bad.md: not UTF-8 text"),
    (lambda repo: (repo / "benchmarks/results/pep_band.json").write_text("{}"),
     "README.md: block findings: a result file it reads lacks what it needs (KeyError: 'lam')"),
])
def test_bad_pages_or_results_are_one_line_errors_and_nothing_is_written(tmp_path, edit, message):
    repo = _copy_repository(tmp_path)
    (repo / "docs/studies/digits.md").write_text("<!-- findings:begin digits-tuned -->\nstale\n<!-- findings:end digits-tuned -->\n")
    edit(repo)
    pages = {p: p.read_bytes() for p in [repo / "README.md", *(repo / "docs").rglob("*.md")]}
    for flag in ("--check", "--write"):
        rc, out = run_stam(["findings", flag, "--root", str(repo)])
        assert rc == 2 and len(out) == 1 and out[0].startswith("stam: error: ") and message in out[0], out
    assert {p: p.read_bytes() for p in pages} == pages


def test_findings_root_must_be_a_repository(tmp_path):
    rc, out = run_stam(["findings", "--root", str(tmp_path)])
    assert rc == 2 and out == [f"stam: error: --root {tmp_path}: no README.md there; give the toolkit's repository"]


def test_the_recorded_demo_states_the_committed_findings():
    """The demo's recorded output (the README's sample) begins with the conclusion the generator gives from the
    committed results now, and labels its own run's numbers as an illustration (so a changed result file fails
    here until the demo is recorded again)."""
    from stam.figures.findings import committed_conclusion

    first = (ROOT / "benchmarks/results/demo_2cores.txt").read_text(encoding="utf-8").splitlines()[0]
    committed = committed_conclusion()
    assert first.startswith("Conclusion (committed results, stam findings): " + committed[:1].upper() + committed[1:] + ".")
    assert " Illustration (small budgets, not a result): " in first


def test_the_quick_tune_sample_is_a_trial_its_command_draws():
    """The quick ``stam tune`` sample of docs/practice.md shows, for each tuned algorithm, a setting among the trials
    its command draws now (the same Sobol points for any epochs), so a sample from another search space fails
    (the issue's: STAM at gamma 5.57e+04, lambda 0.0112, which the command no longer draws)."""
    from stam.dnn.tunespace import sample_trials
    from stam.dnn.tunetext import fmt_hyper

    block = next(b for b in BLOCKS if b.path.name == "practice.md" and "tune-quick" in b.lines[0])
    cmd = block.commands()[0]
    trials = int(_argv(cmd.text)[_argv(cmd.text).index("--trials") + 1])
    rows = [ln for ln in cmd.shown if re.match(r"\| \w+ \| tuned, ", ln)]
    assert rows
    for row in rows:
        label, _, hyper = [c.strip() for c in row.strip("|").split("|")][:3]
        drawn = [fmt_hyper(o) for o in sample_trials(label.lower(), trials, 0)]
        assert hyper in drawn, (label, hyper, drawn)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped (word characters, blanks and hyphens
    kept), blanks as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_anchor_link_between_the_pages_resolves():
    """A link ``page.md#anchor`` (README.md and docs/) names a heading of that page: a moved or renamed section
    (a chronicle moved to docs/studies/) cannot leave a link behind."""
    assert _slug("The equal-budget comparison: `stam tune`") == "the-equal-budget-comparison-stam-tune"
    bad = []
    for page in DOC_FILES:
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md)?#([\w-]+)\)", page.read_text(encoding="utf-8")):
            dest = (page.parent / target).resolve() if target else page
            slugs = {_slug(m) for m in re.findall(r"^#+ (.*)$", dest.read_text(encoding="utf-8"), re.M)}
            if anchor not in slugs:
                bad.append(f"{page.relative_to(ROOT)}: {target}#{anchor}")
    assert not bad, bad


def test_the_width1_block_says_where_its_settings_came_from():
    """The width-1 row names the tuning its settings were transferred from: the committed H200 run's text (a file
    written before ``settings_from``) and a new run's field alike; a source other than the quoted study says so."""
    import json

    from stam.figures import findings

    old = json.loads((ROOT / findings.GPU_WIDTH1).read_text())
    assert findings._settings_from(old) == ("benchmarks/results/cifar10_study_bn", 5, 4)
    new = {**old, "settings_from": {"file": findings.CIFAR_TUNE, "study": {"epochs": 45, "trials": {"stam": 16, "bc": 16}},
                                   "provisional": False}}
    assert findings._settings_from(new) == (findings.CIFAR_TUNE, 45, 16)
    block = findings._gpu_block(findings.Results(ROOT))
    assert "`benchmarks/results/cifar10_study_bn` (a 5-epoch tuning, 4 trials per method), not the settings of" in block


def test_the_width1_block_states_paired_differences_where_the_run_has_them():
    """A width-1 run written with ``paired`` (STAM - BC, STAM - BR by seed) has them in its row; the committed run,
    written before, states none."""
    from stam.figures import findings

    assert findings._paired_sentence(None) == ""
    d = {"a": "stam", "b": "bc", "seeds": 3, "mean": -4.0, "std": 1.0, "ci95": [-6.5, -1.5]}
    assert findings._paired_sentence([d]) == " Paired by seed: STAM \u2212 BC -4.0 [-6.5, -1.5] points over 3 seeds."
    assert "Paired by seed" not in findings._gpu_block(findings.Results(ROOT))
