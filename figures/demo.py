"""``stam demo``: the whole toolkit end to end on built-in defaults (the README's main job).

Steps, each run in-process through the real command line (``stam.cli.main``) with its documented
flags, so the demo exercises exactly what a user would type (the commands are kept in
``OUT/logs/``):

1. the paper audit (``stam paper-check --out``),
2. a synthetic rate experiment on the default problem at admissible parameters and (full demo
   only) at the paper's Our1 parameters (``stam synthetic run``), and the baselines at an equal
   gradient budget (``stam synthetic compare``),
3. admissible step sizes for that problem, from the constants the experiment recorded
   (``stam stepsize --json``),
4. the exact worst case of deterministic STAM for a few T (``stam pep --sweep-T``),
5. the convergence map of the synthetic problem over (gamma, lambda) at two betas (``stam map``),
6. the equal-budget comparison on digits (``stam tune``): the same number of trials for STAM, BC,
   BR, PSGD and float, chosen on validation data, numbers from fresh seeds, the paper's settings
   as labelled rows,
7. the convergence map on digits (``stam map --dataset digits``): where STAM's binary network
   trains, beside the theorem's region,
8. training curves (``stam train``) of STAM and BC at their tuned settings and of STAM at a
   theorem-admissible setting, with the sign flips of their binary weights,
9. the report (``stam report``): ``OUT/report.html``.

Nothing is downloaded.  A part of the toolkit that is not installed is reported as "not available
yet" and the rest still runs; a step that fails is reported with its exit status and its log,
and the demo's exit status is then 1.

Atomic output: everything is built in a staging folder beside ``OUT`` and swapped into place at
the end, so ``OUT`` always holds one complete demo (the previous one until the new one is done).
``OUT`` must be new, empty, or a folder an earlier ``stam demo`` wrote (it carries a marker file).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from stam.errors import UsageError
from stam.io import atomic_write_json, atomic_write_text, bar_disable, provenance

MARKER = ".stam-demo"


@dataclass(frozen=True)
class DemoConfig:
    """Sizes of the demo: the full one (< 3 min on 2 cores) and ``--quick`` (< 30 s)."""

    synthetic_problem: str = "binary"
    synthetic_quick: bool = False
    paper_preset: str | None = "paper-our1"  # the same experiment at Table para's Our1 (outside the theorem)
    compare_budget: int | None = None  # sample gradients per run for `stam synthetic compare` (None: its default)
    eps: float = 0.1  # target accuracy for `stam stepsize`
    pep_lam: float = 1.0
    pep_T: tuple[int, ...] = (1, 2, 3, 5)
    model: str = "mlp"
    epochs: int = 12  # of every digits training (tuning, map, curves)
    batch_size: int = 32
    tune_trials: int = 8
    tune_seeds: int = 5
    tune_paper: bool = True  # the paper-settings rows
    digits_map_args: tuple[str, ...] = ("--gamma-range", "0.001:30:6", "--lam-range", "0.05:30:6", "--betas", "20",
                                        "--seeds", "1")
    admissible_lam: float = 1.0  # lambda of the theorem-admissible STAM run
    map_args: tuple[str, ...] = ("--gamma-range", "0.001:30:8", "--lam-range", "0.05:30:8", "--betas", "100,1000",
                                 "--iterations", "500", "--seeds", "2")  # `stam map --problem binary`

    @staticmethod
    def make(quick: bool) -> "DemoConfig":
        if quick:
            return DemoConfig(synthetic_quick=True, paper_preset=None, compare_budget=4096, pep_T=(1, 2), epochs=1,
                              batch_size=64, tune_trials=2, tune_seeds=2, tune_paper=False,
                              digits_map_args=("--gamma-range", "0.01:10:3", "--lam-range", "0.1:10:3", "--betas", "20",
                                               "--seeds", "1"),
                              map_args=("--gamma-range", "0.001:30:5", "--lam-range", "0.05:30:5",
                                                       "--betas", "1000", "--iterations", "100", "--seeds", "2"))
        return DemoConfig()


@dataclass
class Step:
    name: str
    status: str = "pending"  # ok | missing | failed
    message: str = ""
    seconds: float = 0.0
    outputs: list[Path] = field(default_factory=list)


def available_commands() -> set[str]:
    """The subcommands ``stam`` has now (a part that is not installed registers none)."""
    import argparse

    from stam.cli import build_parser

    for action in build_parser()._actions:  # argparse keeps the subcommands as one action
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def run_command(argv: list[str], log: Path) -> tuple[int, str, BaseException | None]:
    """``stam ARGV`` in-process; returns (exit status, stdout, the exception it raised if any).
    The command, its stdout and any traceback go to ``log``; stderr (progress bars, error lines)
    stays on the terminal.  An exception inside a command (a part still being built) does not
    stop the demo: it is logged and the step is reported."""
    import traceback

    from stam.cli import main

    out = io.StringIO()
    error, trace = None, ""
    with contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse rejected the flags
            rc = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # noqa: BLE001 - reported as the step's failure, with its traceback logged
            rc, error, trace = 1, exc, traceback.format_exc()
    atomic_write_text(log, f"$ stam {' '.join(argv)}\n(exit status {rc})\n{out.getvalue()}{trace}")
    return rc, out.getvalue(), error


class Demo:
    """The demo's state: staging folder, configuration, step records, headline results."""

    def __init__(self, out: Path, quick: bool, progress: bool):
        self.out = out
        self.quick = quick
        self.progress = progress
        self.cfg = DemoConfig.make(quick)
        self.stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
        self.commands = available_commands()
        self.steps: list[Step] = []
        self.headline: dict[str, str] = {}
        self.rates: dict | None = None
        self.tuned: dict | None = None
        self._n = 0

    # -- helpers -------------------------------------------------------------------------
    def _need(self, step: Step, *commands: str) -> bool:
        missing = [c for c in commands if c not in self.commands]
        if missing:
            step.status = "missing"
            step.message = f"not available yet: this toolkit has no `stam {' / '.join(missing)}` command"
        return not missing

    def _run(self, step: Step, argv: list[str]) -> str | None:
        """Run ``stam ARGV``; its stdout, or None (step marked failed) on a non-zero exit."""
        self._n += 1
        log = Path("logs") / f"{self._n:02d}-{argv[0]}.txt"
        rc, stdout, error = run_command(argv, self.stage / log)
        if isinstance(error, ImportError):
            step.status = "missing"
            step.message = f"not available yet: `stam {argv[0]}` needs {error} (see {log})"
        elif error is not None:
            step.status = "failed"
            step.message = f"`stam {' '.join(argv)}` raised {type(error).__name__}: {error} (see {log})"
        elif rc != 0:
            step.status = "failed"
            step.message = f"`stam {' '.join(argv)}` exited with status {rc} (see {log})"
        return stdout if rc == 0 and error is None else None

    # -- the steps -------------------------------------------------------------------------
    def paper_check(self, step: Step) -> None:
        if not self._need(step, "paper-check"):
            return
        path = self.stage / "paper-check.json"
        if self._run(step, ["paper-check", "--out", str(path)]) is None:
            return
        items = json.loads(path.read_text())["items"]
        counts = {v: sum(f["verdict"] == v for f in items) for v in ("ok", "misprint", "error")}
        wrong = [str(f["label"]).split(" (")[0] for f in items if f["verdict"] != "ok"]
        self.headline["audit"] = (
            f"Paper audit: {len(items)} items re-derived: {counts['ok']} ok, {counts['misprint']} misprints, "
            f"{counts['error']} wrong steps ({', '.join(wrong[:8])}{', ...' if len(wrong) > 8 else ''})"
        )
        step.outputs.append(path)
        step.status = "ok"

    def synthetic(self, step: Step) -> None:
        """The rate experiment at admissible parameters and (full demo) at Table para's Our1."""
        if not self._need(step, "synthetic"):
            return
        problem = self.cfg.synthetic_problem
        out = self.stage / "synthetic"
        argv = ["synthetic", "run", "--problem", problem, "--out", str(out)]
        argv += ["--quick"] if self.cfg.synthetic_quick else []
        argv += [] if self.progress else ["--no-progress"]
        if self._run(step, argv) is None:
            return
        self.rates = json.loads((out / f"rates-{problem}.json").read_text())
        step.outputs.append(out / f"rates-{problem}.json")
        rows = [r for r in self.rates["rows"] if r.get("admissible") and r.get("ratio") is not None]
        text = (f"Synthetic problem {problem}: min_t E S_t falls with slope {self.rates.get('slope'):+.2f} in T "
                "(log-log)")
        if rows:
            text += (f"; Theorem conv's bound holds, {min(r['ratio'] for r in rows):.3g} to "
                     f"{max(r['ratio'] for r in rows):.3g} times the measured value (gamma = {rows[0]['gamma']:.3g})")
        if self.cfg.paper_preset:
            paper = self.stage / f"synthetic-{self.cfg.paper_preset}"
            argv = ["synthetic", "run", "--problem", problem, "--preset", self.cfg.paper_preset, "--quick",
                    "--out", str(paper)] + ([] if self.progress else ["--no-progress"])
            if self._run(step, argv) is None:
                return
            p = json.loads((paper / f"rates-{problem}.json").read_text())
            step.outputs.append(paper / f"rates-{problem}.json")
            last = p["rows"][-1]
            name = self.cfg.paper_preset[6:].capitalize()
            if last.get("nonfinite"):
                text += f"; at Table para's {name} (outside the theorem) {last['nonfinite']} runs diverge by T = {last['T']}"
            else:
                fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
                text += (f"; at Table para's {name} (outside the theorem) E S_t goes from {fmt(last.get('S_0_mean'))} "
                         f"to {fmt(last.get('S_final_mean'))} by T = {last['T']} (minimum {fmt(last['S_min_mean'])})")
        self.headline["rates"] = text
        step.status = "ok"

    def compare(self, step: Step) -> None:
        if not self._need(step, "synthetic"):
            return
        problem = self.cfg.synthetic_problem
        out = self.stage / "synthetic"
        argv = ["synthetic", "compare", "--problem", problem, "--out", str(out)]
        argv += ["--budget", str(self.cfg.compare_budget)] if self.cfg.compare_budget else []
        argv += [] if self.progress else ["--no-progress"]
        if self._run(step, argv) is not None:
            step.outputs.append(out / f"compare-{problem}.json")
            step.status = "ok"

    def stepsize(self, step: Step) -> None:
        if not self._need(step, "stepsize"):
            return
        if self.rates is None:
            step.status = "missing"
            step.message = "skipped: it takes the problem's constants from the synthetic rate experiment, which did not run"
            return
        c = self.rates["constants"]
        d0 = self.rates["details"][-1]  # delta0 and M0' of the longest run (M0' grows with T)
        flags = {"L1": c["L1"], "L2": c["L2"], "L3": c["L3"], "L4": c["L4"], "L5": c["L5"], "l": c["l"],
                 "A": c["A"], "C": c["C"], "delta0": max(d0["delta0"], 0.0), "M0": max(d0["M0_prime"], 0.0),
                 "eps": self.cfg.eps}
        argv = ["stepsize", "--json"] + [f"--{k}={v!r}" for k, v in flags.items()]
        stdout = self._run(step, argv)
        if stdout is None:
            return
        rec = json.loads(stdout)
        path = atomic_write_json(self.stage / "stepsize.json", {
            "kind": "stepsize", "provenance": provenance(),
            "params": {"problem": self.rates["problem"], **flags}, **rec})
        step.outputs.append(path)
        step.status = "ok"

    def pep(self, step: Step) -> None:
        """A PEP sweep at admissible parameters for lambda = pep_lam: gamma = gamma_max / 2 and the
        smallest beta Theorem conv-rate admits at the largest T (with the normalisation of
        ``stam pep``: L1 = 1, A = 2 max(L1, lambda), C = 0)."""
        if not self._need(step, "pep"):
            return
        from stam.theory import numeric

        lam = self.cfg.pep_lam
        A, C = numeric.deterministic_es(1.0, lam)
        chosen = numeric.admissible_parameters(numeric.quadratic_coupling(lam, L1=1.0, A=float(A), C=float(C)),
                                               max(self.cfg.pep_T))
        gamma, beta = chosen.gamma, chosen.beta
        path = self.stage / "pep.json"
        argv = ["pep", "--lam", str(lam), "--gamma", str(gamma), "--beta", str(beta),
                "--sweep-T", ",".join(map(str, self.cfg.pep_T)), "--out", str(path)]
        if self._run(step, argv) is None:
            return
        step.outputs.append(path)
        step.status = "ok"

    def convergence_map(self, step: Step) -> None:
        """``stam map`` on the synthetic problem (the digits map is ``stam map --dataset digits``)."""
        if not self._need(step, "map"):
            return
        problem = self.cfg.synthetic_problem
        out = self.stage / "map"
        argv = ["map", "--problem", problem, *self.cfg.map_args, "--out", str(out)]
        argv += [] if self.progress else ["--no-progress"]
        if self._run(step, argv) is None:
            return
        from stam.figures.convergence_map import summary_line

        path = out / f"map-{problem}.json"
        self.headline["map"] = "Convergence " + summary_line(json.loads(path.read_text()))
        step.outputs.append(path)
        step.status = "ok"

    def tune(self, step: Step) -> None:
        """``stam tune``: the equal-budget comparison (all five algorithms, the paper's settings as
        labelled rows)."""
        if not self._need(step, "tune"):
            return
        out = self.stage / "tune"
        argv = ["tune", "--trials", str(self.cfg.tune_trials), "--seeds", str(self.cfg.tune_seeds),
                "--epochs", str(self.cfg.epochs), "--batch-size", str(self.cfg.batch_size), "--out", str(out)]
        argv += [] if self.progress else ["--no-progress"]
        argv += [] if self.cfg.tune_paper else ["--no-paper"]
        if self._run(step, argv) is None:
            return
        from stam.dnn.tune import headline

        self.tuned = json.loads((out / "tune-digits.json").read_text())
        self.headline["tune"] = headline(self.tuned)
        step.outputs.append(out / "tune-digits.json")
        step.status = "ok"

    def digits_map(self, step: Step) -> None:
        """``stam map --dataset digits``: where STAM's binary network trains, beside the theorem."""
        if not self._need(step, "map"):
            return
        out = self.stage / "map-digits"
        argv = ["map", "--dataset", "digits", *self.cfg.digits_map_args, "--epochs", str(self.cfg.epochs), "--out", str(out)]
        argv += [] if self.progress else ["--no-progress"]
        if self._run(step, argv) is None:
            return
        data = json.loads((out / "map-digits.json").read_text())
        self.headline["digits-map"] = digits_map_headline(data)
        step.outputs.append(out / "map-digits.json")
        step.status = "ok"

    def training_runs(self) -> list[tuple[str, list[str]]]:
        """(folder, flags) of each digits run with curves: STAM and BC at the settings the tuning
        chose (on validation data), and STAM at a theorem-admissible (gamma, lambda, beta)."""
        from stam.theory import numeric

        chosen = numeric.admissible_parameters(numeric.quadratic_coupling(self.cfg.admissible_lam), 1)
        gamma, beta = chosen.gamma, chosen.beta
        runs = [("stam-admissible", ["--algo", "stam", "--set", f"gamma={gamma}", "--set", f"lam={self.cfg.admissible_lam}",
                                     "--set", f"beta={beta}", "--label", "STAM (admissible)"])]
        for a in (self.tuned or {}).get("algorithms", []):
            if a["algo"] in ("stam", "bc") and a.get("best"):
                sets = [x for k, v in a["best"]["overrides"].items() for x in ("--set", f"{k}={json.dumps(v)}")]
                runs.append((f"{a['algo']}-tuned", ["--algo", a["algo"], *sets, "--label", f"{a['label']} (tuned)"]))
        return runs

    def train(self, step: Step, bar) -> None:
        if not self._need(step, "train"):
            return
        runs = self.stage / "runs"
        for name, flags in self.training_runs():
            if bar is not None:
                bar.set_postfix_str(f"training {name}")
            argv = ["train", "--dataset", "digits", "--model", self.cfg.model, *flags,
                    "--epochs", str(self.cfg.epochs), "--batch-size", str(self.cfg.batch_size),
                    "--schedule-scale", "auto", "--quiet", "--out", str(runs / name)]
            if not self.progress:
                argv.append("--no-progress")
            done = self._run(step, argv) is not None
            if bar is not None:
                bar.set_postfix_str("")
            if not done:
                return
        step.outputs.append(runs)
        step.status = "ok"

    def report(self, step: Step) -> None:
        inputs = [str(p) for s in self.steps for p in s.outputs]
        if self._run(step, ["report", *inputs, "-o", str(self.stage)]) is not None:
            step.outputs.append(self.stage / "report.html")
            step.status = "ok"

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> int:
        from tqdm.auto import tqdm

        plan = [
            ("paper audit", self.paper_check),
            ("synthetic rate experiment", self.synthetic),
            ("synthetic baselines", self.compare),
            ("admissible step sizes", self.stepsize),
            ("exact worst case (PEP)", self.pep),
            ("convergence map", self.convergence_map),
            ("equal-budget tuning", self.tune),
            ("digits convergence map", self.digits_map),
            ("digits training curves", self.train),
            ("report", self.report),
        ]
        t_start = time.perf_counter()
        bar = tqdm(total=len(plan), desc="stam demo", unit="step", disable=bar_disable(self.progress), file=sys.stderr, dynamic_ncols=True,
                   bar_format="{desc} {n_fmt}/{total_fmt} |{bar}| {elapsed} {postfix}")
        try:
            for name, fn in plan:
                step = Step(name)
                bar.set_description(f"stam demo: {name}")
                t0 = time.perf_counter()
                fn(step, bar) if fn == self.train else fn(step)
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
            "config": self.cfg.__dict__,
            "steps": [{"name": s.name, "status": s.status, "message": s.message, "seconds": s.seconds}
                      for s in self.steps],
            "headline": self.headline,
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
        print(f"Report: {self.out / 'report.html'}   (stam demo{' --quick' if self.quick else ''}: {total:.0f} s)")
        for key in ("audit", "rates", "map", "tune", "digits-map"):
            if key in self.headline:
                print(f"  {self.headline[key]}")


def digits_map_headline(data: dict, good: float = 0.8) -> str:
    """Where STAM's binary network trains on the digits map, against the theorem's region."""
    from stam.synthetic.convergence_map import SQRT5 as GAMMA_LAMBDA

    rows = [r for r in data["rows"] if r.get("metric") is not None]
    trains = [r for r in rows if r["metric"] >= good]
    inside = [r for r in rows if r.get("admissible")]
    below = [r for r in rows if r["gamma"] * r["lam"] < GAMMA_LAMBDA]
    text = f"Digits map ({len(data['rows'])} cells of (gamma, lambda), beta = {', '.join(f'{b:g}' for b in sorted({r['beta'] for r in data['rows']}))}): "
    text += f"binary validation accuracy >= {good:.0%} in {len(trains)} cells"
    if trains:
        text += f", all with gamma*lambda >= {min(r['gamma'] * r['lam'] for r in trains):.2g}"
    best_below = max((r["metric"] for r in below), default=None)
    if best_below is not None:
        text += f"; below gamma*lambda = 1/sqrt(5) (where the theorem's region lies) at most {best_below:.0%}"
    text += f"; {len(inside)} cells satisfy Theorem conv"
    if inside:
        text += f" (best {max(r['metric'] for r in inside):.0%})"
    return text


def check_out_dir(out: Path) -> None:
    """OUT must be new, empty, or an earlier demo's folder (never someone else's files)."""
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"-o {out}: exists and is not a folder")
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise UsageError(f"-o {out}: folder exists, is not empty and was not written by stam demo; "
                             "choose a new or empty folder")


def run_demo(out="stam-demo", quick: bool = False, progress: bool = True) -> int:
    out = Path(out).absolute()
    check_out_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    demo = Demo(out, quick, progress)
    try:
        return demo.run()
    finally:
        if demo.stage.exists():
            shutil.rmtree(demo.stage, ignore_errors=True)
