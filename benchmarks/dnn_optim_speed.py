"""Optimiser step time of STAM, BinaryConnect, BinaryRelax and PSGD against torch.optim.SGD on the
parameters of the CIFAR VGG-11, and bytes of optimiser state per parameter.

Only the ``step()`` is timed: the gradients are fixed random tensors (no forward/backward).  The
parameters are those of ``stam train``'s CIFAR VGG-11 (:func:`stam.dnn.models.build_model`, in
the groups of :func:`stam.dnn.models.param_groups`: conv and linear weights quantised, BatchNorm
and the classifier's bias float).

Timings on a shared machine drift (here by factors of several over minutes), so the optimisers
are measured *interleaved*: each round times one step of every optimiser in turn, and each ratio
is the median over rounds of the per-round ratio, which cancels the drift common to a round.

    python benchmarks/dnn_optim_speed.py [--device cpu|cuda] [--rounds 60] [--threads N] [--only stam,bc] [--cold] [--out FILE]

``auto_start``: STAM as a torch user builds it (``compile="auto"``), its first step and the step that
compiles; ``traffic_limit``: the ratio to SGD with momentum that memory traffic alone sets.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import torch

from stam.dnn.models import build_model, param_groups
from stam.dnn.optim import make
from stam.dnn.optim_common import STEPS
from stam.io import emit_json, provenance

#: Hyperparameters at epoch 1 of Table para (lr 5e-4 and weight decay 1e-7 for the SGD family,
#: Our1/Our3 for STAM).
PAPER = {"lr": 5e-4, "weight_decay": 1e-7, "gamma": 8.0, "lam": 0.5, "beta": 1e3, "br_lam": 1.0, "rho": 1.02}


def make_params(device: torch.device, seed: int = 0) -> list[dict]:
    """The parameter groups of a freshly initialised CIFAR VGG-11 (quantised, float), with fixed
    random gradients."""
    torch.manual_seed(seed)
    groups = param_groups(build_model("vgg11", 10).to(device))
    g = torch.Generator().manual_seed(seed)
    for group in groups:
        for p in group["params"]:
            p.grad = (torch.randn(p.shape, generator=g) * 1e-2).to(device)
    return groups


def optimizers(device: torch.device) -> dict[str, tuple[str, callable]]:
    """name -> (description, factory(groups)); ``stam_proxies`` also reads the stationarity
    proxies after every step, as ``stam train`` does."""
    lr, wd = PAPER["lr"], PAPER["weight_decay"]
    flat = lambda groups: [{"params": g["params"]} for g in groups]  # noqa: E731  (SGD knows no 'quantize')
    stam = dict(gamma=PAPER["gamma"], lam=PAPER["lam"], beta=PAPER["beta"])
    br = dict(lr=lr, lam=PAPER["br_lam"], rho=PAPER["rho"], weight_decay=wd)
    return {
        "sgd": ("torch.optim.SGD, foreach, lr 5e-4, weight decay 1e-7, no momentum (the paper's PSGD/BC/BR settings)", lambda gs: torch.optim.SGD(flat(gs), lr=lr, weight_decay=wd, foreach=True)),
        "sgd_nowd": ("torch.optim.SGD, foreach, lr 5e-4, no weight decay, no momentum (the cheapest possible step)", lambda gs: torch.optim.SGD(flat(gs), lr=lr, foreach=True)),
        "sgd_momentum": ("torch.optim.SGD, foreach, lr 5e-4, momentum 0.9, weight decay 1e-7", lambda gs: torch.optim.SGD(flat(gs), lr=lr, momentum=0.9, weight_decay=wd, foreach=True)),
        "sgd_momentum_nowd": ("torch.optim.SGD as a torch user builds it: lr 5e-4, momentum 0.9, no weight decay (the yardstick of the speed goal)", lambda gs: torch.optim.SGD(flat(gs), lr=lr, momentum=0.9)),
        "stam": ("STAM, compiled (its two halves, one pass over each layer each), gamma 8, lam 0.5, beta 1e3 (Our1/Our3 at epoch 1)", lambda gs: make("stam", gs, **stam, compile=True)),
        "stam_proxies": ("STAM, compiled, proxies=True: step + stationarity_proxies() (one kernel)", lambda gs: _with_proxies(make("stam", gs, **stam, compile=True, proxies=True))),
        "bc": ("BinaryConnect, compiled, lr 5e-4, weight decay 1e-7", lambda gs: make("bc", gs, lr=lr, weight_decay=wd, compile=True)),
        "br": ("BinaryRelax phase 1, compiled, lr 5e-4, lam 1, rho 1.02, weight decay 1e-7", lambda gs: make("br", gs, **br, compile=True)),
        "psgd": ("PSGD (an SGD step on U, foreach), lr 5e-4, weight decay 1e-7", lambda gs: make("psgd", gs, lr=lr, weight_decay=wd)),
        "stam_eager": ("STAM, eager (compile=False)", lambda gs: make("stam", gs, **stam, compile=False)),
        "bc_eager": ("BinaryConnect, eager (compile=False)", lambda gs: make("bc", gs, lr=lr, weight_decay=wd, compile=False)),
        "br_eager": ("BinaryRelax phase 1, eager (compile=False)", lambda gs: make("br", gs, **br, compile=False)),
    }


def _with_proxies(opt):
    step = opt.step

    def step_and_proxies():
        step()
        opt.stationarity_proxies()

    opt.step = step_and_proxies
    return opt


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def state_bytes(opt: torch.optim.Optimizer) -> int:
    return sum(v.numel() * v.element_size() for st in opt.state.values() for v in st.values() if torch.is_tensor(v))


BASELINES = ("sgd", "sgd_nowd", "sgd_momentum", "sgd_momentum_nowd")

#: tensors of the parameters' size read and written per step by a compiled STAM step (its first half reads
#: W, grad, U, X and writes W, U; its second reads U, X and writes V, X) and by torch.optim.SGD with momentum
#: on the CPU (buf *= m; buf += g; p -= lr buf: reads buf, buf, g, p, buf; writes buf, buf, p)
TRAFFIC = {"stam": {"reads": 6, "writes": 4}, "sgd_momentum_nowd": {"reads": 5, "writes": 3}}


def traffic_limit() -> dict:
    """The ratio of STAM's step to SGD-momentum's that memory traffic alone sets: counting a written tensor
    once, and twice (a write first reads its cache line)."""
    st, sg = TRAFFIC["stam"], TRAFFIC["sgd_momentum_nowd"]
    return {"passes": TRAFFIC, "ratio_writes_once": (st["reads"] + st["writes"]) / (sg["reads"] + sg["writes"]),
            "ratio_writes_twice": (st["reads"] + 2 * st["writes"]) / (sg["reads"] + 2 * sg["writes"])}


def auto_start(device: torch.device) -> dict:
    """STAM as a torch user builds it (``compile="auto"``): its first step (eager: a first step never
    compiles), the step from which it compiles (:func:`stam.compiling.compile_after_steps`), and that step,
    which compiles (with the inductor cache this process was given: a fresh folder with ``--cold``)."""
    from stam.compiling import compile_after_steps

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    groups = make_params(device)
    opt = make("stam", groups, gamma=PAPER["gamma"], lam=PAPER["lam"], beta=PAPER["beta"])
    sync()
    t0 = time.perf_counter()
    opt.step()
    sync()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    opt.step()
    sync()
    eager = time.perf_counter() - t0
    quantised = [g for g in opt.param_groups if g["quantize"]]
    after = compile_after_steps(sum(p.numel() for p in quantised[0]["params"]))
    for g in quantised:
        g[STEPS] = after  # on to the step that compiles
    t0 = time.perf_counter()
    opt.step()
    sync()
    switch = time.perf_counter() - t0
    return {"first_step_s": first, "second_step_s": eager, "compile_after_steps": after, "compiling_step_s": switch,
            "cold_cache": bool(os.environ.get("STAM_BENCH_COLD"))}


def run(device: torch.device, rounds: int, only: list[str] | None = None, warmup: int = 3) -> dict:
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    setups, first_step = {}, {}
    for name, (desc, factory) in optimizers(device).items():
        if only and name not in only and name not in BASELINES:
            continue
        groups = make_params(device)
        opt = factory(groups)
        sync()
        t0 = time.perf_counter()
        opt.step()  # the first step compiles
        sync()
        first_step[name] = time.perf_counter() - t0
        for _ in range(warmup - 1):
            opt.step()
        setups[name] = (desc, opt, groups)
    times = {name: [] for name in setups}
    for _ in range(rounds):
        for name, (_, opt, _) in setups.items():
            sync()
            t0 = time.perf_counter()
            opt.step()
            sync()
            times[name].append(time.perf_counter() - t0)
    n_all = sum(p.numel() for g in make_params(torch.device("cpu")) for p in g["params"])
    n_q = sum(p.numel() for p in make_params(torch.device("cpu"))[0]["params"])
    rows = {}
    for name, (desc, opt, _) in setups.items():
        t = times[name]
        b = state_bytes(opt)
        rows[name] = {
            "description": desc,
            "step_ms_median": 1e3 * statistics.median(t),
            "step_ms_p10": 1e3 * sorted(t)[len(t) // 10],
            "step_ms_p90": 1e3 * sorted(t)[(9 * len(t)) // 10],
            "first_step_s": first_step[name],
            "ratio_to": {base: statistics.median(a / b_ for a, b_ in zip(t, times[base])) for base in BASELINES},
            "state_bytes": b,
            "state_bytes_per_param": b / n_all,
            "state_bytes_per_quantized_param": b / n_q,
        }
    return {"params_total": n_all, "params_quantized": n_q, "rounds": rounds, "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    ap.add_argument("--only", default=None, help="comma-separated optimisers to time besides the SGD baselines")
    ap.add_argument("--cold", action="store_true", help="compile with an empty inductor cache (a fresh folder)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.cold:
        import tempfile

        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
        os.environ["STAM_BENCH_COLD"] = "1"
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    result = {
        "kind": "dnn-optim-speed",
        "provenance": provenance(),
        "model": "vgg11-cifar10 parameters (stam.dnn.models)",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU: {cpu_name()} ({os.cpu_count()} logical CPUs)",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "auto_start": auto_start(device),
        **run(device, args.rounds, args.only.split(",") if args.only else None),
        "traffic_limit": traffic_limit(),
    }
    emit_json(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
