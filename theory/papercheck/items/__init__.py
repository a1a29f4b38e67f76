"""The paper audit as items: one item = one small function that returns what the paper prints,
what is derived (sympy, from the defining conditions) and a counterexample or ``None``
(:class:`Result`); the verdict follows from those by ONE rule, :func:`verdict`, never typed in.

Items are declared where they are defined, with the :func:`item` decorator
(:mod:`stam.theory.papercheck.items.declare`, the machinery, re-exported here), in the modules of this package
(:data:`MODULES`, imported by :func:`registry`).  Each names the labels of the
paper it covers (``covers``: equation, lemma and theorem labels of Section 2 and Appendices A-B),
so that :func:`stam.theory.papercheck.items.coverage.coverage` can count what is audited against the labels
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

from functools import lru_cache
from typing import TYPE_CHECKING

from stam.errors import UsageError
from stam.results import COUNT, DICT, DICT_OR_NULL, LIST, PROVENANCE, STR, STR_OR_NULL, ResultType, Schema, at_most, one_of
from stam.theory.papercheck.items.declare import (EVIDENCE, NETWORK_EVIDENCE, REGISTRY, VERDICTS, Corrected, Evaluated, Gap, Item,
                                       Network, Occurrence, Result, Tex, evaluate, evidence, item, verdict)

if TYPE_CHECKING:  # declared with the search; read lazily below (module __getattr__)
    from stam.theory.papercheck.chainsearch import Search


def _modules() -> tuple:
    """The modules that declare items, in the order of the paper (imported now)."""
    from stam.theory.papercheck.items import appendix_a, appendix_b, chain_items, network, section2, wellposed

    return (section2, appendix_a, chain_items, appendix_b, network, wellposed)


@lru_cache(maxsize=None)
def registry() -> tuple[Item, ...]:
    """Every item, in the order of :data:`MODULES` and, within a module, of definition."""
    rank = {m.__name__: i for i, m in enumerate(_modules())}
    return tuple(sorted(REGISTRY, key=lambda it: (rank.get(it.module, len(rank)), it.order)))


# -- the result of the audit (``stam paper-check --out FILE``; :func:`stam.theory.papercheck.audit.result`) --
#: one finding: a label, its verdict, the printed and derived forms, a counterexample
FINDING = Schema(required={"label": STR, "verdict": STR},
                 optional={"printed": STR_OR_NULL, "derived": STR_OR_NULL, "counterexample": DICT_OR_NULL, "note": STR},
                 rules=(one_of("verdict", VERDICTS),))


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
    """``Search``, the record of an adversarial search, is declared with the search (:mod:`stam.theory.papercheck.chainsearch`)
    and importable from here too; imported when asked for, so that finding the result types stays light.
    :data:`MODULES`: the names (within this package) of the modules that declare items, in the order of the
    paper (imported when first read)."""
    if name == "Search":
        from stam.theory.papercheck.chainsearch import Search

        return Search
    if name == "MODULES":
        return tuple(m.__name__.rsplit(".", 1)[1] for m in _modules())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Tex", "VERDICTS", "EVIDENCE", "NETWORK_EVIDENCE", "Network", "Search", "evidence", "Occurrence", "Gap", "Corrected", "Result", "verdict", "item", "registry", "Item",
           "evaluate", "Evaluated", "FINDING", "PAPER_CHECK"]
