"""``stam demo``: the whole toolkit end to end on built-in defaults (the README's main job).

A pipeline of library calls: each step calls the toolkit's functions (an experiment with typed
parameters through its parameters object and its run), gets their results as values and writes them
with the same writers the commands use (so every file it leaves is the file the command would write):

1. the paper audit (:func:`stam.theory.papercheck.audit.findings`, the file of ``stam paper-check --out``),
2. a synthetic rate experiment on the default problem at admissible parameters and (full demo
   only) at the paper's Our1 parameters (``stam synthetic run``: :func:`stam.synthetic.commands.rates_experiment`
   of a :class:`~stam.synthetic.params.RunParams`), and the baselines at an equal gradient budget
   (``stam synthetic compare``: :func:`~stam.synthetic.commands.compare_experiment`),
3. admissible step sizes for that problem, from the constants the experiment recorded
   (:func:`stam.theory.symbolic.numeric.recommend`, as ``stam stepsize``),
4. the exact worst case of deterministic STAM for the paper's class (any proper lsc F) for a few T
   (:func:`stam.theory.worstcase.pep.pep_sweep`) at the parameters of the one admissible-parameter rule
   (:func:`stam.theory.symbolic.numeric.admissible_parameters`), and the certified region by automated
   Lyapunov search for that class, full and minibatch gradients, with convex F beside it
   (:func:`stam.theory.worstcase.lyapunov.compute_region` of a :class:`stam.theory.params.RegionParams`),
5. the convergence map of the synthetic problem over (gamma, lambda) (``stam map --problem``:
   :func:`stam.figures.map_experiment.make_map` of a :class:`~stam.figures.map_experiment.MapParams`),
6. the equal-budget comparison on digits (:func:`stam.dnn.tune.tune`): the same number of trials
   for STAM, BC, BR, PSGD and float, chosen on validation data, numbers from fresh seeds, the
   paper's settings as labelled rows,
7. the convergence map on digits (``stam map --dataset digits``, the same run),
8. training curves (:func:`stam.dnn.train.train`) of STAM and BC at their tuned settings and of
   STAM at a theorem-admissible setting, with the sign flips of their binary weights,
9. the report (:func:`stam.figures.report.build_report`): ``OUT/report.html``.

Nothing is downloaded.  A step whose optional extra is not installed (the PEP needs ``pep``) is
reported as missing and the rest still runs; a step that fails is reported with its error, its
traceback is kept in ``OUT/logs/``, and the demo's exit status is then 1.

Atomic output: everything is built in a staging folder beside ``OUT`` and swapped into place at
the end, so ``OUT`` always holds one complete demo (the previous one until the new one is done).
``OUT`` must be new, empty, or a folder an earlier ``stam demo`` wrote (it carries a marker file).
Each step's words (its brief and its result line) are made in :mod:`stam.figures.demo_text`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from stam.dnn import catalog
from stam.errors import UsageError
from stam.figures import report
from stam.figures.map_experiment import MapParams, summary_line
from stam.figures.map_experiment import make_map
from stam.io import atomic_write_json, atomic_write_text, bar_disable, provenance, slug
from stam.io import check_out_dir
from stam.synthetic.commands import COMPARE_DEFAULTS
from stam.cliargs import log_grid
from stam.synthetic.families import MAP_GAMMAS, MAP_LAMS
from stam.dnn.presets import paper_presets
from stam.theory.papercheck import audit
from stam.theory.worstcase import lyapunov, pep
from stam.theory.symbolic import numeric
from stam.theory.papercheck.items import PAPER_CHECK
from stam.figures.demo_text import (DIGITS_GOOD, HEADLINE_KEYS, audit_brief, audit_headline, digits_map_brief,
                                    digits_map_headline, map_brief, region_brief, region_headline,
                                    region_reach, tune_brief, tune_budget)

MARKER = ".stam-demo"


@dataclass(frozen=True)
class DemoConfig:
    """Sizes of the demo: the full one (2 min on 2 cores at load 1, 13 at load 14) and ``--quick`` (22 s at load 1).  Grids are
    ``(lo, hi, n)``: n values from lo to hi, geometrically spaced."""

    synthetic_problem: str = "binary"
    synthetic_quick: bool = False  # the horizon grid of `stam synthetic run --quick`
    paper_preset: str | None = "paper-our1"  # the same experiment at Table para's Our1 (outside the theorem)
    compare_budget: int | None = None  # sample gradients per run of the comparison (None: `synthetic compare`'s default)
    eps: float = 0.1  # target accuracy for the step sizes
    pep_lam: float = 1.0
    pep_T: tuple[int, ...] = (1, 2, 3, 5)
    # the certified region (stam pep --region); lambda >= 0.1: below 0.02 the solver is not accurate enough (docs/pep.md)
    region_lams: tuple[float, ...] = (0.1, 0.5, 2.0, 10.0)
    region_betas: tuple[float, ...] = (10.0, 1000.0, 100000.0)
    region_gammas: tuple[float, float] = (0.01, 100.0)  # where gamma is searched
    region_scan: float = 1.5  # the scan's step (stam pep --region: 1.2); the bracket is bisected to 1.02 all the same
    model: str = "mlp"
    epochs: int = 12  # of every digits training (tuning, map, curves)
    batch_size: int = 32
    tune_trials: int = 8
    tune_seeds: int = 5
    tune_paper: bool = True  # the paper-settings rows
    # gammas, lams (LO, HI, N: the map's default ranges), betas, seeds
    digits_map_grid: tuple = ((*MAP_GAMMAS[:2], 6), (*MAP_LAMS[:2], 6), (20.0,), 1)
    admissible_lam: float = 1.0  # lambda of the theorem-admissible STAM run
    map_grid: tuple = (MAP_GAMMAS, MAP_LAMS, (100.0, 1000.0), 2)  # gammas, lams, betas, seeds
    map_iterations: int = 500

    @staticmethod
    def make(quick: bool) -> "DemoConfig":
        if quick:
            return DemoConfig(synthetic_quick=True, paper_preset=None, compare_budget=4096, pep_T=(1, 2), epochs=1,
                              region_lams=(1.0,), region_betas=(100.0, 10000.0), region_gammas=(0.1, 10.0),
                              batch_size=64, tune_trials=2, tune_seeds=2, tune_paper=False,
                              digits_map_grid=((0.01, 10.0, 3), (0.1, 10.0, 3), (20.0,), 1),
                              map_grid=((*MAP_GAMMAS[:2], 5), (*MAP_LAMS[:2], 5), (1000.0,), 2), map_iterations=100)
        return DemoConfig()


@dataclass
class Step:
    name: str
    status: str = "pending"  # ok | missing | failed
    message: str = ""
    seconds: float = 0.0
    outputs: list[Path] = field(default_factory=list)


#: The optional extras a step may need, by the module whose absence shows it.
EXTRAS = {"PEPit": "pep", "cvxpy": "pep"}


@contextlib.contextmanager
def torch_threads(n: int):
    """``torch.set_num_threads(n)`` for the block, restored after (the demo runs on one thread, as the
    synthetic commands do by default)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Demo:
    """The demo's state: staging folder, configuration, step records, headline results."""

    def __init__(self, out: Path, quick: bool, progress: bool):
        self.out = out
        self.quick = quick
        self.progress = progress
        self.cfg = DemoConfig.make(quick)
        self.stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
        self.steps: list[Step] = []
        self.headline: dict[str, str] = {}  # each result in full (demo.json; the report's details)
        self.brief: dict[str, str] = {}  # each result in one short line (printed; the report's At a glance)
        self.facts: dict[str, float | None] = {}  # the numbers the conclusion is made of
        self.rates: dict | None = None
        self.tuned: dict | None = None
        self.region_result: dict | None = None  # the certified region (step "region"), drawn on the maps too

    # -- the steps: each computes its results as values and writes them -------------------
    def paper_check(self, step: Step) -> None:
        result = audit.result(audit.findings())
        step.outputs.append(PAPER_CHECK.write(result, self.stage / "paper-check.json"))
        items, cov = result["items"], result["coverage"]
        self.headline["audit"] = audit_headline(items, cov)
        self.brief["audit"] = audit_brief(items)

    def _rates(self, out: str, preset: str | None = None) -> dict:
        """The rate experiment of ``stam synthetic run`` (its defaults, or ``--quick``'s grid; with ``preset``,
        ``--preset``'s Table para setting on ``--quick``'s grid) written into ``out``: its result."""
        from stam.synthetic.commands import rates_experiment
        from stam.synthetic.params import RunParams

        values = paper_presets()[preset] if preset else None
        params = RunParams(problem=self.cfg.synthetic_problem, quick=self.cfg.synthetic_quick or preset is not None,
                           preset=preset, preset_values=values, progress=self.progress, out=str(self.stage / out))
        return rates_experiment(params).result

    def synthetic(self, step: Step) -> None:
        """The rate experiment at admissible parameters and (full demo) at Table para's Our1."""
        problem = self.cfg.synthetic_problem
        self.rates = self._rates("synthetic")
        step.outputs.append(self.stage / "synthetic" / f"rates-{problem}.json")
        rows = [r for r in self.rates["rows"] if r.get("admissible") and r.get("ratio") is not None]
        text = (f"Synthetic problem {problem}: min_t E S_t falls with slope {self.rates.get('slope'):+.2f} in T "
                "(log-log)")
        if rows:
            text += (f"; Theorem conv's bound holds, {min(r['ratio'] for r in rows):.3g} to "
                     f"{max(r['ratio'] for r in rows):.3g} times the measured value (gamma = {rows[0]['gamma']:.3g})")
        if self.cfg.paper_preset:
            out = f"synthetic-{self.cfg.paper_preset}"
            p = self._rates(out, self.cfg.paper_preset)
            step.outputs.append(self.stage / out / f"rates-{problem}.json")
            last = p["rows"][-1]
            name = self.cfg.paper_preset[6:].capitalize()
            if last.get("nonfinite"):
                text += f"; at Table para's {name} (outside the theorem) {last['nonfinite']} runs diverge by T = {last['T']}"
            else:
                fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
                text += (f"; at Table para's {name} (outside the theorem) E S_t goes from {fmt(last.get('S_0_mean'))} "
                         f"to {fmt(last.get('S_final_mean'))} by T = {last['T']} (minimum {fmt(last['S_min_mean'])})")
        self.headline["rates"] = text
        self.brief["rates"] = (f"Synthetic {problem}: min_t E S_t ~ T^{self.rates.get('slope'):+.2f}"
                               + (f"; Theorem conv's bound holds, {min(r['ratio'] for r in rows):.3g}-"
                                  f"{max(r['ratio'] for r in rows):.3g}x above it" if rows else ""))

    def compare(self, step: Step) -> None:
        """STAM against its baselines at an equal gradient budget (``stam synthetic compare``)."""
        from stam.synthetic.commands import compare_experiment
        from stam.synthetic.params import CompareParams

        params = CompareParams(problem=self.cfg.synthetic_problem, budget=self.cfg.compare_budget or COMPARE_DEFAULTS["budget"],
                               progress=self.progress, out=str(self.stage / "synthetic"))
        step.outputs.append(compare_experiment(params)[2])

    def stepsize(self, step: Step) -> None:
        """The step sizes the theory admits for the synthetic problem (``stam stepsize``)."""
        from stam.theory.symbolic import stepsize

        if self.rates is None:
            step.status = "missing"
            step.message = "skipped: it takes the problem's constants from the synthetic rate experiment, which did not run"
            return
        c = self.rates["constants"]
        d0 = self.rates["details"][-1]  # delta0 and M0' of the longest run (M0' grows with T)
        flags = {"L1": c["L1"], "L2": c["L2"], "L3": c["L3"], "L4": c["L4"], "L5": c["L5"], "l": c["l"],
                 "A": c["A"], "C": c["C"], "delta0": max(d0["delta0"], 0.0), "M0": max(d0["M0_prime"], 0.0),
                 "eps": self.cfg.eps}
        rec = stepsize.stepsize(stepsize.StepsizeParams(**flags))[0]  # the recommendation of stam stepsize with these flags
        step.outputs.append(numeric.STEPSIZE.write({
            "kind": "stepsize", "provenance": provenance(), "params": {"problem": self.rates["problem"], **flags}, **rec},
            self.stage / "stepsize.json"))

    def pep(self, step: Step) -> None:
        """A PEP sweep at the parameters of the admissible-parameter rule for lambda = pep_lam, with
        the normalisation of ``stam pep``: L1 = 1 and the ES constants of the full gradient."""
        lam = self.cfg.pep_lam
        A, C = numeric.deterministic_es(1.0, lam)
        chosen = numeric.admissible_parameters(numeric.quadratic_coupling(lam, L1=1.0, A=float(A), C=float(C)),
                                               max(self.cfg.pep_T))
        sweep = pep.pep_sweep(lam, chosen.gamma, chosen.beta, list(self.cfg.pep_T), L1=1.0)
        step.outputs.append(pep.PEP_SWEEP.write(sweep, self.stage / "pep.json"))

    def region(self, step: Step) -> None:
        """Where a Lyapunov function certifies STAM for the paper's class (any proper lsc F, the full
        gradient and minibatches of N = 2, b = 1) and for convex F beside it, and where the PEP refutes
        the theorem's form (``stam pep --region``, on a small grid of lambdas)."""
        from stam.theory.params import RegionParams

        # convex F beside without its refutation (the headline and the figures use the paper class's); one process
        params = RegionParams(lams=self.cfg.region_lams, betas=self.cfg.region_betas, gamma_range=self.cfg.region_gammas,
                              scan_ratio=self.cfg.region_scan, refute_beside=False, workers=1)
        result = lyapunov.compute_region(params)
        step.outputs.append(lyapunov.REGION.write(result, self.stage / "region.json"))
        self.region_result = result
        self.headline["region"] = region_headline(result)
        self.facts["certified"], self.facts["refuted"] = region_reach(result)
        self.brief["region"] = region_brief(*self.facts_region())

    def facts_region(self) -> tuple[float | None, float | None]:
        """(certified, refuted) for the brief: the PEP's refutation quoted at the closed-form T = 1
        onset (1 + sqrt(3))/2 of :func:`stam.theory.worstcase.onset.t1_onset` where every refuted bracket of the search holds
        it (the search only brackets it), else the search's own bracket end."""
        from stam.theory.worstcase.onset import t1_onset_value

        cert, refuted = self.facts.get("certified"), self.facts.get("refuted")
        brackets = [(r["refuted"]["lo"] or 0.0, r["refuted"]["hi"], r["lam"]) for r in self.region_result["rows"]
                    if r["refuted"]["hi"] is not None]
        onset = t1_onset_value()
        if brackets and all(lo * lam <= onset <= hi * lam for lo, hi, lam in brackets):
            refuted = onset
        self.facts["refuted"] = refuted
        return cert, refuted

    def _region_file(self) -> str | None:
        """The certified region's file (step "region"), whose lines the maps draw (``stam map --region``)."""
        return str(self.stage / "region.json") if self.region_result is not None else None

    def convergence_map(self, step: Step) -> None:
        """The convergence map of the synthetic problem (``stam map --problem``), with the region's lines."""
        (g, l, betas, seeds), problem = self.cfg.map_grid, self.cfg.synthetic_problem
        result, paths, _ = make_map(MapParams(problem=problem, gammas=log_grid(*g), lams=log_grid(*l), betas=list(betas),
                                             iterations=self.cfg.map_iterations, n_seeds=seeds, progress=self.progress,
                                             out=str(self.stage / "map"), region=self._region_file()))
        step.outputs.append(paths[0])
        self.headline["map"] = "Convergence " + summary_line(result)
        self.brief["map"] = map_brief(result)

    def tune(self, step: Step) -> None:
        """The equal-budget comparison (all five algorithms, the paper's settings as labelled rows)."""
        from stam.dnn import catalog, tune
        from stam.dnn import tunetext
        from stam.dnn.params import TuneParams

        out = self.stage / "tune"
        self.tuned = tune.tune(TuneParams(algos=catalog.NAMES, out=str(out), trials=self.cfg.tune_trials,
                                          n_seeds=self.cfg.tune_seeds, epochs=self.cfg.epochs, batch_size=self.cfg.batch_size,
                                          paper=self.cfg.tune_paper, progress=self.progress))
        self.headline["tune"] = tunetext.headline(self.tuned)
        self.brief["tune"] = tune_brief(self.tuned)
        finals = {a["algo"]: (a.get("final") or {}).get("mean") for a in self.tuned["algorithms"]}
        if finals.get("stam") is not None and finals.get("bc") is not None:  # of the numbers as printed (one decimal)
            self.facts["stam_minus_bc"] = round(finals["stam"], 1) - round(finals["bc"], 1)
            self.facts["tune_budget"] = tune_budget(self.tuned)
        step.outputs.append(out / "tune-digits.json")

    def digits_map(self, step: Step) -> None:
        """Where STAM's binary network trains on digits, beside the theorem (``stam map --dataset digits``)."""
        g, l, betas, seeds = self.cfg.digits_map_grid
        # the data set's sweep defaults (the MLP, batch size 32: MapParams.network), as stam map --dataset digits
        data, paths, _ = make_map(MapParams(dataset="digits", gammas=log_grid(*g), lams=log_grid(*l), betas=list(betas),
                                           n_seeds=seeds, epochs=self.cfg.epochs, progress=self.progress,
                                           out=str(self.stage / "map-digits"), region=self._region_file()))
        step.outputs.append(paths[0])
        self.headline["digits-map"] = digits_map_headline(data, region=self.region_result)
        self.brief["digits-map"] = digits_map_brief(data)
        trains = [r["gamma"] * r["lam"] for r in data["rows"] if r.get("metric") is not None and r["metric"] >= DIGITS_GOOD]
        self.facts["trains_from"] = min(trains) if trains else None

    def training_runs(self) -> list[tuple[str, dict]]:
        """(folder, settings) of each digits run with curves: STAM and BC at the settings the tuning
        chose (on validation data), and STAM at a theorem-admissible (gamma, lambda, beta)."""
        lam = self.cfg.admissible_lam
        chosen = numeric.admissible_parameters(numeric.quadratic_coupling(lam), 1)
        runs = [("stam-admissible", {"algo": "stam", "overrides": {"gamma": chosen.gamma, "lam": lam, "beta": chosen.beta},
                                     "label": "STAM (admissible)"})]
        seed = (self.tuned or {}).get("params", {}).get("tune_seed", 0)  # the trials' seed: the best trial, now with curves
        for a in (self.tuned or {}).get("algorithms", []):
            if a["algo"] in ("stam", "bc") and a.get("best"):
                runs.append((f"{a['algo']}-tuned", {"algo": a["algo"], "overrides": dict(a["best"]["overrides"]), "seed": seed,
                                                    "label": f"{catalog.algorithm(a['algo']).label} (tuned setting, seed {seed})"}))
        return runs

    def train(self, step: Step) -> None:
        from stam.dnn.params import TrainConfig
        from stam.dnn.train import train

        runs = self.stage / "runs"
        for name, settings in self.training_runs():
            train(TrainConfig(model=self.cfg.model, dataset="digits", epochs=self.cfg.epochs, batch_size=self.cfg.batch_size,
                            schedule_scale="auto", echo=False, progress=self.progress, out=str(runs / name),
                            proxies=settings["algo"] == "stam", **settings))  # STAM's proxies: the 'practice' figure
        step.outputs.append(runs)

    def report(self, step: Step) -> None:
        lines = {"conclusion": self.conclusion(), **{k: self.brief_line(k) for k in HEADLINE_KEYS if k in self.brief}}
        step.outputs.append(report.build_report([p for s in self.steps for p in s.outputs], self.stage, headline=lines))

    # -- driver ------------------------------------------------------------------------------
    PLAN = (
        ("paper audit", "paper_check"),
        ("synthetic rate experiment", "synthetic"),
        ("synthetic baselines", "compare"),
        ("admissible step sizes", "stepsize"),
        ("exact worst case (PEP)", "pep"),
        ("certified region (Lyapunov search)", "region"),
        ("convergence map", "convergence_map"),
        ("equal-budget tuning", "tune"),
        ("digits convergence map", "digits_map"),
        ("digits training curves", "train"),
        ("report", "report"),
    )

    def _do(self, step: Step, fn, number: int) -> None:
        """Run one step; a missing optional extra marks it missing, any error marks it failed
        (its traceback in ``logs/``).  Never raises: the other steps still run."""
        try:
            fn(step)
        except Exception as exc:  # noqa: BLE001 - reported as the step's failure, with its traceback logged
            extra = EXTRAS.get((exc.name or "").split(".")[0]) if isinstance(exc, ImportError) else None
            if extra is not None:
                step.status, step.message = "missing", f"needs the optional extra '{extra}' (pip install 'stam-toolkit[{extra}]')"
                return
            log = Path("logs") / f"{number:02d}-{slug(step.name)}.txt"
            atomic_write_text(self.stage / log, f"stam demo: step {step.name!r}\n{traceback.format_exc()}")
            step.status = "failed"
            step.message = f"{step.name} raised {type(exc).__name__}: {exc} (see {log})"
        else:
            if step.status == "pending":
                step.status = "ok"

    def run(self) -> int:
        from tqdm.auto import tqdm

        t_start = time.perf_counter()
        bar = tqdm(total=len(self.PLAN), desc="stam demo", unit="step", disable=bar_disable(self.progress), file=sys.stderr,
                   dynamic_ncols=True, bar_format="{desc} {n_fmt}/{total_fmt} |{bar}| {elapsed} {postfix}")
        try:
            with torch_threads(1):  # the demo's sizes are latency-bound; one thread is robust on a shared machine
                for number, (name, method) in enumerate(self.PLAN, 1):
                    step = Step(name)
                    bar.set_description(f"stam demo: {name}")
                    t0 = time.perf_counter()
                    self._do(step, getattr(self, method), number)
                    step.seconds = time.perf_counter() - t0
                    self.steps.append(step)
                    if step.status != "ok":
                        tqdm.write(f"stam demo: {name}: {step.message}", file=sys.stderr)
                    bar.update(1)
        finally:
            bar.close()
        total = time.perf_counter() - t_start
        atomic_write_json(self.stage / "demo.json", {
            "kind": "demo", "provenance": provenance(), "quick": self.quick, "seconds": total,
            "config": asdict(self.cfg),
            "steps": [{"name": s.name, "status": s.status, "message": s.message, "seconds": s.seconds}
                      for s in self.steps],
            "conclusion": self.conclusion(),
            "brief": {k: self.brief_line(k) for k in self.brief},
            "headline": {k: self.headline_line(k) for k in self.headline},
        })
        atomic_write_text(self.stage / MARKER, "written by stam demo\n")
        self._swap_into_place()
        self._print_summary(total)
        return 1 if any(s.status == "failed" for s in self.steps) else 0

    def _swap_into_place(self) -> None:
        trash = None
        if self.out.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.old-", dir=self.out.parent))
            os.replace(self.out, trash / self.out.name)
        os.replace(self.stage, self.out)
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)

    def _print_summary(self, total: float) -> None:
        for s in self.steps:
            if s.status != "ok":
                print(f"  {s.name}: {s.message}")
        print(self.conclusion())
        print(f"Report: {self.out / 'report.html'}   (stam demo{' --quick' if self.quick else ''}: {total:.0f} s; "
              f"every result in full: {self.out / 'demo.json'})")
        for key in HEADLINE_KEYS:
            if key in self.brief:
                print(f"  {self.brief_line(key)}")

    #: the headlines whose numbers --quick computes at reduced budgets (the audit is the same)
    QUICK_REDUCED = ("rates", "region", "map", "tune", "digits-map")

    def headline_line(self, key: str) -> str:
        """A headline in full (demo.json): with ``--quick``, a reduced-budget line says so first."""
        text = self.headline[key]
        if self.quick and key in self.QUICK_REDUCED and not text.startswith("["):  # (a tuning's own budget note)
            return f"[--quick: smoke-test budgets, not results] {text}"
        return text

    def brief_line(self, key: str) -> str:
        """A result in one short line, as printed and at the top of the report (``--quick``: marked)."""
        return ("[quick] " if self.quick and key in self.QUICK_REDUCED else "") + self.brief[key]

    def conclusion(self) -> str:
        """What the toolkit found, answering the README's questions with the README's words: the committed findings
        (:func:`stam.figures.findings.conclusion`, from the committed result files, the same generator as ``stam
        findings``), then this run's own numbers, labelled as an illustration (its budgets are small: it trains no
        CIFAR, tunes digits with a few trials and epochs)."""
        from stam.figures.findings import committed_conclusion

        committed = committed_conclusion()
        text = ("Conclusion (committed results, stam findings): " + committed[:1].upper() + committed[1:] + "." if committed
                else "Conclusion: no committed results here (not a checkout of the toolkit); this run's numbers follow.")
        f = self.facts
        cert, trains = f.get("certified"), f.get("trains_from")
        parts = []
        if cert is not None:
            parts.append(f"its region search certifies STAM up to gamma*lambda = {cert:.2f}"
                         + (f", its digits map trains from {trains:.2g}" if trains is not None else ""))
        if f.get("stam_minus_bc") is not None:
            d = f["stam_minus_bc"]
            parts.append(f"tuned alike on digits ({f['tune_budget']}), STAM is {abs(d):.1f} points {'below' if d < 0 else 'above'} BC")
        budget = "--quick, smoke-test budgets" if self.quick else "small budgets"
        return text + (f" Illustration ({budget}, not a result): " + "; ".join(parts) + "." if parts else "")


def check_demo_out(out) -> Path:
    """OUT must be a usable folder location (:func:`stam.io.check_out_dir`: not a file, not under a
    file, writable) and new, empty, or an earlier demo's folder (never someone else's files)."""
    out = check_out_dir(out, "-o").absolute()
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise UsageError(f"-o {out}: folder exists, is not empty and was not written by stam demo; "
                         "choose a new or empty folder")
    return out


def run_demo(out="stam-demo", quick: bool = False, progress: bool = True) -> int:
    out = check_demo_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    demo = Demo(out, quick, progress)
    try:
        return demo.run()
    finally:
        if demo.stage.exists():
            shutil.rmtree(demo.stage, ignore_errors=True)
