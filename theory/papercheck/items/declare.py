"""How an audit item is declared and judged: what an item returns (:class:`Result`, with its
:class:`Occurrence`, :class:`Gap`, :class:`Network`, :class:`Corrected`; its :class:`stam.theory.papercheck.chainsearch.Search`),
the ONE rule from a result to its verdict (:func:`verdict`, :func:`evidence`), the decorator :func:`item` and
:func:`evaluate`.  The modules of items import this module; the package :mod:`stam.theory.papercheck.items`
finds them (:func:`stam.theory.papercheck.items.registry` imports them) and re-exports every name here, so
neither names the other back (no import cycle, string imports included)."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # declared with the search (stam.theory.papercheck.chainsearch)
    from stam.theory.papercheck.chainsearch import Search


#: the verdicts, in the order the summary lists them
VERDICTS = ("ok", "misprint", "false", "unproven", "gap", "failed to derive")

#: what a verdict rests on (:func:`evidence`)
EVIDENCE = {
    "proof": "decided exactly (sympy derivation or identity)",
    "sampled": "no counterexample in a seeded search (the item's note says which)",
    "instance": "a counterexample that is an instance of the stated class",
    "run": "a counterexample on an actual run of STAM (Algorithm 1)",
    "premises": "a witness satisfying every premise the proof step uses, not shown reachable by STAM",
    "witness": "a witness that the stated hypotheses do not give what the proof uses",
    "none": "the derivation raised",
}

#: what an item's statement about the network coupling rests on (:class:`Network`)
NETWORK_EVIDENCE = {
    "certificate": "Lyapunov certificates of stam.theory.worstcase.lyapunov proven in exact rational arithmetic at the points named",
    "one-step certificate": "an S-procedure certificate over one STAM step (every G, F of the class and state), "
                            "proven in exact rational arithmetic at the points named",
}

@dataclass(frozen=True)
class Occurrence:
    """The same quantity or step printed elsewhere in the paper (``where``), and whether that
    print agrees with the derivation (``agrees``, computed by the item)."""

    where: str
    agrees: bool
    printed: bool = True  # False: a form the paper implies (its proof's needs, a recipe), printed nowhere


@dataclass(frozen=True)
class Gap:
    """A proof step that uses something not stated: what it ``uses``, what the paper ``states``
    instead, what would ``close`` it, and a ``witness`` (numbers or a derivation) that the stated
    hypotheses do not give what is used."""

    uses: str
    states: str
    closes: str
    witness: dict | None = None


@dataclass(frozen=True)
class Network:
    """What holds of an item's statement for the network coupling ``H = (lam/2)||x - y||^2`` (Section 3): ``holds``
    (True: proven there, at the ``points`` named when they are given), what it rests on (``evidence``, a key of
    :data:`NETWORK_EVIDENCE`), ``how`` in words, and the ``points`` (parameters and what was proven at each)."""

    holds: bool
    evidence: str
    how: str
    points: tuple = ()

    def as_json(self) -> dict:
        if self.evidence not in NETWORK_EVIDENCE:
            raise ValueError(f"network evidence {self.evidence!r} is not one of {', '.join(NETWORK_EVIDENCE)}")
        return {"holds": bool(self.holds), "evidence": self.evidence, "how": self.how, "points": list(self.points)}


class Tex(str):
    """Text that is already LaTeX (math mode): written as is into the LaTeX export, between ``$``
    in the Markdown one, and shown as it is in the terminal."""


@dataclass
class Corrected:
    """A lemma or theorem as corrected: its ``hypotheses`` (sympy relations or text), its
    ``conclusion`` and its ``constants`` (name -> sympy expression), all as the toolkit checks them."""

    name: str
    hypotheses: list
    conclusion: Any
    constants: dict = field(default_factory=dict)
    changes: str = ""


@dataclass
class Result:
    """What an item returns.  ``printed`` and ``derived`` are sympy expressions/relations or text;
    ``counterexample`` is a replayable dict of numbers where the printed form fails, else None."""

    printed: Any
    derived: Any
    counterexample: dict | None
    elsewhere: tuple = ()
    gap: Gap | None = None
    note: str = ""
    corrected: Corrected | Callable[[], Corrected] | None = None  # a callable is built only when asked for
    evidence: str = ""  # the kind of the counterexample or of the ok (EVIDENCE); "" = the default (see evidence())
    search: Search | Callable[[], Search] | None = None  # the search on actual runs (needed with evidence "premises")
    network: Network | Callable[[], Network | None] | None = None  # what holds for H = (lam/2)||x - y||^2 (Network)

    def corrected_statement(self) -> Corrected | None:
        return self.corrected() if callable(self.corrected) else self.corrected


    def search_result(self) -> Search | None:
        if callable(self.search):
            self.search = self.search()
        return self.search

    def network_result(self) -> Network | None:
        if callable(self.network):
            self.network = self.network()
        return self.network


def _declared(r: Result) -> str:
    ev = r.evidence
    if not ev and isinstance(r.counterexample, dict):
        ev = r.counterexample.get("evidence", "")
    if not ev:
        ev = "instance" if r.counterexample is not None else "witness" if r.gap is not None else "proof"
    if ev not in EVIDENCE or ev == "none":
        raise ValueError(f"evidence {ev!r} is not one of {', '.join(k for k in EVIDENCE if k != 'none')}")
    return ev


def evidence(r: Result) -> tuple[str, dict | None]:
    """The evidence the verdict rests on and its counterexample: the item's own, or the actual run
    its search found (which replaces a premise witness)."""
    ev = _declared(r)
    srch = r.search_result()
    if ev == "premises" and srch is not None and srch.found is not None:
        return "run", srch.found
    return ev, r.counterexample


def verdict(r: Result) -> str:
    """THE rule (see the module docstring)."""
    ev, ce = evidence(r)
    if ce is not None:
        if ev == "premises":
            if r.search_result() is None:
                raise ValueError("a premise witness without a search on actual runs: say what was searched")
            return "unproven"
        if ev not in ("instance", "run"):
            raise ValueError(f"a counterexample with evidence {ev!r}")
        return "misprint" if any(o.agrees and o.printed for o in r.elsewhere) else "false"
    if ev in ("instance", "run", "premises"):
        raise ValueError(f"evidence {ev!r} without a counterexample")
    return "gap" if r.gap is not None else "ok"


@dataclass(frozen=True)
class Item:
    label: str
    covers: tuple
    func: Callable[[], Result]
    module: str
    order: int


REGISTRY: list[Item] = []


def item(label: str, covers: tuple | list | str = ()):
    """Declare an item: ``@item("eq24", covers=("eq24",))`` on a function returning :class:`Result`."""
    cov = (covers,) if isinstance(covers, str) else tuple(covers)

    def deco(func):
        if any(it.label == label for it in REGISTRY):
            raise ValueError(f"two audit items are labelled {label!r}")
        REGISTRY.append(Item(label, cov, func, func.__module__, len(REGISTRY)))
        return func

    return deco


@dataclass
class Evaluated:
    item: Item
    result: Result | None
    verdict: str
    error: str = ""


def evaluate(it: Item) -> Evaluated:
    """Run one item; a derivation that raises gives ``failed to derive`` with the error, never a crash."""
    try:
        res = it.func()
        if not isinstance(res, Result):
            raise TypeError(f"item {it.label} returned {type(res).__name__}, not Result")
        return Evaluated(it, res, verdict(res))
    except Exception as exc:  # noqa: BLE001 - one wrong derivation must not stop the audit
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Evaluated(it, None, "failed to derive",
                         f"{type(exc).__name__}: {exc} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})")


__all__ = ["Tex", "VERDICTS", "EVIDENCE", "NETWORK_EVIDENCE", "Network", "evidence", "Occurrence", "Gap",
           "Corrected", "Result", "verdict", "item", "Item", "evaluate", "Evaluated", "REGISTRY"]
