"""``stam paper-check``: the paper audit.

The items live in :mod:`stam.theory.papercheck.items` (one small function per item, found through a
registry); each returns what the paper prints, what is derived in :mod:`stam.theory.symbolic.constants` /
:mod:`stam.theory.symbolic.chain` and a counterexample or None, and the verdict follows by one rule
(:func:`stam.theory.papercheck.items.verdict`): ``ok``, ``misprint`` (the print fails on an instance but
the paper prints the derived form elsewhere: a slip), ``false`` (the print fails on an instance of
the stated class, for iterates on an actual STAM run, and the right form is printed nowhere),
``unproven`` (a witness satisfies every premise the proof step uses but is not reachable, and a
stated search over actual runs found no counterexample), ``gap`` (the proof uses something the
paper does not state) or ``failed to derive``; each names its evidence kind.
This module holds the command's one library entry, ``paper_check(params) -> PaperCheck``, and its output
(:func:`text`); the machinery the items share (tiny STAM runs, seeded
searches, rounding, display) is :mod:`stam.theory.symbolic.stamruns`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import lru_cache

from stam.io import STALE_S, atomic_write_texts, dumps, folder_lock, provenance, remove_stale_files
from stam.theory.symbolic import numeric as num
from stam.theory.papercheck.items import EVIDENCE, PAPER_CHECK, VERDICTS, evaluate, evidence, registry
from stam.theory.symbolic.stamruns import SEED, pretty, rounded
from stam.theory.papercheck.items.coverage import coverage, coverage_text, read_paper
from stam.theory.papercheck.items.numbering import dependence_note, printed_numbers, printed_text
from stam.theory.symbolic.mathml import latex, mathml
from stam.theory.params import PaperCheckParams
from stam.theory.papercheck.store import STORED_FINDING, read_store, write_store


@dataclass
class AuditFinding:
    """One evaluated item as reported: the first five fields are the JSON keys of old; the rest
    are added to the JSON (``covers``, ``gap``, ``elsewhere``, ``error``, MathML and LaTeX)."""

    label: str
    printed: object  # text, or the item's sympy form until first asked for (text())
    derived: object
    verdict: str  # ok | misprint | false | unproven | gap | failed to derive
    counterexample: dict | None
    note: str = ""
    covers: tuple = ()
    gap: dict | None = None
    elsewhere: list = field(default_factory=list)
    error: str = ""
    math: dict = field(default_factory=dict)  # printed/derived as MathML and LaTeX (where sympy)
    evidence: str = "none"  # what the verdict rests on (stam.theory.papercheck.items.EVIDENCE)
    search: dict | None = None  # the search on actual runs (Search.as_json()), where the item made one
    network: dict | None = None  # what holds for H = (lam/2)||x - y||^2 (Network.as_json()), where the item says
    formulas: tuple = field(default=(), repr=False, compare=False)  # (printed, derived) as returned: math on demand

    def text(self, key: str) -> str:
        """``printed`` or ``derived`` as text (an item's sympy form is printed when first asked for:
        the brief never needs it)."""
        val = getattr(self, key)
        if not isinstance(val, str):
            val = _text(val)
            setattr(self, key, val)
        return val

    def as_json(self) -> dict:
        d = {"label": self.label, "printed": self.text("printed"), "derived": self.text("derived"), "verdict": self.verdict,
             "counterexample": self.counterexample, "covers": list(self.covers), "gap": self.gap,
             "elsewhere": self.elsewhere, "evidence": self.evidence, "search": self.search, "network": self.network}
        if self.error:
            d["error"] = self.error
        d.update(self.mathml())
        return d

    def mathml(self) -> dict:
        """The printed and derived forms as MathML and LaTeX (made once, when first asked for: the
        brief and plain tables never need them)."""
        if self.formulas and not self.math:
            for key, val in zip(("printed", "derived"), self.formulas):
                m = _math(val)
                if m:
                    self.math[f"{key}_mathml"], self.math[f"{key}_latex"] = m["mathml"], m["latex"]
            self.formulas = ()
        return self.math


# --------------------------------------------------------------------------------------------
# the items, evaluated
# --------------------------------------------------------------------------------------------


def _text(x) -> str:
    return x if isinstance(x, str) else pretty(x)


def _math(x) -> dict:
    """MathML (sympy's presentation printer) and LaTeX of a sympy object; {} for text."""
    if isinstance(x, str) or x is None:
        return {}
    try:
        return {"mathml": mathml(x), "latex": latex(x)}
    except Exception:  # noqa: BLE001 - a formula that does not print stays text
        return {}


def finding(ev) -> AuditFinding:
    """The reported form of one :class:`stam.theory.papercheck.items.Evaluated`."""
    from dataclasses import asdict

    it, res = ev.item, ev.result
    if res is None:
        return AuditFinding(it.label, "", "", ev.verdict, None, f"failed to derive: {ev.error}", it.covers,
                       error=ev.error)
    kind, ce = evidence(res)
    srch = res.search_result()
    gap = asdict(res.gap) if res.gap is not None else None
    if gap is not None and gap.get("witness") is not None:
        gap["witness"] = rounded(gap["witness"])
    note = res.note
    if res.gap is not None:
        note = (note + " " if note else "") + f"Gap: uses {res.gap.uses}; stated: {res.gap.states}; " \
               f"closes it: {res.gap.closes}"
    return AuditFinding(it.label, res.printed, res.derived, ev.verdict, ce, note, it.covers, gap,
                   [{"where": o.where, "agrees": bool(o.agrees), "printed": bool(o.printed)} for o in res.elsewhere],
                   evidence=kind, search=rounded(srch.as_json()) if srch is not None else None,
                   network=rounded(net.as_json()) if (net := res.network_result()) is not None else None,
                   formulas=(res.printed, res.derived))


@lru_cache(maxsize=None)
def evaluated() -> tuple:
    """Every registered item evaluated once per process (:func:`stam.theory.papercheck.items.evaluate`)."""
    return tuple(evaluate(it) for it in registry())


@lru_cache(maxsize=None)
def findings() -> tuple[AuditFinding, ...]:
    """All audited items, in the order of the paper (computed once per process; the searches are
    seeded with :data:`SEED`)."""
    return tuple(safe_finding(ev) for ev in evaluated())


#: ``stam paper-check`` keeps what it derived in the toolkit's cache (:func:`stam.io.cache_home`:
#: ``$STAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/stam`` or ``~/.cache/stam``; ``STAM_CACHE_DIR=off``: nowhere)
#: the fields of a stored finding (:data:`stam.theory.papercheck.store.STORED_FINDING`)
_FIELDS = tuple(STORED_FINDING.required)


def source_key() -> str:
    """A digest of everything the findings are computed from: the sources of :mod:`stam.theory`
    (items included), :mod:`stam.steps` and :mod:`stam.rules`, the bundled paper, the seed and the versions of Python,
    numpy, sympy and mpmath.  Any change to them gives another key, so a stored result is never stale."""
    import hashlib
    import sys
    from pathlib import Path

    import numpy
    import sympy

    from stam import rules, steps

    root = Path(__file__).resolve().parents[1]  # theory/: every room's sources and the paper
    from importlib.metadata import version

    h = hashlib.sha256(f"{sys.version} numpy {numpy.__version__} sympy {sympy.__version__} mpmath {version('mpmath')} "
                       f"seed {SEED}".encode())
    for f in sorted(root.rglob("*.py")) + [root / "stam-paper.tex", Path(rules.__file__).resolve(),
                                                                  Path(steps.__file__).resolve()]:
        name = f.relative_to(root).as_posix() if root in f.parents else f.name
        h.update(name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:24]


def cache_file():
    """The file of the stored findings for this :func:`source_key` in the toolkit's cache
    (:func:`stam.io.cache_home`), or None when storing is off."""
    from stam.io import cache_home

    base = cache_home()
    return None if base is None else base / f"paper-check-{source_key()}.json"


def stored_findings(with_math: bool = False) -> tuple[AuditFinding, ...]:
    """:func:`findings`, read from :func:`cache_file` when an earlier run stored them (with the
    MathML when ``with_math``), else computed and stored there atomically, replacing the stores of
    other sources (never when an item failed to derive).  Only a store
    :func:`stam.theory.papercheck.store.read_store` accepts is read back; any other (damaged, edited, a link, a
    folder, unreadable, huge) is derived anew and replaced, and a store that cannot be written is
    skipped: the output is the same as with no store.  Temporaries of a killed run's write beside
    the store (``.paper-check-*.json.*``) are removed: all of them where no run holds the store folder's lock (every
    write holds it), else those older than :data:`stam.io.STALE_S`."""
    import contextlib

    from stam.errors import UsageError

    path = cache_file()
    key = path.stem.removeprefix("paper-check-") if path is not None else ""
    if path is not None:
        if path.parent.is_dir():
            with folder_lock(path.parent, wait=False) as free:  # free: no write in progress, every temporary a killed one's
                remove_stale_files(path.parent, ".paper-check-*.json.*", older_than=0 if free else STALE_S)
        store = read_store(path, key)
        if store is not None and (store["with_math"] or not with_math):
            return tuple(AuditFinding(**{**row, "covers": tuple(row["covers"])}) for row in store["findings"])
    items = findings()
    if path is not None and all(f.verdict != "failed to derive" for f in items):
        if with_math:
            for f in items:
                f.mathml()
        rows_ = [{k: f.text(k) if k in ("printed", "derived") else getattr(f, k) for k in _FIELDS} for f in items]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with folder_lock(path.parent):
                write_store(path, key, with_math, rows_)
            for old in path.parent.glob("paper-check-*.json"):  # stores of other sources are stale
                if old != path:
                    with contextlib.suppress(OSError):
                        old.unlink()
        except (OSError, ValueError, UsageError):  # not writable, full, a folder in its place
            pass
    return items


def safe_finding(ev) -> AuditFinding:
    """:func:`finding`, or a ``failed to derive`` row if even reporting the item raises."""
    try:
        return finding(ev)
    except Exception as exc:  # noqa: BLE001 - one item must not stop the audit
        err = f"{type(exc).__name__}: {exc} (while reporting it)"
        return AuditFinding(ev.item.label, "", "", "failed to derive", None, f"failed to derive: {err}", ev.item.covers,
                       error=err)


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _short(ce: dict | None) -> str:
    if ce is None:
        return ""
    keep = {key: v for key, v in ce.items() if key not in ("instance", "iterates", "quantities", "eq39", "vectors",
                                                           "premise_gaps")}
    if "instance" in ce:
        inst = ce["instance"] if isinstance(ce["instance"], dict) else {}  # a described instance: text
        keep = {**{key: inst[key] for key in ("lam", "gamma", "beta") if key in inst}, "t": ce.get("t"), **keep}
    return "; ".join(f"{key}={v}" for key, v in keep.items() if key != "t" or v is not None)


def _vw(items) -> int:
    return max([8] + [len(f.verdict) for f in items])


def counts(items) -> dict:
    """verdict -> number of items, in the order of :data:`VERDICTS`."""
    return {v: sum(f.verdict == v for f in items) for v in VERDICTS}


def search_text(srch: dict | None) -> str:
    """One line: what a search on actual runs tried and found."""
    if not srch:
        return ""
    found = "found a counterexample" if srch.get("found") else "no counterexample"
    closest = srch.get("closest") or {}
    what = closest.get("margin briefly", "printed gap over the print's excess on the derivation; < 0 iff it fails")
    near = f", smallest margin {closest['margin']:.3g} ({what})" if "margin" in closest else ""
    cls = list(srch["classes"])
    classes = "; ".join(cls) if len(cls) <= 3 else f"{len(cls)} classes, e.g. {cls[0]}; {cls[-1]} (all in --json)"
    return f"{found} in {srch['instances']} actual runs ({srch['steps']} steps; {classes}; {srch['method']}{near})"


def summary(items, cov: dict | None = None) -> str:
    """The count of each verdict and, with ``cov`` (:func:`stam.theory.papercheck.items.coverage.coverage`), the coverage."""
    n = counts(items)
    text = f"{len(items)} items: " + ", ".join(f"{c} {v}" for v, c in n.items()
                                               if c or v in ("ok", "misprint", "false", "unproven"))
    text += (". false: fails on an instance (a STAM run where it speaks of iterates); unproven: its proof does not give "
             "it, no counterexample on actual runs. The toolkit computes with the derived forms (stam stepsize "
             "--as-printed uses the printed ones).")
    if cov is not None:
        text += f"\nCoverage: {coverage_text(cov)}, counted in the paper's LaTeX source"
        if cov["missing"]:
            text += "; not audited: " + ", ".join(cov["missing"])
        if cov["unknown"]:
            text += "; items cover labels the paper lacks: " + ", ".join(cov["unknown"])
    return text


def paper_refs(f, tex: str | None = None, counter: str = "own") -> str:
    """The printed numbers (Lemma 6*, (17), ...) of the labels item ``f`` covers, computed from the
    paper's source (:func:`stam.theory.papercheck.items.numbering.printed_text`, the undeclared ``assumption``
    counted as ``counter`` says); ``-`` where it covers none."""
    if not f.covers:
        return "-"
    return printed_text(f.covers, tex if tex is not None else read_paper(), counter)


def _assumed_note(items, tex: str | None, counter: str = "own") -> str:
    """What the ``*`` of a printed number means, with every starred number under the other counting."""
    note = dependence_note([lab for f in items for lab in f.covers], tex if tex is not None else read_paper(), counter)
    return f"Paper numbers computed from the LaTeX source (jmlr2e.sty, article); {note}" if note else ""


def table(items, as_printed: bool = False, cov: dict | None = None, tex: str | None = None, counter: str = "own") -> str:
    lines = []
    w, vw = max(len(f.label) for f in items), _vw(items)
    lines.append(f"{'label':<{w}}  {'verdict':<{vw}}  printed  ->  derived")
    lines.append("-" * (w + 40))
    pad = f"{'':<{w}}  {'':<{vw}}  "
    for f in items:
        lines.append(f"{f.label:<{w}}  {f.verdict:<{vw}}  printed: {f.text('printed')}")
        lines.append(f"{pad}derived: {f.text('derived')}")
        lines.append(f"{pad}paper:   {paper_refs(f, tex, counter)}")
        if f.note:
            lines.append(f"{pad}note:    {f.note}")
        lines.append(f"{pad}evidence: {f.evidence} ({EVIDENCE.get(f.evidence, '?')})")
        if f.counterexample is not None:
            lines.append(f"{pad}counterexample: {_short(f.counterexample)}")
        if f.search is not None:
            lines.append(f"{pad}search: {search_text(f.search)}")
        if f.network is not None:
            lines.append(f"{pad}network coupling: {network_text(f.network)}")
        if f.gap is not None and f.gap.get("witness") is not None:
            lines.append(f"{pad}gap witness: {_short(f.gap['witness'])}")
    lines += ["", summary(items, cov)]
    note = _assumed_note(items, tex, counter)
    lines += [note] if note else []
    if as_printed:
        lines += ["", _as_printed_effect()]
    return "\n".join(lines)


def network_text(net: dict, short: bool = False) -> str:
    """What an item says of the network coupling ``H = (lam/2)||x - y||^2`` (:class:`stam.theory.papercheck.items.Network`)."""
    from stam.theory.papercheck.items import NETWORK_EVIDENCE

    head = f"{'holds' if net['holds'] else 'not shown'} for H = (lam/2)||x-y||^2 ({net['evidence']}"
    if short:
        return head + (f", {len(net['points'])} points" if net.get("points") else "") + ")"
    return head + f": {NETWORK_EVIDENCE.get(net['evidence'], '?')}): {net['how']}"


def brief(items, cov: dict | None = None, tex: str | None = None, counter: str = "own") -> str:
    """One line per item: label, the paper's printed numbers of what it covers, verdict, its
    evidence kind and what is wrong (the note's first clause; for an unproven item, what the search
    on actual runs tried)."""
    refs = [paper_refs(f, tex, counter) for f in items]
    w, vw, pw = max(len(f.label) for f in items), _vw(items), max([5] + [len(r) for r in refs])
    ew = max([8] + [len(f.evidence) for f in items])
    lines = [f"{'label':<{w}}  {'paper':<{pw}}  {'verdict':<{vw}}  {'evidence':<{ew}}  note"]
    for f, ref in zip(items, refs):
        note = f.note.split(" (derived by")[0]
        if f.verdict == "unproven" and f.search:
            note += (f" [no counterexample in {f.search['instances']} actual runs, {f.search['steps']} steps]")
        if f.network is not None:
            note += f" [network coupling: {network_text(f.network, short=True)}]"
        lines.append(f"{f.label:<{w}}  {ref:<{pw}}  {f.verdict:<{vw}}  {f.evidence:<{ew}}  {note}")
    if cov is not None:
        lines += ["", summary(items, cov)]
    note = _assumed_note(items, tex, counter)
    return "\n".join(lines + ([note] if note else []))


def _as_printed_effect() -> str:
    """What the printed forms change in ``stam stepsize`` for a reference network setting."""
    c = num.quadratic_coupling(0.5, L1=1.0, A=1.0, C=0.1)
    a, b = num.recommend(c, 2.3, 0.0, 0.1), num.recommend(c, 2.3, 0.0, 0.1, as_printed=True)
    rows = ["Effect of the printed forms on stam stepsize (H = (0.5/2)||x-y||^2, L1=1, A=1, C=0.1, "
            "delta0+M0'=2.3, eps=0.1):", f"  {'':<10} {'derived':>14} {'as printed':>14}"]
    for key in ("gamma_max", "gamma", "K3", "M", "beta_min", "T_min"):
        rows.append(f"  {key:<10} {a[key]:>14.6g} {b[key]:>14.6g}")
    return "\n".join(rows)


def rows(items, tex: str | None = None, counter: str = "own") -> list:
    """The JSON rows of ``items``, each with ``paper``: the printed numbering of the labels it covers
    (the undeclared ``assumption`` counted as ``counter`` says, a number that rests on it starred), and
    ``paper_alternative``: those starred numbers under the other counting (label -> text)."""
    nums = printed_numbers(tex if tex is not None else read_paper(), counter)
    out = []
    for f in items:
        row = f.as_json()
        row["paper"] = {lab: nums[lab].text for lab in f.covers if lab in nums}
        row["paper_alternative"] = {lab: nums[lab].alternative_text for lab in f.covers
                                    if lab in nums and nums[lab].alternative}
        out.append(row)
    return out


def result(items, cov: dict | None = None, tex: str | None = None, counter: str = "own") -> dict:
    """The ``paper-check`` result (what ``stam paper-check --out`` writes) of the findings ``items``,
    with the coverage of the paper's labelled displays (computed from the bundled paper if not given)."""
    tex = tex if tex is not None else read_paper()
    cov = cov if cov is not None else coverage(registry(), tex)
    return {"kind": "paper-check", "provenance": provenance(), "items": rows(items, tex, counter), "coverage": cov}


def paper_text(path) -> str:
    """``--paper FILE``: the text of a LaTeX source (one line naming the file otherwise)."""
    from stam.errors import require
    from stam.io import read_input_text

    text = read_input_text(path, f"--paper {path}", max_bytes=20_000_000)
    require("\x00" not in text and any(mark in text for mark in ("\\documentclass", "\\begin{", "\\section", "\\label{")),
            f"--paper {path}: not a LaTeX source (no \\documentclass, \\begin, \\section or \\label in it); "
            "give the paper's .tex file")
    return text


def check_outputs(params) -> None:
    """The formats asked for and the files to be written, checked before any work (one line each)."""
    from stam.errors import require
    from stam.io import check_out_dir, check_out_file

    require(not (params.json and params.brief), "--json and --brief are two formats of the same findings; give one")
    if params.out is not None:
        check_out_file(params.out, "--out")
    if params.corrected is not None:
        out = check_out_dir(params.corrected, "--corrected")
        for name in ("corrected.tex", "corrected.md"):
            check_out_file(out / name, "--corrected")


@dataclass(frozen=True)
class PaperCheck:
    """What :func:`paper_check` returns: the findings ``items``, the ``coverage`` of the paper's labelled displays,
    the paper's text ``tex`` and the assumption ``counter`` they were rendered with (:func:`text` prints them)."""

    items: tuple
    coverage: dict
    tex: str
    counter: str


def paper_check(params: PaperCheckParams) -> PaperCheck:
    """``stam paper-check`` as a library call (this module's one entry; its parameters:
    :class:`stam.theory.params.PaperCheckParams`): the outputs checked, the result and the corrected
    statements written where asked; the findings returned, nothing printed (:func:`text` is the output)."""
    check_outputs(params)
    tex = paper_text(params.paper) if params.paper is not None else read_paper()
    counter = params.assumption_counter or "own"
    items = stored_findings(with_math=bool(params.json or params.out))
    cov = coverage(items, tex)  # every registered item has its finding
    files = {}  # written all or nothing: a full disk at --out leaves no --corrected files either
    if params.corrected:
        from stam.theory.papercheck import corrected

        files.update(corrected.documents(params.corrected, evaluated()))
    if params.out:
        files.update(PAPER_CHECK.texts(result(items, cov, tex, counter), params.out))
    if files:
        write_all(files, params.corrected)
    return PaperCheck(items, cov, tex, counter)


def write_all(files: dict, folder=None) -> None:
    """:func:`stam.io.atomic_write_texts` of ``files``; ``folder`` (``--corrected``) made for them, and removed
    again, when it was made here, if the writes fail."""
    from pathlib import Path

    made = folder is not None and not Path(folder).exists()
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
    try:
        atomic_write_texts(files)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                Path(folder).rmdir()
        raise


def text(params: PaperCheckParams, found: PaperCheck) -> str:
    """What ``stam paper-check`` prints of ``found``, in the format ``params`` asks for."""
    items, cov, tex, counter = found.items, found.coverage, found.tex, found.counter
    if params.json:
        lines = [dumps(rows(items, tex, counter))]
    elif params.brief:
        lines = [brief(items, cov, tex, counter) + ("\n\n" + _as_printed_effect() if params.as_printed else "")]
    else:
        lines = [table(items, as_printed=params.as_printed, cov=cov, tex=tex, counter=counter)]
    if params.corrected and not params.json:
        lines.append(f"Corrected statements: {params.corrected}/corrected.tex, {params.corrected}/corrected.md")
    return "\n".join(lines)
