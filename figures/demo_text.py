"""The words of ``stam demo`` (:mod:`stam.figures.demo`): each step's one-line brief and its result
line (headline), computed from the step's result (a dict as written to its file), and the order
they are printed in.  :mod:`stam.figures.demo` re-exports every name."""

from __future__ import annotations

from stam.theory.papercheck.items import VERDICTS
from stam.theory.symbolic.numeric import GAMMA_LAMBDA_LIMIT


def audit_headline(items: list, cov: dict) -> str:
    """``Paper audit: 86/86 labels (73 displays plus 13 statements), 71 items: 40 ok, 8 false (...),
    7 unproven (...), 5 misprints (...), 11 gaps``: each verdict kind counted apart and its first
    labels named (a misprint is not a wrong step, an unproven step is not shown false)."""
    counts = {v: sum(f["verdict"] == v for f in items) for v in VERDICTS}
    kinds = cov.get("by_kind") or {}
    d, st = kinds.get("display", {}).get("total", 0), kinds.get("statement", {}).get("total", 0)

    def named(v: str, word: str, n: int = 3) -> str:
        labels = [str(f["label"]).split(" (")[0] for f in items if f["verdict"] == v]
        more = ", ..." if len(labels) > n else ""
        return f"{len(labels)} {word}" + (f" ({', '.join(labels[:n])}{more})" if labels else "")

    text = (f"Paper audit: {cov['audited']}/{cov['total']} labels ({d} displays plus {st} statements), {len(items)} items: "
            f"{counts['ok']} ok, {named('false', 'false')}, {named('unproven', 'unproven')}, "
            f"{named('misprint', 'misprints')}, {counts['gap']} gaps")
    if counts["failed to derive"]:
        text += f", {counts['failed to derive']} failed to derive"
    return text


#: the order of the result lines (printed, and at the top of the report)
HEADLINE_KEYS = ("audit", "rates", "region", "map", "tune", "digits-map")
#: a digits cell "trains" from this binary validation accuracy on (the headline's threshold)
DIGITS_GOOD = 80.0


def printed_name(item: dict) -> str:
    """An audit item by the paper's printed numbers (``Lemma 4 (35)``), its label where it has none."""
    paper = item.get("paper") or {}
    names = list(dict.fromkeys(v for v in paper.values() if isinstance(v, str)))
    return " ".join(names[:2]) if names else str(item["label"]).split(" (")[0]


def audit_brief(items: list) -> str:
    """The audit in one line: the counts, with the false steps by the paper's numbers."""
    n = lambda v: sum(f["verdict"] == v for f in items)  # noqa: E731
    false = [printed_name(f) for f in items if f["verdict"] == "false"]
    shown = ", ".join(false[:3]) + (", ..." if len(false) > 3 else "")
    return (f"Paper audit, {len(items)} items: {n('false')} false ({shown}), {n('unproven')} unproven, "
            f"{n('misprint')} misprints, {n('gap')} gaps")


def region_reach(result: dict) -> tuple[float | None, float | None]:
    """(the largest gamma*lambda that a one-step potential certifies for the paper's class at every
    lambda of the search, the largest gamma*lambda from which the PEP refutes the theorem's form)."""
    rows = result["rows"]
    best = _best_reach(rows)
    cert = None if not best or None in best else min(best)
    refuted = [r["refuted"]["hi"] * r["lam"] for r in rows if r["refuted"]["hi"] is not None]
    return cert, (max(refuted) if refuted else None)


def region_brief(cert, refuted) -> str:
    text = ("Certified region: nothing certified" if cert is None else
            f"Certified region (lsc F, points scanned): certified up to gamma*lambda = {cert:.2f}")
    # the 2-periodic run of stam.theory.worstcase.onset.two_cycle refutes every O(1/T) bound from c_beta < 1 (exactly)
    return text + ("; O(1/T) refuted from 1 - lambda/(2 beta - L1)" + (f", PEP at T = 1 from {refuted:.4g}"
                                                                       if refuted is not None else ""))


def map_brief(data: dict) -> str:
    from stam.figures.map_experiment import summary

    s = summary(data)
    adm = sum(bool(r["admissible"]) for r in data["rows"])
    return (f"Synthetic map: E S_T decreases in {s['all']['good']} of {s['all']['cells']} (gamma, lambda, beta) cells; "
            f"{adm} satisfy Theorem conv")


def tune_budget(result: dict) -> str:
    """``8 trials, 12 epochs``: the budget of a tuning, which its numbers are not comparable without."""
    from stam.dnn.tunestats import counted

    return f"{counted(result['params']['trials'], 'trials')}, {counted(result['params']['epochs'], 'epochs')}"


def tune_brief(result: dict) -> str:
    """Each algorithm's tuned test accuracy (mean over the fresh seeds), one line, with the tuning's budget."""
    parts = [f"{a['label']} {(a.get('final') or {}).get('mean'):.1f}" if (a.get("final") or {}).get("mean") is not None
             else f"{a['label']} -" for a in result["algorithms"]]
    return f"Digits, tuned alike ({tune_budget(result)}; binary test accuracy, %): {', '.join(parts)}"


def digits_map_brief(data: dict, good: float = DIGITS_GOOD) -> str:
    rows = [r for r in data["rows"] if r.get("metric") is not None]
    trains = [r["gamma"] * r["lam"] for r in rows if r["metric"] >= good]
    below = [r["metric"] for r in rows if r["gamma"] * r["lam"] < GAMMA_LAMBDA_LIMIT]
    text = (f"Digits map: the binary network trains (>= {good:.0f}%) in {len(trains)} of {len(data['rows'])} cells"
            + (f", all at gamma*lambda >= {min(trains):.2g}" if trains else ""))
    return text + (f"; below 1/sqrt(5) at most {max(below):.0f}%" if below else "")


def _best_reach(rows) -> list:
    """Per lambda, the largest gamma*lambda any one-step potential certifies for the paper's class (paper form,
    minibatches, general template; None: none)."""
    return [max((v for v in vals if v is not None), default=None)
            for vals in zip(_reach(rows, "paper"), _reach(rows, "sampled"), _reach(rows, "general"))]


def _reach(rows, part, rows_of=lambda r: r) -> list:
    """The certified gamma*lambda of every row of a ``lyapunov-region`` result (None: nothing certified)."""
    return [rows_of(r)[part]["lo"] * r["lam"] if rows_of(r)[part]["lo"] is not None else None for r in rows]


def region_headline(result: dict) -> str:
    """The answers of issue 22 in words, from a ``lyapunov-region`` result (:func:`stam.theory.worstcase.lyapunov.region`):
    up to which gamma*lambda a potential of the paper's form certifies STAM for the paper's class (full gradient,
    minibatches), whether any one-step potential reaches gamma*lambda = 1.5 (where the digits network trains),
    where the PEP refutes the theorem's form (with the finite-horizon M0'_T), whether Theorem conv's own
    region is certified, and convex F beside."""
    rows = result["rows"]
    paper, sampled = _reach(rows, "paper"), _reach(rows, "sampled")
    best = _best_reach(rows)
    convex = _reach(rows, "general", lambda r: r["convex"])
    refuted = [r["refuted"]["hi"] * r["lam"] for r in rows if r["refuted"]["hi"] is not None]
    unverified = sum(bool(r[k].get("hi_unverified")) for r in rows for k in ("general", "paper", "sampled"))

    def low(vals):
        return "nowhere" if None in vals else f"up to gamma*lambda = {min(vals):.2f}"

    text = (f"Lyapunov search ({len(rows)} lambda{'s' if len(rows) != 1 else ''}), the paper's class (any proper lsc F): "
            f"a potential of the paper's form certifies STAM {low(paper)} (full gradient), {low(sampled)} "
            "(minibatches N = 2, b = 1), bounds with delta0 + M0'_T <= delta0 + M0' (so for the printed theorem too)")
    top = max((v for v in best if v is not None), default=None)
    text += ("; no one-step potential certifies anything" if top is None else
             f"; no one-step potential beyond gamma*lambda = {top:.2f}"
             + (" (none reaches 1.5, where the digits network trains)" if top < 1.5 else ""))
    if unverified:
        text += f" ({unverified} bracket end{'s' if unverified != 1 else ''} not verified: solver accuracy)"
    theorem = [r["theorem"] for r in rows if "theorem" in r]
    if theorem:
        ok = sum(t["certified"] for t in theorem)
        worst = max((t["max_inv_rho_beta"] for t in theorem if t["max_inv_rho_beta"] is not None), default=None)
        text += (f"; Theorem conv's own region (gamma = 0.5 and 0.99 gamma_max, its beta) is certified for the paper's "
                 f"class at {ok} of {len(theorem)} lambdas, full gradient and minibatches"
                 + (f" (1/rho <= {worst:.4g} beta, the theorem's constant >= 2 beta)" if worst is not None else ""))
    if refuted:
        text += (f"; the PEP refutes the theorem's form with the finite-horizon M0'_T from gamma*lambda = {max(refuted):.2f}"
                 " (not the printed M0')")
    known = [(v, r) for v, r in zip(convex, rows) if v is not None]
    if known:
        v, r = max(known, key=lambda item: item[0])
        text += (f"; convex F: other potentials certify up to gamma*lambda = {v:.3g} (lambda = {r['lam']:g}"
                 + (", the end of the searched range)" if r["convex"]["general"]["hi"] is None else ")"))
    return text


def digits_map_headline(data: dict, good: float = 80.0, region: dict | None = None) -> str:
    """Where STAM's binary network trains on the digits map, against the theorem's region and (``region``, a
    ``lyapunov-region`` result) the largest gamma*lambda any one-step potential certifies for the paper's class."""
    rows = [r for r in data["rows"] if r.get("metric") is not None]
    trains = [r for r in rows if r["metric"] >= good]
    inside = [r for r in rows if r.get("admissible")]
    below = [r for r in rows if r["gamma"] * r["lam"] < GAMMA_LAMBDA_LIMIT]
    text = f"Digits map ({len(data['rows'])} cells of (gamma, lambda), beta = {', '.join(f'{b:g}' for b in sorted({r['beta'] for r in data['rows']}))}): "
    text += f"binary validation accuracy >= {good:.0f}% in {len(trains)} cells"
    if trains:
        text += f", all with gamma*lambda >= {min(r['gamma'] * r['lam'] for r in trains):.2g}"
    best_below = max((r["metric"] for r in below), default=None)
    if best_below is not None:
        text += f"; below gamma*lambda = 1/sqrt(5) (where the theorem's region lies) at most {best_below:.0f}%"
    text += f"; {len(inside)} cells satisfy Theorem conv"
    if inside:
        text += f" (best {max(r['metric'] for r in inside):.0f}%)"
    if region is not None:
        rows = region["rows"]
        top = max((v for part in ("general", "paper", "sampled") for v in _reach(rows, part) if v is not None), default=None)
        if top is not None and trains:
            certified = [r for r in trains if r["gamma"] * r["lam"] <= top]
            text += (f"; {len(certified)} of the {len(trains)} cells that train lie where a one-step potential certifies "
                     f"STAM for the paper's class (gamma*lambda <= {top:.2f})")
    return text


__all__ = ["HEADLINE_KEYS", "DIGITS_GOOD", "audit_headline", "printed_name", "audit_brief", "region_reach", "region_brief",
           "map_brief", "tune_budget", "tune_brief", "digits_map_brief", "region_headline", "digits_map_headline"]
