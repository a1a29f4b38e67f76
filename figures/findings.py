"""The toolkit's findings, rendered from its committed result files (``benchmarks/results/``), once.

Every finding is declared here once (:class:`Finding`: its id, the result files it is computed from, the
function that states it, with its scope in its own words, and the command that reproduces it); the pages
hold no typed copy of them.  A page's generated block lies between two markers::

    <!-- findings:begin NAME -->
    ... what the block NAME renders from the result files ...
    <!-- findings:end NAME -->

and is one of :data:`BLOCKS` (``findings``: the table of :data:`FINDINGS`; the studies' tables).  ``stam findings``
prints the findings table, ``--write`` regenerates every block of README.md and docs/ (atomically, inside the
repository's pages only), ``--check`` names each block that differs from what the result files give (exit 1).
A rerun changes a result file; ``stam findings --write`` then changes the pages.

Scope words (what is proven, and how): the band's numbers are those of ``benchmarks/results/pep_band.json``
(``benchmarks/pep_band.py``: bisections of ``stam.theory.history.history_reach``, each point certified by an
SDP and proven in exact rational arithmetic, lambda = L1 = 1): certificates at the points a bisection tried,
not a family covering the interval."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from stam.errors import UsageError, require

#: the results the findings are computed from, relative to the repository
RESULTS = "benchmarks/results"
BAND = f"{RESULTS}/pep_band.json"
REGION = f"{RESULTS}/lyapunov_region.json"
DIGITS_TUNE = f"{RESULTS}/tune_digits_default_2cores.json"
DIGITS_MAP = f"{RESULTS}/map_digits_default_2cores.json"
CIFAR_STUDY = f"{RESULTS}/cifar10_deciding_augmented_cpu"
CIFAR_TUNE = f"{CIFAR_STUDY}/tune/tune-cifar10.json"
CIFAR_TRANSFERS = {"VGG-16": f"{CIFAR_STUDY}/transfer-vgg16/tune-cifar10.json",
                   "ResNet-18": f"{CIFAR_STUDY}/transfer-resnet18/tune-cifar10.json"}
GPU_WIDTH1 = f"{RESULTS}/gpu_width1_h200.json"
#: the BatchNorm rule's images, unaugmented against cropped and flipped (``benchmarks/bn_augment.py``)
BN_AUGMENT = f"{RESULTS}/bn_augment_cpu.json"
#: ``stam pep`` at Theorem conv's admissible parameters (``benchmarks/pep_grid.py``): any proper lsc F, and convex F
PEP_GRID = {"lsc": f"{RESULTS}/pep_grid_lsc.json", "convex": f"{RESULTS}/pep_grid.json"}
CERTS = f"{RESULTS}/certificates"
#: an instance of the closed-form family (``stam pep --family``; checked by ``stam pep --check``)
FAMILY_INSTANCE = f"{CERTS}/family-lsc-lam1-gamma0.9-beta10.json"
#: the slices: every gamma*lambda of an interval proven at one (lambda, beta, L1) (``stam pep --certify --slice``)
SLICES = (f"{CERTS}/slice-lam1-beta10-to0.947358.json", f"{CERTS}/slice-lam1-beta3-to0.7999.json",
          f"{CERTS}/slice-lam3-beta10-to0.8418.json")
#: the four methods' verdicts (``benchmarks/methods_regions.py``) and their steps swept on digits (``benchmarks/methods_steps.py``)
METHODS_REGIONS = f"{RESULTS}/methods_regions.json"
METHODS_STEPS = f"{RESULTS}/methods_steps_digits.json"
#: a cell of the committed digits map "trains" from this binary validation accuracy on (below it, the float
#: BatchNorm parameters around the initial signs reach 84%)
TRAINS = 90.0

BEGIN = "<!-- findings:begin {} -->"
END = "<!-- findings:end {} -->"
MARKER = re.compile(r"^<!-- findings:(begin|end) ([\w-]+) -->$", re.M)


def repository() -> Path:
    """The repository this package is a checkout of (its pages and committed results), or one UsageError line."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "README.md").is_file() or not (root / RESULTS).is_dir():
        raise UsageError(f"{root}: not a checkout of the STAM toolkit (no README.md and {RESULTS}/); give --root DIR")
    return root


class Results:
    """The committed result files under ``root``, each read once (JSON), a missing or broken one one UsageError line."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict[str, dict] = {}

    def __call__(self, rel: str) -> dict:
        if rel not in self._cache:
            from stam.io import read_input_text

            text = read_input_text(self.root / rel, rel)
            try:
                self._cache[rel] = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{rel}: not JSON ({exc.msg}, line {exc.lineno}); a result file of this toolkit is")
        return self._cache[rel]


# --------------------------------------------------------------------------- the band (pep_band.json)

def _history(band: dict, template: str, k: int = 1, h: int = 0, N: int | None = None) -> dict[float, dict]:
    """The band's bisections of one potential, by beta."""
    return {r["beta"]: r for r in band["history"]
            if (r["template"], r["k"], r["h"], r.get("N")) == (template, k, h, N)}


def _cycles(band: dict) -> dict[float, dict]:
    return {c["beta"]: c for c in band["cycles"]}


def _betas(rows: dict) -> str:
    return " / ".join(f"{b:g}" for b in sorted(rows))


def _reach(rows: dict) -> str:
    return " / ".join("none" if rows[b]["certified"] is None else f"{rows[b]['certified']:.4f}" for b in sorted(rows))


def _family(res: Results) -> tuple[str, str]:
    from stam.theory.family import numbers

    inst = res(FAMILY_INSTANCE)
    band = res(BAND)
    lam, L1 = band["lam"], band.get("L1", 1.0)
    betas = sorted({c["beta"] for c in band["cycles"]})
    reach = " / ".join(f"{numbers(lam, b, L1)['c_DR']:.4f}" for b in betas)
    claim = ("Full gradient; G L1-smooth and bounded below, F any proper lsc function bounded below, H = (lambda/2)|x - y|^2, "
             "every beta with 2 beta > L1 + lambda: for every gamma*lambda in (0, c_DR), c_DR a closed form below c_beta, "
             "min_{t<T} S_t <= (delta0 + M0'_T)/(rho T) with rho explicit: Theorem conv's own numerator, without its "
             "growth factor; a certificate family proven symbolically, its constant 1/rho growing like "
             "1/(c_DR - gamma*lambda); for c_DR < gamma*lambda < 1 no one-step certificate of Theorem conv's potential exists, "
             "whatever its weights and multipliers (proven)")
    require(inst.get("kind") == "stam-lyapunov-certificate",
            f"{FAMILY_INSTANCE}: kind {inst.get('kind')!r}, not a certificate of `stam pep --certify` (stam-lyapunov-certificate)")
    return claim, f"c_DR = {reach} (beta = {' / '.join(f'{b:g}' for b in betas)}; lambda = L1 = {lam:g})"


def _fraction(text: str) -> float:
    num, _, den = str(text).partition("/")
    return int(num) / int(den or 1)


def _beyond(res: Results) -> tuple[str, str]:
    band = res(BAND)
    gen, cyc = _history(band, "general"), _cycles(band)
    gaps = [cyc[b]["threshold"] - r["certified"] for b, r in gen.items() if r["certified"] is not None]
    inv = " / ".join(f"{1 / gen[b]['rho']:.0f}" for b in sorted(gen) if gen[b]["rho"])
    solves = sorted({r["solves"] for r in gen.values()})
    mini = {N: _history(band, "paper", N=N) for N in sorted({r["N"] for r in band["history"] if r.get("N")})}
    none = sorted({b for m in mini.values() for b, r in m.items() if r["certified"] is None})
    slices = []
    for rel in SLICES:
        sl = res(rel)
        p = {k: _fraction(v) for k, v in sl["parameters"].items()}
        c_beta = 1 - p["lam"] / (2 * p["beta"] - p["L1"])
        slices.append(f"({p['lam']:g}, {p['beta']:g}, {p['L1']:g}) to {_fraction(sl['gamma_lam_max']):.6g} "
                      f"(c_beta {c_beta:.6g})")
    claim = ("Between c_DR and c_beta (full gradient, any proper lsc F bounded below) only the general potential "
             "V = aG + bF + xi'P xi certifies, whose numerator V_0 - b Phi^inf - (a - b) G^inf is not Theorem conv's: "
             f"proven for every gamma*lambda of an interval on {len(SLICES)} slices (lambda, beta, L1), and at sampled "
             f"points elsewhere (a bisection from 0.05, {'/'.join(map(str, solves))} points per beta, lambda = L1 = "
             f"{band['lam']:g}; the closest c_beta - {min(gaps):.1e}; 1/rho at the largest point {inv}); b-nice minibatches "
             "(b = 1, N = " + " or ".join(map(str, mini)) + ", Theorem conv's numerator): sampled points only"
             + (f", nothing certified at beta = {', '.join(f'{b:g}' for b in none)}" if none else ""))
    number = (f"slices {'; '.join(slices)}; sampled up to {_reach(gen)} (beta = {_betas(gen)}); minibatches "
              f"{_reach(next(iter(mini.values())))}")
    return claim, number


def _band_refuted(res: Results) -> tuple[str, str]:
    band = res(BAND)
    onset = [r for r in band["rows"] if r["T"] == 1 and r.get("N") is None and r["hi"] is not None]
    lo, hi = min(r["lo"] for r in onset), max(r["hi"] for r in onset)
    claim = ("From gamma*lambda = c_beta on, no bound C(delta0 + M0'_T)/T holds, nor any O(1/T) bound whose numerator "
             "depends on the start, full gradient and minibatches: an exact 2-periodic run (closed form for every beta, "
             "lambda, L1 with 2 beta > L1 + lambda, checked in exact arithmetic); at T = 1 the worst case turns unbounded "
             f"from (1 + sqrt 3)/2, bracketed by the PEP in [{lo:.4f}, {hi:.4f})")
    return claim, "c_beta = " + ", ".join(c["exact"] for c in sorted(band["cycles"], key=lambda c: c["beta"]))


# --------------------------------------------------------------------------- practice

def _map_stats(res: Results) -> dict:
    """The committed digits map: its parameters, the gamma*lambda of the cells that train, the cells below 1."""
    data = res(DIGITS_MAP)
    rows = [r for r in data["rows"] if r.get("metric") is not None]
    trains = [r["gamma"] * r["lam"] for r in rows if r["metric"] >= TRAINS]
    return {"params": data["params"], "cells": len(data["rows"]), "trains": trains,
            "meet": "do not meet" if trains and min(trains) >= 1 else "overlap",
            "below": [r for r in rows if r["gamma"] * r["lam"] < 1]}  # c_beta < 1 for every beta


def _digits_map(res: Results) -> tuple[str, str]:
    m = _map_stats(res)
    prm, trains, below = m["params"], m["trains"], m["below"]
    claim = (f"The binary digits network (MLP, {prm['epochs']} epochs, {prm['seeds']} seeds, beta = "
             f"{', '.join(f'{b:g}' for b in prm['betas'])}, a grid of {len(prm['gammas'])} x {len(prm['lams'])} "
             f"(gamma, lambda)) reaches {TRAINS:.0f}% binary validation accuracy only at large gamma*lambda; below "
             "gamma*lambda = 1 (every c_beta is below 1) it stays under that, its binary weights' signs barely move: "
             f"the certified region and the working one {m['meet']} on this grid")
    number = f"{len(trains)} of {m['cells']} cells, all at gamma*lambda >= {min(trains):.2g}" if trains else "none"
    if below:
        number += (f"; below 1: at most {max(r['metric'] for r in below):.1f}%, signs changed "
                   f"<= {max(r['sign_ever_changed'] for r in below):.1g}")
    return claim, number


def _trains(entry: dict) -> tuple[list, float, str]:
    """The axis values of a method's sweep where it trains (mean test accuracy >= TRAINS, no seed diverged), its tuned
    value and the axis' name (:func:`stam.figures.methods.axis_values`)."""
    from stam.figures.methods import axis_values

    xs, tuned, _ = axis_values(entry)
    name = "gamma*lambda" if entry["algo"] == "stam" else "h = lr L^"
    return [x for x, r in zip(xs, entry["rows"]) if r["mean"] is not None and r["mean"] >= TRAINS and not r["diverged"]], \
        tuned, name


def _span(xs: list) -> str:
    return "nowhere tried" if not xs else (f"{min(xs):.2g}" if len(xs) == 1 else f"{min(xs):.2g}-{max(xs):.2g}")


def _certified_where(regions: dict, algo: str) -> str:
    """Where ``algo`` is certified for F an indicator (the network's) on its natural measure, in its axis' units."""
    from stam.figures.methods import theory_ranges

    cert, ref = theory_ranges(regions, algo)["natural"]
    unit = "gamma*lambda" if algo == "stam" else "h"
    text = " and ".join(f"{unit} < {b:.3g}" if not a else f"{a:.3g} < {unit} < {b:.3g}" for a, b in cert) or "nowhere"
    if ref and ref[0][0] == 0:
        text += " (refuted at every step)"
    elif ref:
        text += f" (refuted from {ref[0][0]:.3g}" + (", finite horizon)" if algo == "stam" else ")")
    return text


def _certified_short(regions: dict, algo: str) -> str:
    """``< 2``, ``nowhere``: where ``algo`` is certified (natural measure, F an indicator), in its axis' units."""
    from stam.figures.methods import theory_ranges

    cert, _ = theory_ranges(regions, algo)["natural"]
    return " and ".join(f"< {b:.2g}" if not a else f"{a:.2g}-{b:.2g}" for a, b in cert) or "nowhere"


def _methods(res: Results) -> tuple[str, str]:
    regions, steps = res(METHODS_REGIONS), res(METHODS_STEPS)
    by = {m["algo"]: m for m in steps["methods"]}
    name = lambda label: label.replace(", lam fixed", " (lambda fixed)").replace(  # noqa: E731
        ", lam x 1.02 per step", " (lambda grown)")
    indicator = [(name(m["label"]), next(v for v in m["common"] if v["f_class"] == "indicator")) for m in regions["methods"]]
    refuted_common = [n for n, v in indicator if v["refuted"] and v["refuted"][0][0] == 0]
    undetermined = [n for n, v in indicator if v["certified"] is None and not v["refuted"]]
    claim = ("Each method of the practice table, certified where and trained where, F the indicator of a set (the "
             "network's): on its own measure exact certificates or exact refuting runs (PSGD's certificate is about G "
             "alone; STAM's are Lyapunov certificates of Theorem conv's measure), beside the mean binary test accuracy "
             "on digits over its tuned step scaled by powers of ten (PSGD, BC, BR: h = lr L^, L^ a curvature estimated "
             "at the start, not a bound; protocol in docs/methods-theory.md). On the common measure (the "
             "proximal-gradient residual of G + F at the binary output) none is certified for such F: "
             f"{', '.join(refuted_common)} refuted by fixed-point runs"
             + (f"; {', '.join(undetermined)} not determined" if undetermined else ""))
    parts = []
    for algo, label in (("stam", "STAM"), ("psgd", "PSGD"), ("bc", "BC"), ("br", "BR")):
        xs, tuned, name = _trains(by[algo])
        unit = "gamma*lambda" if algo == "stam" else "h"
        parts.append(f"{label} {unit} {_certified_short(regions, algo)} / {_span(xs)} ({tuned:.2g})")
    return claim, f"certified / trains at >= {TRAINS:.0f}% (tuned): " + "; ".join(parts)


def _methods_block(res: Results) -> str:
    """The four methods' verdicts per class of F and measure, and where each trains on digits (docs/methods-theory.md)."""
    from stam.figures.methods import axis_values

    regions, steps = res(METHODS_REGIONS), res(METHODS_STEPS)
    classes = ("zero", "convex", "indicator", "lsc")
    head = {"zero": "F = 0", "convex": "F convex", "indicator": "F an indicator", "lsc": "any lsc F"}
    lines = ["| method | measure | " + " | ".join(head[c] for c in classes) + " |", "|---|---|" + "---|" * len(classes)]
    stam_nat = {c["f_class"]: c for c in regions["stam_natural"]["classes"]}
    for m in regions["methods"]:
        for measure in ("natural", "common"):
            if m[measure] is None:  # STAM's natural verdicts: its Lyapunov region (stam pep --region)
                lsc = stam_nat.get("lsc")
                conv = stam_nat.get("convex")
                cell = lambda c: (f"certified gamma*lambda < {c['certified_gamma_lam'][0]:.3g}" if c and  # noqa: E731
                                  c["certified_gamma_lam"] else "not searched") + (
                    f"; refuted (finite horizon) from {c['refuted_gamma_lam'][1]:.3g}" if c and c.get("refuted_gamma_lam") else "")
                cells = ["not searched", cell(conv) + " (some one-step potential)", cell(lsc) + " (as lsc)", cell(lsc)]
            else:
                by = {v["f_class"]: v for v in m[measure]}
                cells = [by[c]["verdict"].replace("gamma L1", "h") for c in classes]
            lines.append(f"| {m['label']} | {measure} | " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "| method | axis | tuned | certified (natural, F an indicator) | trains (>= "
              f"{TRAINS:.0f}%, no seed diverged) | mean test accuracy per step (x 10^-3 ... 10^3) |", "|---|---|---|---|---|---|"]
    for entry in steps["methods"]:
        xs, tuned, name = _trains(entry)
        _, _, label = axis_values(entry)
        accs = " / ".join("div." if r["diverged"] == steps["seeds"] else (f"{r['mean']:.1f}" + ("*" if r["diverged"] else ""))
                          for r in entry["rows"])
        lines.append(f"| {entry['algo'].upper()} | {label} | {tuned:.3g} | {_certified_where(regions, entry['algo'])} | "
                     f"{_span(xs)} | {accs} |")
    return ("\n".join(lines) + f"\n\nSweep: {steps['protocol']} (`*`: a seed diverged; `div.`: every seed diverged).\n\n"
            f"(`{METHODS_REGIONS}`, `{METHODS_STEPS}`, STAM's natural verdicts from `{regions['stam_natural']['source']}`)")


def _paired(result: dict, a: str = "stam", b: str = "bc") -> dict:
    from stam.dnn.tunestats import paired_differences

    return next(d for d in paired_differences(result, pairs=((a, b),)))


def _verdict(d: dict) -> str:
    """``level with``, ``below`` or ``above``: where the 95% interval of a paired difference lies against 0."""
    lo, hi = d["ci95"] if d.get("ci95") else (d["mean"], d["mean"])
    return "level with" if lo <= 0 <= hi else ("below" if hi < 0 else "above")


def _difference(d: dict) -> str:
    from stam.dnn.tunestats import paired_text

    return paired_text(d).replace("\u2212", "-")


def _accuracy(result: dict, algo: str) -> str:
    return next(f"{a['final']['mean']:.1f}" for a in result["algorithms"] if a["algo"] == algo)


def _digits_tuned(res: Results) -> tuple[str, str]:
    r = res(DIGITS_TUNE)
    p, d = r["params"], _paired(r)
    claim = (f"Tuned alike (the same {p['trials']} Sobol trials per method, chosen on validation data), MLP on digits, "
             f"{p['epochs']} epochs, binary test accuracy over {d['seeds']} paired seeds: STAM is {_verdict(d)} BC")
    return claim, f"{_difference(d)} points (STAM {_accuracy(r, 'stam')}%, BC {_accuracy(r, 'bc')}%)"


def _cifar_tuned(res: Results) -> tuple[str, str]:
    r = res(CIFAR_TUNE)
    p, d = r["params"], _paired(r)
    transfers = {m: _paired(res(f)) for m, f in CIFAR_TRANSFERS.items()}
    seeds = sorted({t["seeds"] for t in transfers.values()})
    claim = (f"Tuned alike on CIFAR-10 (JPEG copy; VGG-11 at width {_width(p['width'])}, {p['epochs']} epochs, "
             f"{p['trials']} trials halved by {p['halving']}, one CPU), {d['seeds']} paired seeds: STAM is {_verdict(d)} BC; "
             f"VGG-11's settings transferred to {' and '.join(transfers)} ({'/'.join(map(str, seeds))} seeds): STAM "
             + (f"{verdicts.pop()} BC on both" if len(verdicts := {_verdict(t) for t in transfers.values()}) == 1 else
                ", ".join(f"{_verdict(t)} BC on {m}" for m, t in transfers.items())))
    return claim, (f"{_difference(d)}; " + "; ".join(f"{m} {_difference(t).removeprefix('STAM - BC ')}"
                                                      for m, t in transfers.items()))


def _width(w: float) -> str:
    return f"1/{1 / w:g}" if w < 1 else f"{w:g}"


@dataclass(frozen=True)
class Finding:
    """One finding: ``state(results) -> (claim with its scope, number)``, computed from the files ``sources``
    (relative to the repository), reproduced by ``command``."""

    id: str
    sources: tuple
    command: str
    state: Callable[[Results], tuple[str, str]]
    #: whether the README's table (at most 6 rows) shows it; every finding has its block ``finding-ID`` either way
    table: bool = True


FINDINGS = (
    Finding("family", (FAMILY_INSTANCE, BAND), "stam pep --family", _family),
    Finding("beyond-family", (*SLICES, BAND), "stam pep --check " + SLICES[0], _beyond),
    Finding("refuted", (BAND,), "python benchmarks/pep_band.py --out " + BAND, _band_refuted),
    Finding("digits-map", (DIGITS_MAP, BAND), "stam map", _digits_map, table=False),  # the methods row holds its STAM part
    Finding("methods", (METHODS_REGIONS, METHODS_STEPS, REGION),
            "python benchmarks/methods_regions.py; python benchmarks/methods_steps.py", _methods),
    Finding("digits-tuned", (DIGITS_TUNE,), "stam tune", _digits_tuned),
    Finding("cifar10-tuned", (CIFAR_TUNE, *CIFAR_TRANSFERS.values()),
            "python benchmarks/cifar10_study.py --budget deciding-augmented", _cifar_tuned),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


#: the columns of the findings table
HEADER = ("finding (with its scope)", "number", "reproduce", "results")


def findings_rows(res: Results) -> list[list[str]]:
    """One row per finding of :data:`FINDINGS`: claim (with its scope), number, the command that reproduces it, the
    result files (under ``benchmarks/results/``)."""
    rows = []
    for f in (f for f in FINDINGS if f.table):
        claim, number = f.state(res)
        rows.append([claim, number, f.command, ", ".join(s.removeprefix(RESULTS + "/") for s in f.sources)])
    return rows


def findings_table(res: Results) -> str:
    """:func:`findings_rows` as a Markdown table (what ``stam findings`` prints and README.md holds)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|---" * len(HEADER) + "|"]
    for claim, number, command, files in findings_rows(res):
        files = ", ".join(f"`{f}`" for f in files.split(", "))
        lines.append(f"| {_cell(claim)} | {_cell(number)} | `{command}` | {files} |")
    return "\n".join(lines)


def committed_rows() -> list[list[str]] | None:
    """:func:`findings_rows` of this checkout's committed results; None where the package runs from no checkout."""
    try:
        return findings_rows(Results(repository()))
    except UsageError:
        return None


def conclusion(res: Results) -> str:
    """The committed findings in one sentence (``stam demo``'s conclusion answers the README's questions with it)."""
    gen = _history(res(BAND), "general")
    digits, cifar, m = _paired(res(DIGITS_TUNE)), _paired(res(CIFAR_TUNE)), _map_stats(res)
    trains = (f"reaches {TRAINS:.0f}% only at gamma*lambda >= {min(m['trains']):.2g} ({len(m['trains'])} of {m['cells']} "
              f"cells): the two regions {m['meet']}" if m["trains"] else f"reaches {TRAINS:.0f}% nowhere")
    from stam.theory.family import numbers

    band = res(BAND)
    c_dr = " / ".join(f"{numbers(band['lam'], b, band.get('L1', 1.0))['c_DR']:.4f}" for b in sorted(gen))
    return ("full gradient, F bounded below: O(1/T) proven with Theorem conv's numerator for every gamma*lambda below "
            f"c_DR ({c_dr}, beta = {_betas(gen)}; a family proven symbolically), beyond it at sampled points up to "
            f"{_reach(gen)} (general potential) and on proven slices, refuted from "
            f"c_beta = 1 - lambda/(2 beta - L1); the digits network ({m['params']['epochs']} epochs) {trains}; tuned alike, "
            f"STAM is {_verdict(digits)} BC on digits ({_difference(digits)}) and {_verdict(cifar)} BC on CIFAR-10, VGG-11 "
            f"({_difference(cifar).removeprefix('STAM - BC ')})")


def committed_conclusion() -> str | None:
    """:func:`conclusion` of this checkout's committed results; None where the package runs from no checkout."""
    try:
        return conclusion(Results(repository()))
    except UsageError:
        return None


# --------------------------------------------------------------------------- the studies' blocks

def _tune_block(rel: str) -> Callable[[Results], str]:
    def render(res: Results) -> str:
        from stam.dnn.tunetext import format_table

        return format_table(res(rel)) + f"\n\n(`{rel}`)"
    return render


def _paper_pairs(res: Results) -> str:
    from stam.dnn.tunestats import paired_differences

    pairs = [d for d in paired_differences(res(CIFAR_TUNE), paper=True) if d.get("paper")]
    return "\n".join(f"- {_difference(d)} (over {d['seeds']} paired seeds)" for d in pairs) + f"\n\n(`{CIFAR_TUNE}`)"


def _band_block(res: Results) -> str:
    from stam.figures.tables import band_table, history_table

    band = res(BAND)
    return history_table(band).to_markdown() + "\n\n" + band_table(band).to_markdown() + f"\n\n(`{BAND}`)"


def _region_block(res: Results) -> str:
    from stam.figures.demo_text import region_headline
    from stam.figures.tables import region_table

    r = res(REGION)
    return (region_table(r).to_markdown() + f"\n\nAt the gamma of a scan (a factor {r['scan_ratio']:g} apart), each certificate "
            f"proven in exact arithmetic, L1 = {r['L1']:g}, {len(r['betas'])} betas from {min(r['betas']):g} to "
            f"{max(r['betas']):g}: " + region_headline(r) + f".\n\n(`{REGION}`)")


def _digits_map_block(res: Results) -> str:
    from stam.figures.demo_text import digits_map_headline

    return digits_map_headline(res(DIGITS_MAP), good=TRAINS, region=res(REGION)) + f".\n\n(`{DIGITS_MAP}`)"


def _order(means: dict[str, float]) -> str:
    return " > ".join(f"{k} {v:.1f}" for k, v in sorted(means.items(), key=lambda kv: -kv[1]))


def _gpu_block(res: Results) -> str:
    g = res(GPU_WIDTH1)
    s = g["settings"]
    lines = ["| | " + " | ".join(v["label"] for v in g["summary"].values()) + " |", "|---" * (len(g["summary"]) + 1) + "|",
             "| test accuracy (%), mean ± std | " + " | ".join(f"{v['mean']:.1f} ± {v['std']:.1f}" for v in g["summary"].values())
             + " |"]
    binary = {v["label"]: v["mean"] for k, v in g["summary"].items() if k != "float"}
    tuned = res(CIFAR_TUNE)
    narrow = {a["label"]: a["final"]["mean"] for a in tuned["algorithms"] if a["algo"] != "float"}
    return (f"VGG-11 at width {_width(s['width'])} on the JPEG copy of CIFAR-10, {s['epochs_done']} epochs, seeds "
            f"{', '.join(map(str, s['seeds']))}, one {g['device']['name']}, settings transferred from width 1/8:\n\n"
            + "\n".join(lines) + f"\n\nThe binary methods in order: {_order(binary)} (at width 1/8, tuned, the study's "
            f"{tuned['params']['seeds']} seeds: {_order(narrow)}).\n\n(`{GPU_WIDTH1}`, `{CIFAR_TUNE}`)")


def _finding_block(f: Finding) -> Callable[[Results], str]:
    """One finding as a paragraph: its claim with its scope, its number, how to reproduce it, its files."""
    def render(res: Results) -> str:
        claim, number = f.state(res)
        return (f"**{claim}:** {number}. Reproduce: `{f.command}`; results: "
                + ", ".join(f"`{s}`" for s in f.sources) + ".")
    return render


#: the earlier CIFAR-10 runs, replaced (docs/studies/cifar10.md says why)
CIFAR_EARLIER = (f"{RESULTS}/cifar10_study/tune-cifar10.json", f"{RESULTS}/cifar10_study_bn/tune/tune-cifar10.json",
                 f"{RESULTS}/cifar10_deciding_h200/tune/tune-cifar10.json",
                 f"{RESULTS}/cifar10_deciding_cpu/tune/tune-cifar10.json")
#: single float runs of the deciding study's chosen Float setting at longer budgets (``stam train``)
FLOAT_PROBES = (f"{RESULTS}/float45_cpu", f"{RESULTS}/float90_cpu")


def _earlier_block(res: Results) -> str:
    from stam.dnn.tunetext import describe

    lines = []
    for rel in CIFAR_EARLIER:
        r = res(rel)
        p, d = r["params"], _paired(r)
        lines.append(f"- `{rel}`: {describe(r)}, {p['epochs']} epochs, {p['trials']} trials, {d['seeds']} paired seeds: "
                     f"{_difference(d)}")
    return "\n".join(lines)


def _float_block(res: Results) -> str:
    lines = []
    for folder in FLOAT_PROBES:
        c, s = res(f"{folder}/config.json"), res(f"{folder}/summary.json")
        lines.append(f"- `{folder}`: Float, {c['epochs']} epochs, seed {c['seed']}: "
                     f"{s['selected_test_acc_float']:.1f}% test accuracy at the epoch selected on validation")
    return "\n".join(lines)


def _pep_grid_block(res: Results) -> str:
    from stam.figures.tables import Table, fmt

    lsc, convex = res(PEP_GRID["lsc"]), res(PEP_GRID["convex"])
    key = lambda r: (r["lam"], r["gamma"], r["beta"], r["T"])  # noqa: E731
    other = {key(r): r for r in convex["admissible"] if r.get("admissible", True)}
    rows, spare = [], {"lsc": [], "convex": []}
    skipped = [r for r in lsc["admissible"] if not r.get("admissible", True)]
    for r in lsc["admissible"]:
        if r in skipped:
            continue
        c = other.get(key(r))
        spare["lsc"].append(1 / r["ratio"])
        if c is not None:
            spare["convex"].append(1 / c["ratio"])
        rows.append([fmt(r["lam"]), fmt(r["gamma"]), fmt(r["beta"]), str(r["T"]), fmt(r["worst_case"]), fmt(r["bound"]),
                     f"{r['ratio']:.3f}", f"{r['delta0']:.2f} / {r['M0_prime']:.2f}",
                     "\u2013" if c is None else f"{fmt(c['worst_case'])} ({c['ratio']:.3f})"])
    statuses = sorted({r["status"] for d in (lsc, convex) for r in d["admissible"] if r.get("admissible", True)})
    table = Table(f"stam pep at Theorem conv's admissible parameters (L1 = {lsc['L1']:g}, beta the smallest it admits, "
                  "delta0 + M0'_T <= 1)", ["lambda", "gamma", "beta", "T", "worst case (lsc F)", "bound", "ratio",
                                           "delta0 / M0'_T of the worst instance", "convex F: worst case (ratio)"], rows)
    lo = lambda v: f"{min(v):.0f} to {max(v):.0f}"  # noqa: E731
    return (table.to_markdown() + f"\n\nEvery solve {', '.join(statuses)}; the bound exceeds the worst case by a factor "
            f"{lo(spare['lsc'])} for any proper lsc F ({lo(spare['convex'])} for convex F)."
            + "".join(f" (lambda = {r['lam']:g}, gamma = {r['gamma']:g} is not admissible: {r.get('note', '')}.)" for r in skipped)
            + "\n\n"
            f"(`{PEP_GRID['lsc']}`, `{PEP_GRID['convex']}`)")


def _pep_para_block(res: Results) -> str:
    from stam.figures.tables import Table, fmt

    lsc, convex = res(PEP_GRID["lsc"]), res(PEP_GRID["convex"])
    other = {(r["setting"], r["T"]): r for r in convex["table_para"]}
    Ts = sorted({r["T"] for r in lsc["table_para"]})
    settings = list(dict.fromkeys(r["setting"] for r in lsc["table_para"]))
    worst = lambda r, bound=False: ("+\u221e" if r is None or r["status"] == "unbounded" else  # noqa: E731
                                    fmt(r["worst_case"]) + (f" (bound {fmt(r['bound'])})" if bound else ""))
    rows, costlier = [], []
    for name in settings:
        by_T = {r["T"]: r for r in lsc["table_para"] if r["setting"] == name}
        first = by_T[Ts[0]]
        rows.append([name, fmt(first["lam"]), fmt(first["gamma"]), fmt(first["beta"]), fmt(first["gamma_lam"])]
                    + [f"{worst(by_T.get(T), True)} / {worst(other.get((name, T)))}" for T in Ts])
        costlier += [(name, T, by_T[T]["worst_case"] / other[(name, T)]["worst_case"]) for T in Ts
                     if by_T[T].get("worst_case") and (other.get((name, T)) or {}).get("worst_case")]
    table = Table(f"stam pep at the paper's Table para settings (L1 = {lsc['L1']:g}), any proper lsc F / convex F, "
                  "delta0 + M0'_T <= 1; +\u221e: the solver's certificate of unboundedness",
                  ["setting", "lambda", "gamma", "beta", "gamma*lambda"] + [f"T = {T}" for T in Ts], rows)
    admissible = [n for n in settings if all(r["admissible"] for r in lsc["table_para"] if r["setting"] == n)]
    text = f"Theorem conv's hypotheses hold at {len(admissible)} of these {len(settings)} settings."
    finite = [c for c in costlier if c[2] > 1.05]
    if finite:
        text += (" Where the worst case is finite, any proper lsc F costs "
                 + ", ".join(f"{c[2]:.1f} times convex F's ({c[0]}, T = {c[1]})" for c in finite) + ".")
    return table.to_markdown() + "\n\n" + text + f"\n\n(`table_para` of `{PEP_GRID['lsc']}`, `{PEP_GRID['convex']}`)"


def _bn_augment_block(res: Results) -> str:
    from stam.dnn.catalog import MODELS
    from stam.dnn.tunetext import label
    from stam.figures.tables import Table

    d, last = res(BN_AUGMENT), 10
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    rows = []
    for algo, run in d["runs"].items():
        log = run["log"][-last:]
        gain = [e["augmented"] - e["unaugmented"] for e in log]
        rows.append([label(algo)] + [f"{mean([e[k] for e in log]):.1f}" for k in ("as_trained", "unaugmented", "augmented")]
                    + [f"{mean(gain):+.1f} ({min(gain):+.1f}, {max(gain):+.1f})"])
    table = Table(f"Test accuracy (%) by the BatchNorm statistics it is taken with, mean of the last {last} epochs "
                  f"({MODELS.get(d['model'], d['model'])} at width {_width(d['width'])}, {d['epochs']} epochs, seed {d['seed']}, the study's tuned "
                  "settings)", ["algorithm (tuned setting)", "as trained", "re-estimated, unaugmented (the earlier rule)",
                                "re-estimated, cropped and flipped once", "gain (smallest, largest)"], rows)
    return table.to_markdown() + f"\n\n(`{BN_AUGMENT}`)"


#: every generated block a page may hold, by name
BLOCKS: dict[str, Callable[[Results], str]] = {
    "findings": findings_table,
    "digits-tuned": _tune_block(DIGITS_TUNE),
    "digits-map": _digits_map_block,
    "cifar10-tuned": _tune_block(CIFAR_TUNE),
    "cifar10-paper-pairs": _paper_pairs,
    **{f"cifar10-transfer-{m.lower()}": _tune_block(f) for m, f in CIFAR_TRANSFERS.items()},
    "band": _band_block,
    "pep-grid": _pep_grid_block,
    "pep-table-para": _pep_para_block,
    "bn-augment": _bn_augment_block,
    "region": _region_block,
    "gpu-width1": _gpu_block,
    "cifar10-earlier": _earlier_block,
    "float-probes": _float_block,
    "methods-table": _methods_block,
    **{f"finding-{f.id}": _finding_block(f) for f in FINDINGS},
}


# --------------------------------------------------------------------------- the pages

def pages(root: Path) -> list[Path]:
    """The repository's pages: README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _render(text: str, res: Results, where: str) -> tuple[str, list[str]]:
    """``text`` with every generated block rendered anew, and the names of the blocks that changed."""
    out, changed, pos = [], [], 0
    marks = list(MARKER.finditer(text))
    if len(marks) % 2:
        raise UsageError(f"{where}: a findings marker without its pair")
    for begin, end in zip(marks[::2], marks[1::2]):
        name = begin.group(2)
        if (begin.group(1), end.group(1), end.group(2)) != ("begin", "end", name):
            raise UsageError(f"{where}: findings:begin {name} is not closed by findings:end {name}")
        if name not in BLOCKS:
            raise UsageError(f"{where}: unknown findings block {name!r}; known: {', '.join(BLOCKS)}")
        try:
            body = "\n" + BLOCKS[name](res) + "\n"
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, StopIteration) as exc:
            raise UsageError(f"{where}: block {name}: a result file it reads lacks what it needs "
                             f"({type(exc).__name__}: {exc}); write it again with the command that made it") from None
        if text[begin.end():end.start()] != body:
            changed.append(name)
        out += [text[pos:begin.end()], body]
        pos = end.start()
    out.append(text[pos:])
    return "".join(out), changed


def differing(root: Path) -> list[tuple[Path, str, str]]:
    """(page, block, the page's text with every block rendered anew) for each block that differs from what the
    result files give."""
    from stam.io import read_input_text

    res, out = Results(root), []
    for page in pages(root):
        rel = page.relative_to(root).as_posix()
        new, changed = _render(read_input_text(page, rel), res, rel)
        out += [(page, name, new) for name in changed]
    return out


def write(root: Path) -> list[str]:
    """Rewrite every page whose generated blocks differ (atomically, each page whole); the ``page: block`` rewritten."""
    from stam.io import atomic_write_text

    done, rewritten = [], set()
    for page, name, new in differing(root):
        if page not in rewritten:
            atomic_write_text(page, new)
            rewritten.add(page)
        done.append(f"{page.relative_to(root)}: {name}")
    return done


def findings_command(args) -> int:
    root = Path(args.root).resolve() if args.root else repository()
    if args.root and not (root / "README.md").is_file():
        raise UsageError(f"--root {args.root}: no README.md there; give the toolkit's repository")
    if args.write:
        for line in write(root):
            print(f"wrote {line}")
        return 0
    if args.check:
        bad = differing(root)
        for page, name, _ in bad:
            print(f"stam findings: {page.relative_to(root)}: block {name} differs from what the result files give "
                  "(run stam findings --write)")
        return 1 if bad else 0
    print(findings_table(Results(root)))
    return 0


__all__ = ["FINDINGS", "BLOCKS", "Finding", "Results", "HEADER", "findings_rows", "findings_table", "committed_rows", "conclusion", "committed_conclusion", "pages", "differing", "write",
           "repository", "findings_command"]
