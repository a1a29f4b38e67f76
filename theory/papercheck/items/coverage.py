"""Coverage of the audit: the labelled displays (equations) and labelled statements (lemmas,
theorems, assumptions, definitions, remarks) of Section 2 and the appendices, found by parsing
the paper's LaTeX source, against the labels the registered items cover.

The paper's source travels with the toolkit (``theory/stam-paper.tex``, a copy of
``stam-paper.tex``); ``stam paper-check --paper FILE`` counts against another copy."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

#: environments whose \label is a labelled display
DISPLAYS = frozenset({"equation", "equation*", "align", "align*", "subequations", "gather", "multline", "eqnarray"})
#: environments whose \label is a labelled statement
STATEMENTS = frozenset({"lemma", "theorem", "definition", "assumption", "remark", "proposition", "corollary"})

_TOKEN = re.compile(r"\\(begin|end)\{([^}]*)\}|\\label\{([^}]*)\}|\\section\*?\{|\\appendix\b")


@dataclass
class Labels:
    """Labels per part of the paper, each with the kind of its innermost environment."""

    section2: dict = field(default_factory=dict)  # label -> kind
    appendices: dict = field(default_factory=dict)

    @property
    def all(self) -> dict:
        return {**self.section2, **self.appendices}


def bundled_paper() -> Path:
    return Path(str(resources.files("stam.theory").joinpath("stam-paper.tex")))


def _strip_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*", "", tex)


def parse_labels(tex: str) -> Labels:
    """Labels inside display or statement environments of Section 2 (the second ``\\section``) and
    of the appendices (``\\begin{appendices}`` ... ``\\end{appendices}``, or after ``\\appendix``)."""
    tex = _strip_comments(tex)
    out = Labels()
    stack: list[str] = []
    section, in_app = 0, False
    for m in _TOKEN.finditer(tex):
        kind, env, label = m.group(1), m.group(2), m.group(3)
        text = m.group(0)
        if text.startswith("\\section"):
            if not in_app:
                section += 1
            continue
        if text == "\\appendix":
            in_app = True
            continue
        if kind == "begin":
            if env == "appendices":
                in_app = True
            stack.append(env)
        elif kind == "end":
            if env == "appendices":
                in_app = False
                section = 10**6  # nothing after the appendices counts
            if env in stack:
                while stack and stack.pop() != env:
                    pass
        elif label is not None:
            inner = next((e for e in reversed(stack) if e in DISPLAYS or e in STATEMENTS), None)
            if inner is None:
                continue  # a section label, an algorithm, a table
            what = "display" if inner in DISPLAYS else inner
            if in_app:
                out.appendices[label] = what
            elif section == 2:
                out.section2[label] = what
    return out


def read_paper(path: str | Path | None = None) -> str:
    p = bundled_paper() if path is None else Path(path)
    return p.read_text(encoding="utf-8", errors="replace")


def coverage(items, tex: str) -> dict:
    """``{"audited": n, "total": N, "missing": [...], "unknown": [...], "outside": [...], "by_kind":
    {...}}`` for the labels of Section 2 and the appendices; ``unknown``: labels items claim that the
    paper lacks (misspelt); ``outside``: labels of the other sections that items also cover (the
    algorithm, the model, the quantisation set; not counted)."""
    labels = parse_labels(tex).all
    covered = {lab for it in items for lab in it.covers}
    anywhere = set(re.findall(r"\\label\{([^}]*)\}", _strip_comments(tex)))
    audited = [lab for lab in labels if lab in covered]
    by_kind = {}
    for lab, kind in labels.items():
        k = "display" if kind == "display" else "statement"
        a, n = by_kind.get(k, (0, 0))
        by_kind[k] = (a + (lab in covered), n + 1)
    return {"audited": len(audited), "total": len(labels), "missing": [lab for lab in labels if lab not in covered],
            "unknown": sorted(covered - anywhere), "outside": sorted((covered & anywhere) - set(labels)), "by_kind": {k: {"audited": a, "total": n} for k, (a, n) in by_kind.items()}}


def coverage_text(cov: dict) -> str:
    """``"86/86 labels of Section 2 and Appendices A-B audited (73/73 labelled displays plus 13/13
    labelled statements: lemmas, theorems, ...)"``: the two kinds counted apart (a statement is not
    a display)."""
    text = f"{int(cov['audited'])}/{int(cov['total'])} labels of Section 2 and Appendices A-B audited"
    kinds = cov.get("by_kind") or {}
    if kinds:
        d, st = kinds.get("display", {"audited": 0, "total": 0}), kinds.get("statement", {"audited": 0, "total": 0})
        text += (f" ({int(d['audited'])}/{int(d['total'])} labelled displays plus {int(st['audited'])}/{int(st['total'])} "
                 "labelled statements: lemmas, theorems, assumptions, definitions and remarks)")
    return text


__all__ = ["coverage_text", "parse_labels", "coverage", "read_paper", "bundled_paper", "Labels", "DISPLAYS", "STATEMENTS"]
