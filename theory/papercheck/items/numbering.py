"""The paper's printed numbering of its labels (Theorem 2, eq. (25), Table 2, Section 2,
Appendix A), computed from the LaTeX source as LaTeX numbers it, so that everything the audit
shows can name what a reader of the printed paper sees beside the source label.

The rules are those of the paper's class and style, declared once here:

- ``article``: ``\\section`` (arabic, ``\\section*`` unnumbered) resets ``subsection``;
  ``equation``, ``table``, ``figure`` are numbered through the whole document (no
  ``\\numberwithin`` in the source); ``equation`` and each row of ``align``/``gather``/
  ``eqnarray`` (unless ``\\nonumber``/``\\notag``) step ``equation``, ``multline`` once, the
  starred forms never, ``aligned``/``split``/``cases`` inside a display never;
  ``\\caption`` steps the float's counter (``table``, ``figure``, ``algorithm``);
- amsmath's ``subequations``: the parent number ``N`` is stepped once (a ``\\label`` right after
  ``\\begin{subequations}`` names it), the displays inside are ``Na``, ``Nb``, ...;
- ``jmlr2e.sty`` (:data:`CLASS_THEOREMS`): ``example`` has its own counter; ``theorem``, ``lemma``,
  ``proposition``, ``remark``, ``corollary``, ``definition``, ``conjecture`` and ``axiom`` share
  the ``theorem`` counter, never reset by sections;
- ``\\newtheorem`` lines of the source's preamble add to or override these;
- the appendix package's ``appendices`` (or ``\\appendix``): sections restart at A, B, ...;
  no other counter is reset;
- a ``\\label`` names the innermost numbered thing open around it (LaTeX's ``\\@currentlabel``:
  the last counter stepped in the enclosing groups), else the current section.

An environment the source uses but neither its preamble nor the style declares (the paper's
``assumption``) is counted by one of :data:`UNDECLARED_COUNTERS`: by default a counter of its own,
the usual ``\\newtheorem{assumption}{Assumption}``; with ``"theorem"`` it shares the ``theorem``
counter (``\\newtheorem{assumption}[theorem]{Assumption}``, as jmlr2e's own statements do).  The
printed paper may have been built either way, so every number that differs between the two (the
undeclared statements themselves and every statement of the shared counter after the first of
them: in the paper, Lemma conv-lemma is Lemma 6 one way and Lemma 8 the other) is marked
``declared=False`` (printed with a ``*``) and carries the other numbering in ``alternative``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stam.theory.params import UNDECLARED_COUNTERS

#: jmlr2e.sty's \newtheorem lines: environment -> (counter, printed name)
CLASS_THEOREMS = {
    "example": ("example", "Example"), "theorem": ("theorem", "Theorem"), "lemma": ("theorem", "Lemma"),
    "proposition": ("theorem", "Proposition"), "remark": ("theorem", "Remark"),
    "corollary": ("theorem", "Corollary"), "definition": ("theorem", "Definition"),
    "conjecture": ("theorem", "Conjecture"), "axiom": ("theorem", "Axiom"),
}
#: displays: environment -> how its rows are numbered ("each": every row unless \nonumber; "one": once)
DISPLAYS = {"equation": "one", "align": "each", "gather": "each", "eqnarray": "each", "multline": "one",
            "flalign": "each", "alignat": "each"}
UNNUMBERED = frozenset({"equation*", "align*", "gather*", "eqnarray*", "multline*", "flalign*", "alignat*",
                        "displaymath"})
FLOATS = {"table": "Table", "table*": "Table", "figure": "Figure", "figure*": "Figure", "algorithm": "Algorithm"}
#: environments of the source that are not statements even though undeclared (layout, lists, math)
_LAYOUT = frozenset({"document", "abstract", "keywords", "itemize", "enumerate", "description", "proof", "center",
                     "tabular", "aligned", "split", "cases", "array", "matrix", "pmatrix", "bmatrix", "algorithmic",
                     "subequations", "appendices", "minipage", "small", "footnotesize", "flushleft", "flushright"})


_NEWTHEOREM = re.compile(r"\\newtheorem\{([^}]*)\}(?:\[([^]]*)\])?\{([^}]*)\}(?:\[([^]]*)\])?")
_TOKEN = re.compile(r"\\(begin|end)\{([^}]*)\}|\\label\{([^}]*)\}|\\(section|subsection)(\*?)\s*[\[{]|\\appendix\b"
                    r"|\\caption\b|\\\\|\\nonumber\b|\\notag\b|\\tag\{([^}]*)\}")


@dataclass(frozen=True)
class Printed:
    """How the printed paper refers to a label: its ``kind`` (``equation``, ``statement``,
    ``section``, ``table``, ``figure``, ``algorithm``), its ``name`` (``Lemma``, ``Table``, ...; ``eq.``
    for an equation) and ``number`` (``25``, ``1a``, ``A``); ``declared``: False where the numbering
    rests on an assumed declaration (see the module docstring), ``alternative`` then the number
    under the other counting of :data:`UNDECLARED_COUNTERS` ("" where it is the same)."""

    label: str
    kind: str
    name: str
    number: str
    declared: bool = True
    alternative: str = ""

    @property
    def alternative_text(self) -> str:
        """``"Lemma 8"``: the printed text under the other counting ("" where none differs)."""
        return f"{self.name} {self.alternative}" if self.alternative else ""

    @property
    def text(self) -> str:
        if self.kind == "equation":
            return f"({self.number})"
        return f"{self.name} {self.number}" + ("" if self.declared else "*")


def _alph(n: int) -> str:
    return chr(ord("A") + n - 1) if 1 <= n <= 26 else str(n)


def _strip_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*", "", tex)


def theorem_environments(tex: str) -> dict:
    """environment -> (counter, printed name): jmlr2e's, then the source's \\newtheorem lines
    (``\\newtheorem{env}[shared]{Name}`` shares ``shared``'s counter)."""
    envs = dict(CLASS_THEOREMS)
    for env, shared, name, _within in _NEWTHEOREM.findall(_strip_comments(tex)):
        counter = envs[shared][0] if shared and shared in envs else (shared or env)
        envs[env] = (counter, name)
    return envs


def undeclared_environments(tex: str) -> list:
    """The environments the document body begins that are numbered statements although neither
    the preamble nor the style declares them (the paper's ``assumption``), in order of first use."""
    tex = _strip_comments(tex)
    start = tex.find(r"\begin{document}")
    envs = theorem_environments(tex[:max(start, 0)])
    body = tex[start:] if start >= 0 else tex
    used = re.findall(r"\\begin\{([^}]*)\}", body)
    skip = set(envs) | set(DISPLAYS) | UNNUMBERED | set(FLOATS) | _LAYOUT
    return list(dict.fromkeys(e for e in used if e not in skip))


@lru_cache(maxsize=16)
def printed_numbers(tex: str, undeclared: str = "own") -> dict:
    """label -> :class:`Printed` for every ``\\label`` of the document body, an undeclared
    environment counted as ``undeclared`` says (a key of :data:`UNDECLARED_COUNTERS`); a number that
    the other counting changes is marked ``declared=False`` with that number as ``alternative``."""
    if undeclared not in UNDECLARED_COUNTERS:
        raise ValueError(f"undeclared={undeclared!r}: give one of {', '.join(UNDECLARED_COUNTERS)}")
    this = _numbers(tex, undeclared)
    other = _numbers(tex, next(k for k in UNDECLARED_COUNTERS if k != undeclared))
    out = {}
    for lab, p in this.items():
        q = other.get(lab)
        alt = q.number if q is not None and q.number != p.number else ""
        out[lab] = Printed(p.label, p.kind, p.name, p.number, p.declared and not alt, alt)
    return out


def _numbers(tex: str, undeclared: str) -> dict:
    """label -> :class:`Printed` (no alternatives yet) of the document body of ``tex``, an undeclared
    environment counted as ``undeclared`` says."""
    tex = _strip_comments(tex)
    start = tex.find(r"\begin{document}")
    envs = theorem_environments(tex[:max(start, 0)])
    return _Counting(envs, undeclared).read(tex[start:] if start >= 0 else tex)


class _Counting:
    """LaTeX's counters as it reads a document body, one method per kind of token of :data:`_TOKEN`
    (the rules of the module docstring).  A frame of the group stack is ``[env, current (kind,
    name, number, declared) or None, display-state]``; the display state is ``{"mode": "each" or
    "one", "numbered": whether the row open now keeps its number}``."""

    def __init__(self, envs: dict, undeclared: str):
        self.envs, self.undeclared = envs, undeclared
        self.counters: dict[str, int] = {}
        self.section_alph = False
        self.sec_text = ""
        self.stack: list[list] = []
        self.top_current = None
        self.out: dict[str, Printed] = {}
        self.sub = {"parent": None, "n": 0}  # inside subequations: the parent number and the children so far

    def read(self, body: str) -> dict:
        """Every token of ``body`` in order; label -> :class:`Printed`."""
        for m in _TOKEN.finditer(body):
            kind, env, label, sec, star, tag = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
            text = m.group(0)
            if sec:
                if not star:
                    self.section(sec)
            elif text == r"\appendix" or (kind == "begin" and env == "appendices"):
                self.appendix(env if kind == "begin" else None)
            elif kind == "begin":
                self.begin(env)
            elif kind == "end":
                self.end(env)
            elif text == r"\caption":
                self.caption()
            elif text == "\\\\":
                self.row_break(last=re.match(r"\s*\\end\{", body[m.end():]) is not None)
            elif text in (r"\nonumber", r"\notag"):
                self.nonumber()
            elif tag is not None:
                self.tag(tag)
            elif label is not None:
                self.label(label)
        return self.out

    # -- counters
    def step(self, counter: str) -> int:
        self.counters[counter] = self.counters.get(counter, 0) + 1
        return self.counters[counter]

    def eq_number(self) -> str:
        if self.sub["parent"] is not None:
            self.sub["n"] += 1
            return f"{self.sub['parent']}{chr(ord('a') + self.sub['n'] - 1)}"
        return str(self.step("equation"))

    def unstep_eq(self) -> None:
        if self.sub["parent"] is not None:
            self.sub["n"] -= 1
        else:
            self.counters["equation"] -= 1

    def current(self):
        """What a ``\\label`` names now (LaTeX's ``\\@currentlabel``)."""
        for fr in reversed(self.stack):
            if fr[1] is not None:
                return fr[1]
        return self.top_current

    def _display(self):
        """The innermost open display's frame, or None."""
        return next((fr for fr in reversed(self.stack) if fr[0] in DISPLAYS), None)

    # -- tokens
    def section(self, sec: str) -> None:
        """``\\section`` or ``\\subsection`` (not starred)."""
        if sec == "section":
            n = self.step("section")
            self.counters["subsection"] = 0
            self.sec_text = _alph(n) if self.section_alph else str(n)
            self.top_current = ("section", "Appendix" if self.section_alph else "Section", self.sec_text, True)
        else:
            n = self.step("subsection")
            self.top_current = ("section", "Section", f"{self.sec_text}.{n}", True)

    def appendix(self, env) -> None:
        """``\\appendix``, or ``\\begin{appendices}`` (``env``: a group opens)."""
        self.counters["section"] = 0
        self.section_alph = True
        if env is not None:
            self.stack.append([env, None, None])

    def begin(self, env: str) -> None:
        frame = [env, None, None]
        if env in DISPLAYS:
            frame[2] = {"mode": DISPLAYS[env], "numbered": True}
            frame[1] = ("equation", "eq.", self.eq_number(), True)
        elif env == "subequations":
            self.sub["parent"], self.sub["n"] = self.step("equation"), 0
            frame[1] = ("equation", "eq.", str(self.sub["parent"]), True)
        elif env in self.envs:
            counter, name = self.envs[env]
            frame[1] = ("statement", name, str(self.step(counter)), True)
        elif env not in UNNUMBERED and env not in FLOATS and env not in _LAYOUT:
            counter = "theorem" if self.undeclared == "theorem" else env
            frame[1] = ("statement", env.capitalize(), str(self.step(counter)), False)
        self.stack.append(frame)

    def end(self, env: str) -> None:
        """Close the groups up to ``env``'s (an ``\\end`` of nothing open is ignored)."""
        if env not in [fr[0] for fr in self.stack]:
            return
        while self.stack:
            fr = self.stack.pop()
            if fr[0] in DISPLAYS and fr[2] is not None and not fr[2]["numbered"]:
                self.unstep_eq()  # the last row carried \nonumber
            if fr[0] == "subequations":
                self.sub["parent"] = None
            if fr[0] == env:
                break

    def caption(self) -> None:
        fl = next((fr for fr in reversed(self.stack) if fr[0] in FLOATS), None)
        if fl is not None:
            name = FLOATS[fl[0]]
            fl[1] = (name.lower(), name, str(self.step(name.lower())), True)

    def row_break(self, last: bool) -> None:
        """``\\\\`` in a display numbered by rows: a new row (``last``: before ``\\end``, it opens none)."""
        fr = self.stack[-1] if self.stack else None
        if fr is not None and fr[0] in DISPLAYS and fr[2]["mode"] == "each" and not last:
            if not fr[2]["numbered"]:
                self.unstep_eq()
            fr[2]["numbered"] = True
            fr[1] = ("equation", "eq.", self.eq_number(), True)

    def nonumber(self) -> None:
        fr = self._display()
        if fr is not None:
            fr[2]["numbered"] = False

    def tag(self, tag: str) -> None:
        fr = self._display()
        if fr is not None:
            if fr[2]["numbered"]:
                self.unstep_eq()
            fr[2]["numbered"] = True  # a tag replaces the number: nothing to give back at the end
            fr[1] = ("equation", "eq.", tag, True)

    def label(self, label: str) -> None:
        cur = self.current()
        if cur is not None and label not in self.out:
            self.out[label] = Printed(label, *cur)


def printed_text(labels, tex: str, undeclared: str = "own") -> str:
    """``"Lemma 3, (12)"``: the printed numbers of ``labels`` (a label the source lacks stays as it is),
    an undeclared environment counted as ``undeclared`` says (:func:`printed_numbers`)."""
    nums = printed_numbers(tex, undeclared)
    return ", ".join(nums[lab].text if lab in nums else lab for lab in labels)


def dependence_note(labels, tex: str, undeclared: str = "own") -> str:
    """The note that explains the ``*`` of the numbers of ``labels`` (:func:`printed_numbers`): which
    environments are undeclared, how they are counted here, and each starred number under the other
    counting; "" where none of ``labels`` is starred."""
    nums = printed_numbers(tex, undeclared)
    starred = [nums[lab] for lab in dict.fromkeys(labels) if lab in nums and not nums[lab].declared]
    if not starred:
        return ""
    envs = undeclared_environments(tex)
    names = ", ".join(envs) or "none"
    how = {"own": "each by a counter of its own", "theorem": "on the theorem counter, shared with the lemmas"}
    other = next(k for k in UNDECLARED_COUNTERS if k != undeclared)
    order = sorted(starred, key=lambda p: (p.name, _key(p.number)))
    pairs = ", ".join(dict.fromkeys(f"{p.name} {p.number} -> {p.alternative}" for p in order if p.alternative))
    return (f"* the source never declares the environment(s) {names}; numbered here {how[undeclared]} "
            f"(--assumption-counter {undeclared}); {how[other]} (--assumption-counter {other}) "
            f"the starred numbers would be: {pairs}.")


def _key(number: str):
    m = re.match(r"(\d+)(.*)", number)
    return (int(m.group(1)), m.group(2)) if m else (10**9, number)


__all__ = ["Printed", "printed_numbers", "printed_text", "theorem_environments", "undeclared_environments",
           "dependence_note", "CLASS_THEOREMS"]
