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
(``benchmarks/pep_band.py``: bisections of ``stam.theory.worstcase.history.history_reach`` from its ``history_lo``, each point certified by an
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
#: the region search's speed and sizes (``benchmarks/lyapunov_region.py``)
LYAPUNOV_BENCH = f"{RESULTS}/lyapunov_region_bench.json"
#: the paper's protocol on digits (``benchmarks/dnn_train_digits.py``): Table para's settings, best test accuracy
DIGITS_PAPER = f"{RESULTS}/dnn_train_digits.json"
#: the whole training step's throughput of the three CIFAR networks on a CPU (``benchmarks/dnn_train_speed.py``)
TRAIN_SPEED = f"{RESULTS}/dnn_train_speed_cpu.json"
#: ``stam synthetic run --problem NAME --out ...`` and ``stam synthetic compare`` at their defaults, per problem
SYNTHETIC_RATES = {name: f"{RESULTS}/synthetic_rates_{name}.json" for name in ("binary", "sparse-l1", "sparse-mcp", "cosine")}
SYNTHETIC_OUR1 = f"{RESULTS}/synthetic_rates_binary_paper-our1.json"
SYNTHETIC_COMPARE = (f"{RESULTS}/synthetic_compare_binary.json", f"{RESULTS}/synthetic_compare_binary_beta2.json",
                     f"{RESULTS}/synthetic_compare_sparse-mcp.json", f"{RESULTS}/synthetic_compare_cosine.json")
#: ``stam pep``'s solve times for T = 1..10 at three settings (``benchmarks/pep_speed.py``)
PEP_SPEED = f"{RESULTS}/pep_speed.json"
#: the recorded ``stam demo`` (its steps' times) and the user's-problem benchmark (``benchmarks/user_problem.py``)
DEMO = f"{RESULTS}/demo_2cores.json"
USER_PROBLEM = f"{RESULTS}/user_problem.json"
#: the theory layer's speed (``benchmarks/theory_speed.py``), and ``stam paper-check``'s measured beside it
THEORY_SPEED = (f"{RESULTS}/theory_speed.json", f"{RESULTS}/theory_speed_paper_check.json")
#: the synthetic experiments' speed (``benchmarks/synthetic_speed.py``)
SYNTHETIC_SPEED = f"{RESULTS}/synthetic_speed.json"
#: the optimisers' step on VGG-11's parameters against torch.optim.SGD (``benchmarks/dnn_optim_speed.py``), and
#: loading the JPEG copy of CIFAR-10 (``benchmarks/imagefolder_load.py``)
OPTIM_SPEED = f"{RESULTS}/dnn_optim_speed_cpu_1thread.json"
IMAGEFOLDER_LOAD = f"{RESULTS}/imagefolder_load.json"
#: many small digits trainings as one computation, on a CPU and a GPU (``benchmarks/dnn_batched_speed.py``)
BATCHED_SPEED = (f"{RESULTS}/dnn_batched_speed_h100.json", f"{RESULTS}/dnn_batched_speed_cpu.json")
#: the one trainer with R runs of VGG-11/8 as one wide network, 1 and 2 threads (``benchmarks/dnn_batched_cifar.py``)
BATCHED_CIFAR = (f"{RESULTS}/dnn_batched_cifar_cpu_1thread.json", f"{RESULTS}/dnn_batched_cifar_cpu_2threads.json")
#: an epoch of ``stam train`` against plain loops (``benchmarks/epoch_vs_loop.py``)
EPOCH_VS_LOOP = f"{RESULTS}/epoch_vs_loop_cpu.json"
#: the BatchNorm rule's cost (``benchmarks/bn_reestimate_cost.py``) and its subset's size (``benchmarks/bn_subset_size.py``)
BN_COST = f"{RESULTS}/bn_reestimate_cost_cpu.json"
BN_SUBSET = f"{RESULTS}/bn_subset_size_cpu.json"
#: float training of the study's network in a plain loop (``benchmarks/float_ceiling.py``)
FLOAT_CEILING = f"{RESULTS}/float_ceiling_cpu.json"
#: the memory estimate of a sweep against measured peaks (``benchmarks/memory_estimate.py``)
MEMORY_ESTIMATE = f"{RESULTS}/memory_estimate_cpu.json"
#: oneDNN's channels-last kernel with and without the guard (``benchmarks/onednn_channels_last.py``)
ONEDNN = f"{RESULTS}/onednn_channels_last_cpu.json"
#: what each algorithm costs in the trainer (``benchmarks/dnn_algo_cost.py``: VGG-11 and digits; digits alone with
#: ``--skip-vgg``), and how fast ``stam train`` starts (``benchmarks/train_start.py``)
ALGO_COST = f"{RESULTS}/dnn_algo_cost_cpu.json"
ALGO_COST_DIGITS = f"{RESULTS}/dnn_algo_cost_digits_cpu.json"
TRAIN_START = f"{RESULTS}/train_start.json"
#: a whole ``stam train`` on digits, STAM against Float, in fresh processes (``benchmarks/train_digits_cost.py``)
TRAIN_DIGITS_COST = f"{RESULTS}/train_digits_cost.json"
#: the deciding CIFAR-10 study's time on one H200 (``benchmarks/gpu_cifar10_study.sh``: its calls) and on a CPU
DECIDING_GPU = f"{RESULTS}/cifar10_deciding_h200"
DECIDING_CPU = f"{RESULTS}/cifar10_deciding_cpu/study.json"
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
    from stam.theory.worstcase.family import numbers

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
             f"points elsewhere (a bisection from {band['history_lo']:g}, {'/'.join(map(str, solves))} points per beta, lambda = L1 = "
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
    from stam.theory.worstcase.family import numbers

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
    hist = band["history"]
    inv = [1 / r["rho"] for r in hist if r.get("rho")]
    Ns = sorted({r["N"] for r in hist if r.get("N")})
    bs = sorted({r.get("b", 1) for r in hist if r.get("N")})
    scope = ("Scope: full gradient in the rows without N, b-nice minibatches (N = " + " or ".join(map(str, Ns))
             + ", b = " + " or ".join(map(str, bs)) + ") in the others; any proper lsc F; the paper "
             "potential's bound has Theorem conv's numerator delta0 + M0'_T, the general potential's V_0 - b Phi^inf - "
             f"(a - b) G^inf, which needs F bounded below; each row a bisection in gamma*lambda from {band['history_lo']:g} of at "
             f"most {max(r['solves'] for r in hist)} SDP solves (lambda = {band['lam']:g}, L1 = {band.get('L1', 1.0):g}): "
             "certificates at the points tried, not a family covering the interval; the constant 1/rho at the largest "
             f"point certified ranges from {min(inv):.3g} to {max(inv):.4g}.")
    return (history_table(band).to_markdown() + "\n\n" + scope + "\n\n" + band_table(band).to_markdown()
            + f"\n\n(`{BAND}`)")


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


def _settings_from(g: dict) -> tuple[str, int | None, int | None]:
    """Where a width-1 run's settings came from: the tuning's file, its epochs and its trials per method (a file
    written before ``settings_from`` existed says so in the text of its ``choices``)."""
    if "settings_from" in g:
        src = g["settings_from"]
        trials = src["study"].get("trials")
        return src["file"], src["study"].get("epochs"), (max(trials.values()) if isinstance(trials, dict) else trials)
    why = next(c["why"] for c in g["choices"] if c["setting"] == "hyperparameters")
    file = re.search(r" in (\S+?)(?:/tune/jobs|/jobs)? \(", why)
    epochs, trials = re.search(r"'epochs': (\d+)", why), re.search(r"'trials': \{'\w+': (\d+)", why)
    return (file.group(1) if file else "(see the file's choices)", int(epochs.group(1)) if epochs else None,
            int(trials.group(1)) if trials else None)


def _gpu_block(res: Results) -> str:
    g = res(GPU_WIDTH1)
    s = g["settings"]
    lines = ["| | " + " | ".join(v["label"] for v in g["summary"].values()) + " |", "|---" * (len(g["summary"]) + 1) + "|",
             "| test accuracy (%), mean ± std | " + " | ".join(f"{v['mean']:.1f} ± {v['std']:.1f}" for v in g["summary"].values())
             + " |"]
    binary = {v["label"]: v["mean"] for k, v in g["summary"].items() if k != "float"}
    tuned = res(CIFAR_TUNE)
    narrow = {a["label"]: a["final"]["mean"] for a in tuned["algorithms"] if a["algo"] != "float"}
    file, epochs, trials = _settings_from(g)
    same = Path(file).parts[:3] == Path(CIFAR_TUNE).parts[:3]
    source = (f"each method's chosen setting in `{file}`" + (f" (a {epochs}-epoch tuning" if epochs else " (a tuning")
              + (f", {trials} trials per method)" if trials else ")")
              + ("" if same else ", not the settings of the width-1/8 study quoted below"))
    return (f"VGG-11 at width {_width(s['width'])} on the JPEG copy of CIFAR-10, {s['epochs_done']} epochs, seeds "
            f"{', '.join(map(str, s['seeds']))}, one {g['device']['name']}, settings transferred from width 1/8: "
            f"{source}:\n\n"
            + "\n".join(lines) + f"\n\nThe binary methods in order: {_order(binary)} (at width 1/8, tuned, the study's "
            f"{tuned['params']['seeds']} seeds: {_order(narrow)})." + _paired_sentence(g.get("paired"))
            + f"\n\n(`{GPU_WIDTH1}`, `{CIFAR_TUNE}`)")


def _paired_sentence(paired: list | None) -> str:
    """The width-1 run's paired differences (a run written before it recorded them: nothing)."""
    from stam.dnn.tunestats import paired_text

    if not paired:
        return ""
    return (" Paired by seed: " + "; ".join(f"{paired_text(d)} points over {d['seeds']} seeds"
                                           + ("" if d.get("ci95") else " (no interval)") for d in paired) + ".")


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
            + "".join(f" A longer horizon (`long`): lambda = {r['lam']:g}, gamma = {r['gamma']:g}, beta = {r['beta']:g}, "
                      f"T = {r['T']}: ratio {r['ratio']:.3f} for any proper lsc F"
                      + "".join(f", {c['ratio']:.3f} for convex F" for c in convex.get("long", []) if key(c) == key(r)) + "."
                      for r in lsc.get("long", []) if r.get("ratio") is not None)
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


def _pep_scan_block(res: Results) -> str:
    """``gamma_lam_scan`` of the two grid files: where ``stam pep``'s worst case stops being finite, per horizon."""
    from stam.figures.tables import Table, fmt

    lsc, convex = res(PEP_GRID["lsc"]), res(PEP_GRID["convex"])
    key = lambda r: (r["lam"], r["gamma_lam"], r["T"])  # noqa: E731
    other = {key(r): r for r in convex["gamma_lam_scan"]}
    Ts = sorted({r["T"] for r in lsc["gamma_lam_scan"]})
    betas = sorted({r["beta"] for r in lsc["gamma_lam_scan"]})
    cell = lambda r: ("\u2013" if r is None else "+\u221e" if r["status"] == "unbounded" else  # noqa: E731
                      fmt(r["worst_case"]) if r["status"] == "optimal" else r["status"])
    rows = []
    for lam, gl in dict.fromkeys((r["lam"], r["gamma_lam"]) for r in lsc["gamma_lam_scan"]):
        by_T = {r["T"]: r for r in lsc["gamma_lam_scan"] if (r["lam"], r["gamma_lam"]) == (lam, gl)}
        rows.append([fmt(lam), fmt(gl)] + [f"{cell(by_T.get(T))} / {cell(other.get((lam, gl, T)))}" for T in Ts])
    table = Table(f"Where stam pep's worst case stops being finite (beta = {' / '.join(f'{b:g}' for b in betas)}, "
                  f"L1 = {lsc['L1']:g}, delta0 + M0'_T <= 1): any proper lsc F / convex F; +\u221e: the solver's "
                  "certificate of unboundedness; another status: no number", ["lambda", "gamma*lambda"]
                  + [f"T = {T}" for T in Ts], rows)
    return table.to_markdown() + f"\n\n(`gamma_lam_scan` of `{PEP_GRID['lsc']}`, `{PEP_GRID['convex']}`)"


def _lyapunov_bench_block(res: Results) -> str:
    """The region benchmark: the default region's time, and by (N, b) one Lyapunov SDP with b-nice minibatches and the PEP's Gram matrix, by (N, b)."""
    from stam.figures.tables import Table

    d = res(LYAPUNOV_BENCH)
    secs = lambda s: "not run" if s is None else f"{s:.2g} s"  # noqa: E731
    rows = []
    for r in d["sizes"]:
        pep = r.get("pep") or {}
        grams = " / ".join(str(pep[T]["gram"]) if T in pep else "\u2013" for T in ("1", "2"))
        two = pep.get("2", {})
        rows.append([str(r["N"]), str(r["b"]), str(r["branches"]), str(r["sdp_matrix"]), str(r["sdp_constraints"]),
                     secs(r.get("sdp_s")), grams, secs(two.get("seconds")) if two.get("seconds") is not None
                     else (f"not run (Gram {two['gram']})" if "gram" in two else "not run")])
    table = Table("One Lyapunov SDP of the paper form with b-nice minibatches (K = C(N, b) branches), and stam pep's "
                  "Gram matrix, the first of each shape in a process (building the cvxpy problem included)",
                  ["N", "b", "branches K", "SDP matrix", "SDP inequalities", "SDP time", "PEP Gram, T = 1 / T = 2",
                   "PEP time T = 2"], rows)
    load = d.get("loadavg_before_after")
    where = f"{d.get('machine', 'an unnamed machine')}" + (f", load average {load[0][0]:.1f} before and {load[1][0]:.1f} after the "
                                                           "whole benchmark" if load else "")
    speed = (f"The default region of `stam pep --region` ({len(d['rows'])} lambdas) in one process: {d['region_s']:.0f} s wall, "
             f"{d['region_cpu_s']:.0f} s CPU; the slowest certification {d['slowest_sdp_s']:.2g} s (the first call in a process "
             f"{d['first_call_s']:.2g} s more: importing cvxpy and sympy, building the first cvxpy problem). Standard: "
             f"{d['standard']}: {'met' if d['meets_standard'] else 'NOT met'}.")
    return (speed + "\n\n" + table.to_markdown() + f"\n\nMeasured on {where}.\n\n(`{LYAPUNOV_BENCH}`)")


def _certificate_files(res: Results, kind: str) -> list[tuple[str, dict]]:
    """The committed certificate files of one kind (``benchmarks/results/certificates/``), by name."""
    return [(rel, res(rel)) for rel in (f"{CERTS}/{p.name}" for p in sorted((res.root / CERTS).glob("*.json")))
            if res(rel).get("kind") == kind]


def _certificates_block(res: Results) -> str:
    """Every committed one-point certificate: its template, class, point, rate; and how 1/rho grows towards c_beta."""
    from stam.figures.tables import Table
    from stam.theory.worstcase.family import numbers

    rows, near = [], []
    for rel, d in _certificate_files(res, "stam-lyapunov-certificate"):
        p, f = d["parameters"], d["float"]
        lam, beta, L1 = (_fraction(p[k]) for k in ("lam", "beta", "L1"))
        c, c_beta = f["gamma*lam"], f["c_beta"]
        c_dr = numbers(lam, beta, L1)["c_DR"]
        where = "below c_DR" if c < c_dr else ("between c_DR and c_beta" if c < c_beta else "beyond c_beta")
        name = rel.removeprefix(CERTS + "/")
        template = "the family's instance" if name.startswith("family-") else d["template"]
        gap = f"; c_beta - gamma*lambda = {c_beta - c:.2g}" if c < c_beta else f"; c_beta = {c_beta:.6g}"
        rows.append([f"`{rel}`", template, d["f_class"], f"lambda = {p['lam']}, gamma = {p['gamma']}, beta = {p['beta']}, "
                     f"L1 = {p['L1']}", f"{c:.6g} ({where}{gap})",
                     f"{f['rho']:.6g}", f"{f['1/rho']:.4g}"])
        if d["template"] == "general" and d["f_class"] == "lsc" and c_dr <= c < c_beta:
            near.append(f["1/rho"] * (c_beta - c))
    table = Table("The committed one-point certificates (`stam pep --certify`; each proven in exact arithmetic and "
                  "re-proven by `stam pep --check FILE`)", ["file", "template", "class of F", "point (exact)",
                                                             "gamma*lambda", "rho", "1/rho"], rows)
    text = (f"Between c_DR and c_beta (general potential, any proper lsc F) 1/rho times c_beta - gamma*lambda lies between "
            f"{min(near):.2g} and {max(near):.2g} at these {len(near)} points: 1/rho grows like 1/(c_beta - gamma*lambda), "
            "measured at these points, not proven.") if near else ""
    return table.to_markdown() + ("\n\n" + text if text else "") + f"\n\n(`{CERTS}/*.json`)"


def _slices_block(res: Results) -> str:
    """Every committed slice: the interval of gamma*lambda proven whole at one (lambda, beta, L1)."""
    from stam.figures.tables import Table

    rows = []
    for rel, d in _certificate_files(res, "stam-lyapunov-certificate-slice"):
        p = {k: _fraction(v) for k, v in d["parameters"].items()}
        top = _fraction(d["gamma_lam_max"])
        c_beta = 1 - p["lam"] / (2 * p["beta"] - p["L1"])
        pieces = d["pieces"]
        rows.append([f"`{rel}`", f"{p['lam']:g}, {p['beta']:g}, {p['L1']:g}",
                     f"(0, {top:.6g}]", f"{c_beta:.6g}", f"{c_beta - top:.2g}", str(len(pieces)),
                     f"{_fraction(pieces[-1]['rho']):.2g}"])
    table = Table("The committed slices (`stam pep --certify --slice`): every gamma*lambda of the interval proven at one "
                  "(lambda, beta, L1), below c_DR by the family, above it by pieces", ["file", "lambda, beta, L1",
                                                                                     "every gamma*lambda in", "c_beta",
                                                                                     "gap to c_beta", "pieces",
                                                                                     "rho on the last piece"], rows)
    return table.to_markdown() + f"\n\n(`{CERTS}/slice-*.json`)"


def _digits_paper_block(res: Results) -> str:
    """The paper's protocol on digits: Table para's settings and a few others, the best test accuracy over epochs."""
    from stam.figures.tables import Table

    d = res(DIGITS_PAPER)
    adm = d["admissible"]
    rows = []
    for r in d["rows"]:
        extra = ", ".join(f"{k} {v:g}" for k, v in r["overrides"].items())
        label = r["label"] + (f" ({r['preset']} with {extra})" if extra and "(" not in r["label"] else "")
        rows.append([label, f"{r['best_binary_mean']:.1f} ± {r['best_binary_std']:.1f}",
                     f"{r['best_float_mean']:.1f} ± {r['best_float_std']:.1f}", f"{r['seconds_mean']:.1f}"])
    table = Table(f"The paper's protocol, not a fair comparison: {d['model'].upper()} on digits, {d['epochs']} epochs "
                  f"(schedule scale {d['schedule_scale']:g}), {d['seeds']} seeds, no validation split, the best test "
                  "accuracy over the epochs (selected on the test set), mean ± std in %",
                  ["setting", "binary weights", "float weights", "wall time per run (s)"], rows)
    ok = adm["check"]["admissible"]
    return (table.to_markdown() + f"\n\n'STAM admissible': lambda {adm['lam']:g}, gamma {adm['gamma']:g} (gamma_max "
            f"{adm['gamma_max']:.3g}), beta {adm['beta']:g} (beta_min {adm['beta_min']:.4g}): Theorem conv's hypotheses "
            f"{'hold' if ok else 'fail'} there (`stam stepsize`). Measured on: {d['machine']}.\n\n(`{DIGITS_PAPER}`)")


def _train_speed_block(res: Results) -> str:
    """Throughput of the whole training step, float against STAM, per network, and 1000 epochs projected."""
    from stam.dnn.catalog import MODELS
    from stam.figures.tables import Table

    d = res(TRAIN_SPEED)
    by = {(r["model"], r["algo"]): r for r in d["rows"]}
    rows = [[MODELS.get(m, m), f"{by[(m, 'float')]['images_per_s']:.1f}", f"{by[(m, 'stam')]['images_per_s']:.1f}",
             f"{ratio:.2f}", f"{by[(m, 'stam')]['projected_1000_epochs_hours']:.0f} h"]
            for m, ratio in d["ratio_float_over_stam"].items()]
    table = Table(f"Training throughput on random CIFAR-shaped batches of {d['batch_size']} ({d['device_name']}; best of "
                  f"{d['repeats']}; augmentation, forward, backward, optimiser step)",
                  ["model", "float SGD (images/s)", "STAM (images/s)", "float / STAM",
                   "1000 epochs with STAM, projected"], rows)
    return (table.to_markdown() + f"\n\nTarget float / STAM <= {d['target_ratio']:g}: "
            f"{'met' if d['meets_target'] else 'NOT met'}.\n\n(`{TRAIN_SPEED}`)")


def _synthetic_rates_block(res: Results) -> str:
    """Theorem conv's bound against the measured min_t E S_t of ``stam synthetic run``'s default runs, per problem."""
    from stam.figures.tables import Table

    rows, se, bad, holds = [], [], 0, True
    for name, rel in SYNTHETIC_RATES.items():
        d = res(rel)
        ratios = [r["ratio"] for r in d["rows"] if r.get("ratio") is not None]
        holds &= all(x >= 1 for x in ratios)
        se += [r["S_min_se"] / r["S_min_mean"] for r in d["rows"] if r.get("S_min_mean")]
        bad += sum(r.get("nonfinite", 0) for r in d["rows"])
        grid = d["params"]["T_grid"]
        rows.append([name, f"{d['params']['gamma']:.3g}", f"{min(ratios):.3g} .. {max(ratios):.0f}",
                     f"{d['slope']:.2f} / {d['slope_tail']:.2f}", f"{d['bound_slope']:.2f} / {d['bound_slope_tail']:.2f}",
                     f"{grid[0]}..{grid[-1]}, {d['params']['R']} seeds"])
    table = Table("Theorem conv against STAM, `stam synthetic run --problem NAME` at its defaults (full-gradient S_t, "
                  "b-nice minibatches): bound / measured min_t E S_t over the horizons, fitted log-log slopes",
                  ["problem", "gamma", "bound / measured (min .. max over T)",
                   "slope of min_t E S_t (whole grid / upper half)", "slope of the bound (whole / upper half)",
                   "horizons"], rows)
    return (table.to_markdown() + f"\n\nThe bound {'holds' if holds else 'FAILS'} at every horizon of every problem "
            f"(evidence at these runs, not a certificate); runs diverged: {bad}; the standard error of every estimate is "
            f"at most {100 * max(se):.2g}% of it.\n\n(" + ", ".join(f"`{r}`" for r in SYNTHETIC_RATES.values()) + ")")


def _synthetic_our1_block(res: Results) -> str:
    """What E S_t does at Table para's Our1 constants, outside the theorem: it rises before it falls."""
    import math

    d = res(SYNTHETIC_OUR1)
    det = max(d["details"], key=lambda x: x["T"])
    t, S = det["t"], det["S_mean"]
    top = max(range(len(S)), key=lambda k: S[k] if math.isfinite(S[k]) else -math.inf)
    below = next((t[k] for k in range(top, len(S)) if math.isfinite(S[k]) and S[k] < S[0]), None)
    p = d["params"]
    return (f"At Table para's Our1 constants (`--preset {p.get('preset')}`, gamma = {p['gamma']:g}; T = {det['T']}, "
            f"{p['R']} seeds), E S_t rises from {S[0]:.3g} at t = 0 to {S[top]:.3g} at t = {t[top]} and first falls "
            "below its start at t = " + (f"{below}" if below is not None else "none up to T") + " (at the steps "
            f"evaluated).\n\n(`{SYNTHETIC_OUR1}`)")


def _synthetic_compare_block(res: Results) -> str:
    """``stam synthetic compare`` at an equal budget of sample gradients: each method's final S and losses."""
    from stam.figures.tables import Table, fmt

    rows = []
    for rel in SYNTHETIC_COMPARE:
        d = res(rel)
        p = d["params"]
        where = f"{d['problem']}, 1/beta = {p['step']:.2g} ({'theory' if p['beta_rule'].startswith('theory') else 'given'})"
        rows += [[where, r["method"], str(r["iterations"]), str(r["grad_evals"])]
                 + [fmt(r.get(k)) for k in ("final_S", "objective", "quantised_objective")] for r in d["rows"]]
    table = Table("`stam synthetic compare` at an equal budget of sample gradients (R = 8 runs each): S and the "
                  "objective of the three-block model at each method's output, the robust loss at its binary weights",
                  ["problem, y-step", "method", "iterations", "sample gradients", "final S", "objective", "quantised"],
                  rows)
    return table.to_markdown() + "\n\n(" + ", ".join(f"`{r}`" for r in SYNTHETIC_COMPARE) + ")"


def _pep_speed_block(res: Results) -> str:
    """``stam pep``'s solve time per horizon (the largest over the settings and repetitions), and the standard."""
    from stam.figures.tables import Table

    d = res(PEP_SPEED)
    Ts = sorted({r["T"] for r in d["rows"]})
    settings = sorted({(r["lam"], r["gamma"], r["beta"]) for r in d["rows"]})
    rows = []
    for T in Ts:
        at = [r for r in d["rows"] if r["T"] == T]
        rows.append([str(T), str(at[0]["gram_size"]), f"{max(r['median_s'] for r in at):.2g} s",
                     f"{max(r['max_s'] for r in at):.2g} s", ", ".join(sorted({r['status'] for r in at}))])
    table = Table(f"stam pep's SDP per horizon at {len(settings)} settings (lambda, gamma, beta) = "
                  + "; ".join(f"({a:g}, {b:g}, {c:g})" for a, b, c in settings) + ", model building included",
                  ["T", "Gram size", "median (slowest setting)", "slowest", "status"], rows)
    lsc = res(PEP_GRID["lsc"]).get("long", [])
    longer = "".join(f" A longer horizon (`long` of `{PEP_GRID['lsc']}`): T = {r['T']} took {r['seconds']:.2g} s." for r in lsc)
    return (table.to_markdown() + f"\n\nThe first call in a process costs {d['first_call_s']:.2g} s more (importing PEPit, cvxpy "
            f"and torch). Standard: {d['standard']}: {'met' if d['max_s'] < 10 and d['all_optimal'] else 'NOT met'} "
            f"(slowest {d['max_s']:.2g} s).{longer} Measured on {d['machine']}.\n\n(`{PEP_SPEED}`)")


def _demo_time_block(res: Results) -> str:
    """The recorded demo's wall time and its steps', slowest first."""
    d = res(DEMO)
    p = d["provenance"]
    steps = sorted(d["steps"], key=lambda x: -x["seconds"])
    return (f"`stam demo{' --quick' if d['quick'] else ''}` took {d['seconds']:.0f} s on {p.get('cpu', p.get('machine'))} "
            f"({p.get('cpus', '?')} CPUs); its steps, slowest first: "
            + ", ".join(f"{x['name']} {x['seconds']:.1f} s" for x in steps if x["seconds"] >= 0.05) + f".\n\n(`{DEMO}`)")


def _user_problem_block(res: Results) -> str:
    """The user's-problem benchmark: estimating the constants at n = N = 1e4, and an iteration's cost."""
    from stam.figures.tables import Table

    d = res(USER_PROBLEM)
    e, it = d["estimation"], d["per_iteration"]
    ok = lambda b: "met" if b else "NOT met"  # noqa: E731
    rows = [[f"all estimates (`estimates()`) of the example at n = {e['n']:g}, N = {e['N']:g} ({e['dtype']})",
             f"{e['seconds']:.1f} s (building the problem: {e['build_seconds']:.1f} s)", "-"],
            ["every constant the theory needs (`constants_report()`)", f"{e['constants_seconds']:.1f} s",
             f"< {e['target_seconds']:g} s: {ok(e['meets_target'])}"],
            [f"one STAM iteration, {it['family']} family, n = {it['n']}, N = {it['N']}, b = {it['b']}, R = {it['R']}: "
             "G composed by autograd (compiled) / hand-written `FiniteSumLoss`",
             f"{1e3 * it['median_seconds']['composed']:.2f} ms / {1e3 * it['median_seconds']['hand']:.2f} ms (median; "
             f"{it['ratio_median']:.2f}x)", f"<= {it['target_ratio']:g}x: {ok(it['meets_target'])}"],
            ["the same, the composed G kept eager (`compile=False`)",
             f"{1e3 * it['median_seconds']['composed_eager']:.2f} ms ({it['ratio_median_eager']:.2f}x)", "-"]]
    table = Table(f"A user's problem ({d['threads']} torch threads; settings: {e['settings']})",
                  ["what", "measured", "target"], rows)
    return table.to_markdown() + f"\n\n(`{USER_PROBLEM}`)"


def _theory_speed_block(res: Results) -> str:
    """The theory layer's speed: ``stam stepsize``'s cold start, the numeric layer on 10^6 points, ``stam paper-check``."""
    from stam.figures.tables import Table

    base, check = (res(r) for r in THEORY_SPEED)
    load = lambda d: f"load {d['machine']['loadavg_before'][0]:.1f} before"  # noqa: E731
    cold, grid = base["stepsize_cold_start"], base["numeric_grid_1e6"]
    imports = [m for m in ("torch", "sympy", "scipy") if cold.get(f"imports_{m}")]
    pc = check["paper_check"]
    rows = [[f"`stam stepsize ... --json` cold start, subprocess, median of {cold['repeats']}",
             f"{cold['median_s']:.2f} s (bare `python -c pass`: {cold['python_startup_median_s']:.2f} s)", "< 1 s"],
            ["modules `stam stepsize` imports of torch, sympy, scipy", ", ".join(imports) or "none of them", "no torch"],
            [f"numeric layer, {grid['points']:.0e} (gamma, lambda) points: " + " / ".join(grid["median_s"]),
             " / ".join(f"{v:.3f} s" for v in grid["median_s"].values()), "< 0.5 s"],
            [f"`stam paper-check --json` ({pc['json_cold']['items']} items), derived from scratch ({load(check)})",
             f"{pc['json_cold']['wall_s']:.1f} s wall, {pc['json_cold']['cpu_s']:.1f} s CPU", "< 10 s"],
            ["`stam paper-check --brief`, derived from scratch / read back from its store",
             f"{pc['brief_cold']['wall_s']:.1f} s / {pc['brief_stored']['wall_s']:.1f} s wall "
             f"({pc['brief_cold']['cpu_s']:.1f} s / {pc['brief_stored']['cpu_s']:.1f} s CPU)", "< 10 s"]]
    table = Table(f"The theory layer ({base['machine']['cpus']} CPUs; the first three rows at {load(base)})",
                  ["what", "measured", "target"], rows)
    return table.to_markdown() + "\n\n(" + ", ".join(f"`{r}`" for r in THEORY_SPEED) + ")"


def _synthetic_speed_block(res: Results) -> str:
    """The synthetic experiments' speed: time per iteration over (n, R), growth in n and b, batching, one iteration."""
    from stam.figures.tables import Table

    d = res(SYNTHETIC_SPEED)
    ns, Rs = sorted({r["n"] for r in d["grid"]}), sorted({r["R"] for r in d["grid"]})
    at = {(r["n"], r["R"]): r["seconds_per_iter"] for r in d["grid"]}
    t = lambda x: f"{1e3 * x:.3g} ms" if x < 1 else f"{x:.3g} s"  # noqa: E731
    g0 = d["grid"][0]
    table = Table(f"Time per iteration (best), b = {g0['b']}, N = {g0['N']}, problem {d['settings']['problem']}, "
                  f"{d['settings']['dtype']}, {d['settings']['threads']} torch thread",
                  ["n"] + [f"R = {R}" for R in Rs], [[f"{n:g}"] + [t(at[(n, R)]) if (n, R) in at else "skipped" for R in Rs]
                                                      for n in ns])
    gn, gb, bs, it = d["growth_n"], d["growth_b"], d["batched_vs_sequential"], d["iteration_vs_gradient"]
    lines = [f"- growth in n (R = {gn['R']}, b = {gn['b']}): " + ", ".join(f"{1e9 * x:.1f}" for x in gn["seconds_per_unit"])
             + f" ns per coordinate at n = {', '.join(f'{n:g}' for n in gn['n'])}; log-log slope {gn['slope']:.2f} "
             f"({gn['slope_top_decade']:.2f} over the top decade), an affine fit within {100 * gn['affine_fit']['max_relative_residual']:.0f}%.",
             f"- growth in b (n = {gb['n']:g}, R = {gb['R']}): " + ", ".join(f"{1e6 * x:.0f}" for x in gb["seconds_per_unit"])
             + f" us per sampled row at b = {', '.join(map(str, gb['b']))}; slope {gb['slope']:.2f} "
             f"({gb['slope_top_decade']:.2f} over the top decade).",
             f"- one STAM iteration at n = {it['n']:g}, b = {it['b']}: {it['ratio']:.2f}x the stochastic gradient it "
             f"contains (best times; {it['ratio_median']:.2f}x on medians), target {it['target']}.",
             f"- batched against sequential at n = {bs['n']:g}, R = {bs['R']}: "
             + "; ".join(f"{v['speedup']:.1f}x with {k} thread{'s' if k != '1' else ''} (quartiles {v.get('speedup_q1', 0):.1f}-"
                         f"{v.get('speedup_q3', 0):.1f}, {v['rounds']} rounds)" for k, v in bs["by_threads"].items())
             + f", target {bs['target']}."]
    skipped = f"\n\nSkipped (memory): {d['skipped']}." if d.get("skipped") else ""
    return table.to_markdown() + "\n\n" + "\n".join(lines) + skipped + f"\n\n(`{SYNTHETIC_SPEED}`)"


def _optim_speed_block(res: Results) -> str:
    """The optimisers' step on VGG-11's parameters, against torch.optim.SGD's, and their state; where the file has
    them, STAM's start as a torch user builds it (its first step, the step that compiles) and the ratio to SGD with
    momentum that memory traffic alone sets."""
    from stam.figures.tables import Table

    d = res(OPTIM_SPEED)
    bases = [k for k in ("sgd", "sgd_momentum", "sgd_nowd", "sgd_momentum_nowd") if k in next(iter(d["rows"].values()))["ratio_to"]]
    names = {"sgd": "/ SGD", "sgd_momentum": "/ SGD momentum 0.9", "sgd_nowd": "/ SGD without weight decay",
             "sgd_momentum_nowd": "/ SGD momentum 0.9 without weight decay"}
    rows = [[r["description"], f"{r['step_ms_median']:.3g}"] + [f"{r['ratio_to'][k]:.2f}" for k in bases]
            + [f"{r['state_bytes_per_quantized_param']:.0f}"] for r in d["rows"].values()]
    table = Table(f"Optimiser step on the parameters of {d['model']} ({d['params_total']:,} parameters, "
                  f"{d['params_quantized']:,} quantised; {d['device']}, {d['threads']} thread, torch {d['torch']}, "
                  f"{d['rounds']} interleaved rounds; ratios are medians of per-round ratios)",
                  ["optimiser", "step (ms, median)", *(names[k] for k in bases), "state bytes per quantised parameter"], rows)
    lines = []
    if "auto_start" in d:
        a = d["auto_start"]
        lines.append(f"- STAM as a torch user builds it (`compile=\"auto\"`): first step {a['first_step_s']:.2f} s (eager), "
                     f"second {a['second_step_s']:.2f} s; it compiles at its step {a['compile_after_steps']:,} "
                     f"(`stam.compiling.compile_after_steps`), which took {a['compiling_step_s']:.1f} s with "
                     f"{'an empty' if a['cold_cache'] else 'the present'} inductor cache.")
    if "traffic_limit" in d:
        t = d["traffic_limit"]
        st, sg = t["passes"]["stam"], t["passes"]["sgd_momentum_nowd"]
        lines.append(f"- Memory traffic alone: a compiled STAM step reads {st['reads']} and writes {st['writes']} tensors of the "
                     f"parameters' size, SGD with momentum {sg['reads']} and {sg['writes']}: a ratio of "
                     f"{t['ratio_writes_once']:.2f} (a write counted once) to {t['ratio_writes_twice']:.2f} (twice: it first reads "
                     "its cache line).")
    return table.to_markdown() + ("\n\n" + "\n".join(lines) if lines else "") + f"\n\n(`{OPTIM_SPEED}`)"


def _imagefolder_block(res: Results) -> str:
    """Loading the JPEG copy of CIFAR-10: the first load, and every load after it from the cache."""
    d = res(IMAGEFOLDER_LOAD)
    c, dl = d["cached_load_s"], d["data_load_from_cache_s"]
    return (f"{d['images']['train'] + d['images']['test']:,} images in a {d['archive']['bytes'] / 1e6:.0f} MB archive "
            f"({d['source']['note']}), on {d['machine']}, load average {d['load_average_before']['first'][0]:.1f} "
            f"before: the first load (read in memory, check, decode, cache) {d['first_load_s']:.1f} s with "
            f"{d['workers']} processes, {d['first_load_serial_s']:.1f} s with one; a load from the cache "
            f"{c['median']:.2f} s (median of {len(c['all'])}, the slowest {max(c['all']):.2f} s), checksums of archive and "
            f"arrays ({d['cache_bytes'] / 1e6:.0f} MB) included; `stam.dnn.data.load` from the cache {dl['median']:.1f} s. "
            f"Standard: {d['standard']}: {'met' if d['meets_standard'] else 'NOT met'}.\n\n(`{IMAGEFOLDER_LOAD}`)")


def _gpu_speed_block(res: Results) -> str:
    """The paper's width on one GPU: throughput per algorithm, the targets, STAM's update and the peak memory."""
    from stam.figures.tables import Table

    g = res(GPU_WIDTH1)
    s, tp, up, tg = g["settings"], g["throughput"], g["update"], g["targets"]
    label = {k: v["label"] for k, v in g["summary"].items()}
    rows = [[label.get(a, a), f"{tp[a]['images_per_s']:,.0f}", f"{tp[a]['run_epoch_s']:.2f} s"] for a in s["algos"] if a in tp]
    table = Table(f"VGG-11 at width {_width(s['width'])}, batch {s['batch_size']}, seeds {', '.join(map(str, s['seeds']))} "
                  f"{'as one wide network' if s.get('batch_seeds') else 'one after the other'}, "
                  f"{'bf16' if s.get('bf16') else 'float32'}, on one {g['device']['name']} (torch {g['device']['torch']})",
                  ["algorithm", "images/s", "epoch of one run"], rows)
    met = lambda t: f"{t['value']:.2f} against {t['target']:g}: {'met' if t['met'] else 'NOT met'}"  # noqa: E731
    return (table.to_markdown() + f"\n\nSTAM's images/s over Float's {met(tg['stam_over_float_images_per_s'])}; a STAM "
            f"epoch of one run in seconds {met(tg['stam_run_epoch_s'])}. "
            f"STAM's update on {up['parameters'] / 1e6:.1f} M parameters ({up['runs']} runs): {up['stam_ms']:.2f} ms "
            f"{'compiled' if up.get('stam_compiled') else 'eager'} ({up['stam_eager_ms']:.2f} ms eager) against "
            f"{up['torch_sgd_momentum_ms']:.2f} ms for torch.optim.SGD with momentum ({up['stam_over_sgd']:.1f}x); peak GPU "
            f"memory {g['memory']['peak_bytes'] / 2**30:.2f} GiB; the probe: {g['probe']['float32_R1_ms']:.1f} ms a step of one "
            f"network (float32), {g['probe']['wide_R2_ms']:.1f} ms for two side by side. The whole run took "
            f"{g['seconds']['total']:.0f} s.\n\n(`{GPU_WIDTH1}`)")


def _batched_speed_block(res: Results) -> str:
    """R digits trainings batched as one computation against one after the other, per device and algorithm."""
    from stam.figures.tables import Table

    rows, notes = [], []
    for rel in BATCHED_SPEED:
        d = res(rel)
        dev = d["device_name"] or f"{d['device'].upper()} ({d['threads']} threads)"
        for algo, r in d["results"].items():
            rows.append([dev, algo.upper(),
                         f"{r['speedup']:.1f}x (R = {r['R']})", f"{r['ms_per_run_epoch_sequential']:.3g}, "
                         f"{r['ms_per_run_epoch_batched']:.3g}, {r['ms_per_run_epoch_R64']:.3g}"])
        pr = d["projections"]
        notes.append(f"{dev}: the default digits map {pr['stam_map_digits_default_s']:.0f} s, the default `stam tune` "
                     f"{pr['stam_tune_default_s']:.0f} s")
    table = Table("The MLP's trainings batched (R runs as stacked tensors, one compiled update) against one after the "
                  "other", ["device", "algorithm", "batched vs one after the other", "ms per run-epoch: sequential, "
                                                                                  "batched R = 16, R = 64"], rows)
    note = res(BATCHED_SPEED[0])["projections"].get("note", "")
    return (table.to_markdown() + "\n\n" + (note[:1].upper() + note[1:] if note else "Projected") + ": " + "; ".join(notes)
            + ".\n\n("
            + ", ".join(f"`{r}`" for r in BATCHED_SPEED) + ")")


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


# --------------------------------------------------------------------------- the trainer's speed (docs/benchmarks.md)

def _net(name: str) -> str:
    """A network's name as the pages write it."""
    return {"vgg11": "VGG-11", "vgg16": "VGG-16", "resnet18": "ResNet-18", "mlp": "MLP", "cnn": "CNN"}.get(name, name)


def _met(ok) -> str:
    return "met" if ok else "NOT met"


def _spread(values, fmt: str = ".2f") -> str:
    """``lo-hi`` of ``values`` (one value: itself)."""
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"


def _load(values) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def _deciding_time_block(res: Results) -> str:
    """The deciding study's calls on one GPU (their times, as ``benchmarks/gpu_cifar10_study.sh`` logged them), its run-epochs
    from its tuning's protocol, and the CPU's sittings of the same tuning."""
    from stam.io import read_input_text

    root = res.root
    device = read_input_text(root / DECIDING_GPU / "device.txt", f"{DECIDING_GPU}/device.txt").strip()
    calls = read_input_text(root / DECIDING_GPU / "times.txt", f"{DECIDING_GPU}/times.txt").strip().splitlines()
    p = res(f"{DECIDING_GPU}/tune/tune-cifar10.json")["params"]
    cpu = res(DECIDING_CPU)
    parts = [x for x in cpu["sittings"] if x["part"] == "tune" and not x.get("paper_rows")]
    timed = [x["seconds"] for x in parts if x["seconds"] is not None]
    untimed = sum(1 for x in parts if x["seconds"] is None)
    lines = [f"- On one {device} (`{DECIDING_GPU}/times.txt`, {len(calls)} calls of the script): " + "; ".join(calls) + ".",
             f"- The tuning's protocol ({len(p['algos'])} algorithms, {p['trials']} trials halved by {p['halving']}, "
             f"{p['epochs']} epochs, {p['seeds']} paired seeds; {_net(p['model'])} at width {_width(p['width'])}): "
             f"{len(p['algos'])} x {p['seeds']} x {p['epochs']} = {len(p['algos']) * p['seeds'] * p['epochs']:,} final "
             "run-epochs besides the trials'.",
             f"- The same tuning on the 2-core CPU (`{DECIDING_CPU}`, two jobs side by side): {len(parts)} sittings, "
             f"{sum(timed):,.0f} s in the {len(timed)} timed" + (f", {untimed} not timed" if untimed else "")
             + "; " + "; ".join(f"{x['algos']}: " + ("not timed" if x["seconds"] is None else f"{x['seconds']:,.0f} s")
                               for x in parts) + "."]
    return "\n".join(lines) + f"\n\n(`{DECIDING_GPU}/`, `{DECIDING_CPU}`)"


def _batched_cifar_block(res: Results) -> str:
    """R = 8 runs of VGG-11/8 as one wide network against one after the other, and the trainer with R = 1 against a
    hand-written ``torch.optim`` loop; where the time goes, and the bound it sets."""
    from stam.figures.tables import Table

    rows, notes, files = [], [], []
    for rel in BATCHED_CIFAR:
        d = res(rel)
        r, b = d["results"], d["results"]["breakdown"]
        one = {a: r[f"{a}, one seed (tuning trials)"] for a in ("stam", "bc")}
        fresh = {a: r[f"{a}, R seeds (fresh-seed runs)"] for a in ("stam", "bc")}
        loop = {a: r[f"{a}, R = 1 vs torch.optim loop"] for a in ("stam", "bc")}
        R = one["stam"]["R"]
        rows.append([str(d["threads"]),
                     ", ".join(f"{a.upper()} {x['speedup']:.2f}x ({x['batched_s']:.1f} s against {x['sequential_s']:.1f} s)"
                               for a, x in one.items()),
                     ", ".join(f"{a.upper()} {x['speedup']:.2f}x" for a, x in fresh.items()),
                     ", ".join(f"{x['ratio']:.2f} ({a.upper()})" for a, x in loop.items())])
        notes.append(f"{d['threads']} thread{'s' if d['threads'] != 1 else ''}: the network's forward and backward passes "
                     f"and the evaluation {100 * b['network_share_R1']:.0f}% of a training ({b['algo'].upper()}, R = 1); the "
                     f"wide network of {R} runs {b['wide_over_R_single']:.2f}x the {R} networks one after the other; so at most "
                     f"{b['max_speedup_if_overhead_vanished']:.2f}x faster batched even if all else vanished")
        files.append(rel)
    d = res(BATCHED_CIFAR[0])
    table = Table(f"{_net(d['model'])} at width {_width(d['width'])}, batch {d['batch_size']}, {d['n_train']:,} training "
                  f"images a run ({d['note']}), R = {R}",
                  ["threads", f"R = {R} batched / one after the other: one seed (tuning trials)", "R seeds (fresh-seed runs)",
                   "R = 1 trainer / `torch.optim` loop"], rows)
    best = max(x["speedup"] for rel in BATCHED_CIFAR for k, x in res(rel)["results"].items() if "speedup" in x)
    worst_loop = max(x["ratio"] for rel in BATCHED_CIFAR for k, x in res(rel)["results"].items() if k.endswith("loop"))
    return (table.to_markdown() + "\n\n" + "\n".join(f"- {n}." for n in notes)
            + f"\n- Targets: batched at least 1.5x at R = {R}: {_met(best >= 1.5)} (at most {best:.2f}x); R = 1 at most "
            f"1.1x of the `torch.optim` loop: {_met(worst_loop <= 1.1)} (at most {worst_loop:.2f})."
            + "\n\n(" + ", ".join(f"`{r}`" for r in files) + ")")


def _epoch_vs_loop_block(res: Results) -> str:
    """An epoch of ``stam train`` against plain loops (medians of per-round ratios), where its time goes, the layouts'
    and bf16's training pass, and the digits CNN's accuracies under each."""
    from stam.figures.tables import Table

    d = res(EPOCH_VS_LOOP)
    rounds, b = d["rounds"], d["breakdown"]
    span = lambda k: _spread([r[k] for r in rounds])  # noqa: E731
    table = Table(f"An epoch of `stam train` ({d['algo']}, {_net(d['model'])} at width {_width(d['width'])}, batch "
                  f"{d['batch_size']}, every count of a CIFAR-10 epoch scaled by {d['scale']:g}: {d['train_images']:,} "
                  f"training, {d['val_images']:,} validation, {d['test_images']:,} test, {d['bn_images']:,} BatchNorm images, "
                  f"{d['steps']} steps; {len(rounds)} rounds, {d['threads']} thread, load {d['load_1min_before']:.1f} before, "
                  f"{d['load_1min_after']:.1f} after)",
                  [f"`stam train` epoch ({span('stam_train_s')} s) over", "ratio (median; the rounds)"],
                  [["a plain loop with the same evaluation, written by hand, channels_last as `stam train`",
                    f"**{d['median_ratio_to_same_evaluation']:.2f}** ({span('ratio_to_same_evaluation')}): target at most "
                    f"{d['target_ratio']:g}, {_met(d['meets_target'])}"],
                   ["a plain loop evaluating its own network on validation and test, contiguous (the default layout)",
                    f"{d['median_ratio_to_plain']:.2f} ({span('ratio_to_plain')})"],
                   ["the same plain loop in channels_last",
                    f"{d['median_ratio_to_plain_channels_last']:.2f} ({span('ratio_to_plain_channels_last')})"]])
    v = d["variants"]
    acc = d["accuracy_digits_cnn"]
    lines = [f"- Where the time goes (the parts alone): training pass {b['training_pass_s']:.2f} s; evaluation "
             f"{b['evaluation_s']:.2f} s (binary weights {b['evaluate_binary_s']:.2f}, float weights {b['evaluate_float_s']:.2f}, "
             f"the as-trained diagnostic {b['as_trained_val_s']:.2f}), of which each BatchNorm re-estimation "
             f"{b['reestimate_s']:.3f} s; sign flips {b['sign_flips_s']:.3f} s.",
             "- The training pass against float32 contiguous: " + ", ".join(f"{k} {x['over_float32']:.2f}x" for k, x in v.items()
                                                                           if k != "float32") + ".",
             "- `stam train` of the CNN on digits, test accuracy (%) at the validation-selected epoch: "
             + "; ".join(f"{k}: " + ", ".join(f"{a.upper() if a != 'float' else 'Float'} {x['selected_test_acc']:.1f}"
                                              for a, x in run.items()) for k, run in acc.items()) + "."]
    return table.to_markdown() + "\n\n" + "\n".join(lines) + f"\n\n(`{EPOCH_VS_LOOP}`)"


def _bn_cost_block(res: Results) -> str:
    """The BatchNorm rule's cost against a training epoch, and what a subset of the training set moves on digits."""
    from stam.figures.tables import Table

    c, s = res(BN_COST), res(BN_SUBSET)
    lines = [f"- {_net(r['model'])}{'' if r['width'] == 1 else ' at width ' + _width(r['width'])} (batch {r['batch_size']}, "
             f"{r['bn_images_used']:,} of {r['train_images']:,} training images): a re-estimation "
             f"{1e3 * r['reestimate_s']:.3g} ms (its forward passes alone {1e3 * r['forward_passes_s']:.3g} ms), two "
             f"{100 * r['reestimate_share_of_epoch']:.1f}% of a {r['epoch_s']:.3g} s epoch: {_met(r['meets_target'])}"
             for r in c["rows"]]
    rows = [[f"{x['n']:,}" + (" (the default)" if x["n"] == s["default_images"] else ""),
             f"{x['mean_abs_delta_points']:.2f}", f"{x['max_abs_delta_points']:.2f}", f"{x['mean_delta_points']:+.2f}",
             f"{1e3 * s['reestimate_s'][str(x['n'])]:.2f}" if str(x["n"]) in s["reestimate_s"] else "-"] for x in s["by_size"]]
    whole = max(int(n) for n in s["reestimate_s"])
    table = Table(f"Digits: accuracy with statistics re-estimated on a subset against {s['reference']} ({s['seeds']} seeds, "
                  f"after epochs {', '.join(map(str, s['evaluated_after']))}, binary and float weights, validation and test, "
                  f"{s['subsets']} random subsets of each size, {sum(x['accuracies'] for x in s['by_size'][:1]):,} accuracies "
                  "a size)",
                  ["images", "mean |change| (points)", "largest |change|", "mean change (bias)", "re-estimation (ms)"], rows)
    return ("Target: " + c["target"] + ".\n\n" + "\n".join(lines) + "\n\n" + table.to_markdown()
            + f"\n\nOn the whole training set ({whole:,} images) a re-estimation takes {1e3 * s['reestimate_s'][str(whole)]:.2f} ms."
            f"\n\n(`{BN_COST}`, `{BN_SUBSET}`)")


def _float_ceiling_block(res: Results) -> str:
    """Float training of the study's network in a plain loop: the last epoch's test accuracy three ways, per recipe."""
    from stam.figures.tables import Table

    d = res(FLOAT_CEILING)
    rows = [[name, run["about"]] + [f"{run['log'][-1][k]:.1f}" for k in ("test_acc", "test_acc_reestimated",
                                                                            "test_acc_reestimated_augmented")]
            + [f"{run['best']:.1f}"] for name, run in d["runs"].items()]
    table = Table(f"Test accuracy (%) at epoch {d['epochs']} of {_net(d['model'])} at width {_width(d['width'])} "
                  f"({d['train_images']:,} training images of the JPEG copy, seed {d['seed']}, `torch.optim.SGD`)",
                  ["recipe", "what it is", "running statistics", "re-estimated (unaugmented)",
                   "re-estimated (cropped and flipped once)", "best epoch (running)"], rows)
    return table.to_markdown() + f"\n\n(`{FLOAT_CEILING}`)"


def _memory_estimate_block(res: Results) -> str:
    """The estimate of a sweep's memory against measured peaks: the range of their ratio, the file's own fit, the spread
    of two processes of one configuration and the share of the parameters' copies."""
    d = res(MEMORY_ESTIMATE)
    rows, fit = d["rows"], d["fit"]
    spread = max(rows, key=lambda r: max(r["measured_each"]) / min(r["measured_each"]))
    lo, hi = min(spread["measured_each"]), max(spread["measured_each"])
    share = max(fit["param_copies"] * 4 * r["params"] * r["R"] / r["estimate"] for r in rows)
    mib = 2**20
    return (f"- {len(rows)} configurations ({_net(d['model'])}, {d['algo']}, {d['steps']} steps, {d['repeats']} "
            f"processes each): estimate / measured from {d['ratio_min']:.2f} to {d['ratio_max']:.2f}; this run's own "
            f"fit: {fit['fixed_bytes'] / mib:.1f} MiB and {fit['activation_copies']:.2f} copies of the activations "
            f"({fit['param_copies']} of the parameters kept).\n"
            f"- Two processes of one configuration differ by up to {100 * (hi / lo - 1):.0f}% ({lo / mib:.0f} and "
            f"{hi / mib:.0f} MiB at width {_width(spread['width'])}, batch {spread['batch_size']}, R = {spread['R']}): "
            "the allocator's pools, so no estimate is closer than that spread.\n"
            f"- The parameters' copies are at most {100 * share:.0f}% of an estimate here: these runs hardly test them.\n\n"
            f"(`{MEMORY_ESTIMATE}`)")


def _onednn_block(res: Results) -> str:
    """oneDNN's channels-last passes by guard, instruction set and threads: how many ended ok, wrong, crashed or hung."""
    from collections import Counter

    from stam.figures.tables import Table

    d = res(ONEDNN)
    cells = Counter()
    for r in d["rows"]:
        cells[(r["guarded"], r["onednn_max_isa"], r["threads"])] += 0
        cells[(r["guarded"], r["onednn_max_isa"], r["threads"], r["outcome"].split(" (")[0])] += 1
    keys = sorted({k for k in cells if len(k) == 3}, key=lambda k: (k[0], k[1], k[2]))
    outcomes = [o for o in ("ok", "wrong", "crashed", "hung") if any(len(k) == 4 and k[3] == o for k in cells)]
    rows = [["on" if g else "off", isa, str(t)] + [str(cells[(g, isa, t, o)]) for o in outcomes] for g, isa, t in keys]
    pv = d["provenance"]
    table = Table(f"Passes of ResNet-18 in channels-last by outcome ({pv['cpu']}, {pv['cpu_isa']}, oneDNN {pv['onednn']}, "
                  f"torch {pv['versions']['torch']}; widths {', '.join(_width(w) for w in sorted({r['width'] for r in d['rows']}))})",
                  ["guard", "oneDNN instruction set", "threads", *outcomes], rows)
    return (table.to_markdown() + f"\n\nEvery guarded pass ok: {'yes' if d['guarded_all_ok'] else 'NO'}.\n\n(`{ONEDNN}`)")


def _train_digits_cost_block(res: Results) -> str:
    """A whole ``stam train`` on digits: STAM's training over Float's, and what a process adds to its training."""
    d = res(TRAIN_DIGITS_COST)
    f, s, p, g = d["medians"]["float"], d["medians"]["stam"], d["medians"]["stam_proxies"], d["goals"]
    met = lambda key: "met" if d["meets"][key] else "not met"  # noqa: E731
    cpu = d["provenance"].get("cpu") or d["provenance"].get("machine", "")
    return (f"`{d['command']}`, one thread, {d['repeats']} processes of each alternating, medians ({cpu}; load average "
            f"{d['loadavg_before'][0]:.1f} before): Float trains in {f['training_s']:.2f} s and STAM in {s['training_s']:.2f} s, "
            f"{d['training_ratio']:.2f}x (goal at most {g['training_ratio']}x: {met('training_ratio')}); with `--proxies` "
            f"(STAM's stationarity diagnostics, a further pass over the weights every step) {p['training_s']:.2f} s, "
            f"{d['training_ratio_with_proxies']:.2f}x. A process adds {f['overhead_s']:.2f} s (Float), {s['overhead_s']:.2f} s "
            f"(STAM) and {p['overhead_s']:.2f} s (STAM with `--proxies`) to its training (goal at most "
            f"{g['process_overhead_s']:g} s for each: {met('process_overhead_s')}).\n\n(`{TRAIN_DIGITS_COST}`)")


def _algo_cost_block(res: Results) -> str:
    """Each algorithm's training time over float's in the one trainer (digits, eager and ahead of time; VGG-11 at its
    widths; the compiled update against ``torch.optim.SGD``), the ahead-of-time build, and ``stam train``'s start."""
    from stam.figures.tables import Table

    full, dig, start = res(ALGO_COST), res(ALGO_COST_DIGITS), res(TRAIN_START)
    algos = ("stam", "bc", "br", "psgd")
    proxies = lambda part: "with" if part.get("stam_proxies", True) else "without"  # noqa: E731  (files before the key: with)
    eager = dig["digits"]["rows"]
    rows = [[f"digits MLP, {dig['digits']['epochs']} epochs, batch {dig['digits']['batch_size']}, training time / float "
             f"(eager: `--compile auto`; STAM {proxies(dig['digits'])} `--proxies`)"]
            + [f"{eager[a]['ratio_to_float']:.2f}" for a in algos],
            ["the same with `--compile aot` (packages built by an earlier run)"]
            + [f"{dig['digits_compile_aot']['rows'][a]['ratio_to_float']:.2f}" for a in algos]]
    widths = full["vgg11"]["widths"]
    for w, cell in widths.items():
        rows.append([f"VGG-11 width {_width(float(w))}, time per image / float (STAM {proxies(full['vgg11'])} its proxies)"]
                    + [f"{cell[a]['ratio_to_float']:.2f}" for a in algos])
    inter = {w: c["compiled update, interleaved"] for w, c in widths.items() if "compiled update, interleaved" in c}
    for w, c in inter.items():
        rows.append([f"VGG-11 width {_width(float(w))}, the update alone compiled / `torch.optim.SGD` (momentum; "
                     f"median of per-round ratios; STAM {proxies(full['vgg11'])} its proxies)"] + [f"{c[a]['median_ratio_to_torch_sgd_momentum']:.2f}" for a in algos])
    table = Table(f"What each algorithm costs in the trainer, against float SGD with momentum in the same trainer "
                  f"({full['threads']} torch thread)", ["", *(a.upper() for a in algos)], rows)
    # each target from the file that measured it: the digits ones from the digits file, VGG-11's from the full one
    # (a file without VGG-11 rows holds them vacuously); the baselines' one over the rows shown
    met = {**{k: v for k, v in dig["targets_met"].items() if k.startswith("digits")},
           **{k: v for k, v in full["targets_met"].items() if k.startswith("vgg11")},
           "bc, br, psgd <= 1.1 everywhere": all(r[a]["ratio_to_float"] <= 1.1 for r in [eager, *widths.values()]
                                                 for a in ("bc", "br", "psgd"))}
    build = dig["digits_compile_aot"]["first_run_build_wall_s"]
    st = start["rows"]
    lines = ["- Targets: " + "; ".join(f"{k}: {_met(v)}" for k, v in met.items()) + ".",
             f"- `--compile aot`: the first run builds the package in {_spread(build.values(), '.0f')} s of wall time "
             "(`first_run_build_wall_s`); every later process loads it.",
             "- A fresh `stam train` process on digits reaches its first training step in "
             + ", ".join(f"{x['first_step_s_median']:.2f} s ({a})" for a, x in st.items())
             + f", medians of {next(iter(st.values()))['repeats']} (target {start['target_first_step_s']:g} s: "
             f"{_met(start['meets_target'])}); it imports "
             + ("no scikit-learn, no scipy and no sympy" if not any(x["imports_sklearn"] or x["imports_scipy"] or x["imports_sympy"]
                                                                 for x in st.values()) else "scikit-learn, scipy or sympy") + "."]
    return table.to_markdown() + "\n\n" + "\n".join(lines) + f"\n\n(`{ALGO_COST}`, `{ALGO_COST_DIGITS}`, `{TRAIN_START}`)"


def _methods_steps_time_block(res: Results) -> str:
    """The digits step sweep of the four methods: its size and each method's seconds, as the file records them."""
    d = res(METHODS_STEPS)
    per = sorted(d["methods"], key=lambda m: -m["seconds"])
    return (f"{len(d['multiples'])} step multiples x {d['seeds']} seeds x {d['epochs']} epochs per method as one batched "
            "job; each method's `seconds` in the file: " + ", ".join(f"{m['algo'].upper()} {m['seconds']:.0f} s" for m in per)
            + f" ({sum(m['seconds'] for m in per) / 60:.0f} minutes in all).\n\n(`{METHODS_STEPS}`)")


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
    "pep-gamma-lam-scan": _pep_scan_block,
    "lyapunov-bench": _lyapunov_bench_block,
    "certificates": _certificates_block,
    "batched-speed": _batched_speed_block,
    "gpu-speed": _gpu_speed_block,
    "optim-speed": _optim_speed_block,
    "train-digits-cost": _train_digits_cost_block,
    "imagefolder-load": _imagefolder_block,
    "synthetic-speed": _synthetic_speed_block,
    "theory-speed": _theory_speed_block,
    "demo-time": _demo_time_block,
    "user-problem": _user_problem_block,
    "pep-speed": _pep_speed_block,
    "synthetic-rates": _synthetic_rates_block,
    "synthetic-our1": _synthetic_our1_block,
    "synthetic-compare": _synthetic_compare_block,
    "digits-paper-protocol": _digits_paper_block,
    "train-speed": _train_speed_block,
    "slices": _slices_block,
    "bn-augment": _bn_augment_block,
    "region": _region_block,
    "gpu-width1": _gpu_block,
    "cifar10-earlier": _earlier_block,
    "float-probes": _float_block,
    "cifar10-deciding-time": _deciding_time_block,
    "batched-cifar": _batched_cifar_block,
    "epoch-vs-loop": _epoch_vs_loop_block,
    "bn-cost": _bn_cost_block,
    "float-ceiling": _float_ceiling_block,
    "memory-estimate": _memory_estimate_block,
    "onednn-channels-last": _onednn_block,
    "algo-cost": _algo_cost_block,
    "methods-table": _methods_block,
    "methods-steps-time": _methods_steps_time_block,
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
