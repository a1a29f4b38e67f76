"""The paper audit as items: one item = one small function that returns what the paper prints,
what is derived (sympy, from the defining conditions) and a counterexample or ``None``
(:class:`Result`); the verdict follows from those by ONE rule, :func:`verdict`, never typed in.

Items are declared where they are defined, with the :func:`item` decorator, in the modules of
this package (:data:`MODULES`, imported by :func:`registry`).  Each names the labels of the
paper it covers (``covers``: equation, lemma and theorem labels of Section 2 and Appendices A-B),
so that :func:`stam.theory.items.coverage.coverage` can count what is audited against the labels
found by parsing the paper's source.

Verdicts (:func:`verdict`), each naming its evidence kind (:data:`EVIDENCE`, :func:`evidence`):

- ``false``: the printed form fails on a counterexample that is an instance of the stated class
  (evidence ``instance``) or, where the statement is about iterates, an actual run of STAM
  (evidence ``run``), and no other print of the paper carries the right form;
- ``misprint``: such a counterexample, but another *print* of the same quantity (the paper's own
  premise, the next line, the statement of the theorem) agrees with the derivation
  (:attr:`Occurrence.printed`: a form the paper only implies, e.g. through its proof's
  requirements or by a recipe, does not make a slip);
- ``unproven``: the step does not follow from what the proof has established: a witness
  satisfies every premise the proof uses but is not shown to be a state STAM reaches (evidence
  ``premises``), and a stated search over actual STAM runs (:class:`Search`: classes, instances,
  method) found no counterexample; a search that finds one makes the item ``false`` (evidence
  ``run``), and an item with a premise witness but no search is ``failed to derive``;
- ``gap``: no counterexample to the printed form, but its proof uses something the paper does
  not state (an undefined quantity, an unstated assumption, a missing property, an illegal swap of
  an order of operations), with a witness that the stated hypotheses do not give it and what would
  close it (:class:`Gap`; evidence ``witness``);
- ``ok``: no counterexample and no gap (evidence ``proof``: decided by sympy, or ``sampled``: no
  counterexample in a seeded search, the item says which);
- ``failed to derive``: the item's derivation raised (reported, never fatal; :func:`evaluate`).

Beside the verdict, which is about the paper's general class of ``H``, an item may say what is true for the
network coupling ``H = (lam/2)||x - y||^2`` of Section 3 (:class:`Network`, evidence :data:`NETWORK_EVIDENCE`): an
``unproven`` step (or a ``false`` one) that exact certificates prove for that coupling says so there, distinct
from its verdict (issue 39).
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

from stam.errors import UsageError
from stam.results import COUNT, DICT, DICT_OR_NULL, LIST, PROVENANCE, STR, STR_OR_NULL, ResultType, Schema, at_most

if TYPE_CHECKING:  # declared with the search; read lazily below (module __getattr__)
    from stam.theory.adversary import Search

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
    "certificate": "Lyapunov certificates of stam.theory.lyapunov proven in exact rational arithmetic at the points named",
    "one-step certificate": "an S-procedure certificate over one STAM step (every G, F of the class and state), "
                            "proven in exact rational arithmetic at the points named",
}

#: the modules that declare items, in the order of the paper
MODULES = ("section2", "appendix_a", "chain_items", "appendix_b", "network", "wellposed")


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


_REGISTRY: list[Item] = []


def item(label: str, covers: tuple | list | str = ()):
    """Declare an item: ``@item("eq24", covers=("eq24",))`` on a function returning :class:`Result`."""
    cov = (covers,) if isinstance(covers, str) else tuple(covers)

    def deco(func):
        if any(it.label == label for it in _REGISTRY):
            raise ValueError(f"two audit items are labelled {label!r}")
        _REGISTRY.append(Item(label, cov, func, func.__module__, len(_REGISTRY)))
        return func

    return deco


@lru_cache(maxsize=None)
def registry() -> tuple[Item, ...]:
    """Every item, in the order of :data:`MODULES` and, within a module, of definition."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    rank = {f"{__name__}.{m}": i for i, m in enumerate(MODULES)}
    return tuple(sorted(_REGISTRY, key=lambda it: (rank.get(it.module, len(MODULES)), it.order)))


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



# -- the result of the audit (``stam paper-check --out FILE``; :func:`stam.theory.audit.result`) --
#: one finding: a label, its verdict, the printed and derived forms, a counterexample
FINDING = Schema(required={"label": STR, "verdict": STR},
                 optional={"printed": STR_OR_NULL, "derived": STR_OR_NULL, "counterexample": DICT_OR_NULL, "note": STR})


def _findings(obj, path):
    """``(findings, meta)``: the list of findings, and the provenance and coverage of a ``--out`` file."""
    if isinstance(obj, dict):
        items = obj.get("items", obj.get("findings"))
        if items is None:
            raise UsageError(f"{path}: field items is missing (a paper-check result lists its findings there)")
        return items, {"provenance": obj.get("provenance"), "coverage": obj.get("coverage")}
    return obj, {}


#: ``stam paper-check --out FILE`` ({kind, provenance, items, coverage}); the list ``--json`` prints
#: is read too, element by element
PAPER_CHECK = ResultType(
    "paper-check", Schema(optional={"kind": STR, "items": LIST, "findings": LIST, "provenance": DICT_OR_NULL,
                                    "coverage": DICT},
                          each={"items": FINDING, "findings": FINDING},
                          inner={"provenance": PROVENANCE,
                                 "coverage": Schema(required={"audited": COUNT, "total": COUNT}, optional={"missing": LIST},
                                                    rules=(at_most("audited", "total", "the labels"),))}),
    files="paper-check.json", writer="stam paper-check --out FILE", list_of=FINDING, aliases=("paper_check",),
    recognise=lambda obj: (isinstance(obj, dict) and isinstance(obj.get("items", obj.get("findings")), list)) or (
        isinstance(obj, list) and bool(obj) and all(isinstance(x, dict) and {"label", "verdict"} <= x.keys() for x in obj)),
    unpack=_findings, params=lambda findings: {"findings": len(findings)})



def __getattr__(name: str):
    """``Search``, the record of an adversarial search, is declared with the search (:mod:`stam.theory.adversary`)
    and importable from here too; imported when asked for, so that finding the result types stays light."""
    if name == "Search":
        from stam.theory.adversary import Search

        return Search
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Tex", "VERDICTS", "EVIDENCE", "NETWORK_EVIDENCE", "Network", "Search", "evidence", "Occurrence", "Gap", "Corrected", "Result", "verdict", "item", "registry", "Item",
           "evaluate", "Evaluated", "FINDING", "PAPER_CHECK"]
