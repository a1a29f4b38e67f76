"""Loading CIFAR-10 as a JPEG copy (:mod:`stam.dnn.imagefolder`): the first load of the archive
(hash, read every member in memory, check, decode in parallel, write the cache) against the loads
after it (hash the archive, read the cached arrays back and check their SHA-256), on the shared
copy ``../shared/data/cifar10-jpeg.tar.gz`` (60,000 JPEG files) by default, into a fresh cache
folder that is removed afterwards.  Also timed: the first load with one process (``--serial``),
and ``stam.dnn.data.load`` from the cache (the ``ImageData`` that ``stam train`` gets: the same
read, then torch tensors and the per-channel mean and std of the training images).

The machine is shared: the load average before each phase is recorded beside the times.

    python benchmarks/imagefolder_load.py --serial --out benchmarks/results/imagefolder_load.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from stam.io import emit_json, provenance

DEFAULT_ARCHIVE = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-jpeg.tar.gz"
STANDARD = "a load from the cache < 1 s for CIFAR-10 (60,000 images)"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _stats(times: list[float]) -> dict:
    return {"best": min(times), "median": statistics.median(times), "all": times}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE, help="a CIFAR-10 image collection (default: the shared JPEG copy)")
    p.add_argument("--repeats", type=int, default=5, help="loads from the cache (default 5)")
    p.add_argument("--workers", type=int, default=None, help="decoding processes (default: the CPUs available)")
    p.add_argument("--serial", action="store_true", help="also time a first load with one process")
    p.add_argument("--out", help="also write the JSON here")
    args = p.parse_args(argv)

    from stam.dnn import data as D
    from stam.dnn import imagefolder as I

    expect = D.CIFAR_LAYOUTS["cifar10"].expect
    cache = Path(tempfile.mkdtemp(prefix="stam-bench-cache-"))
    try:
        phases = {}
        load_first = _load()
        first_s, first = _timed(lambda: I.read(args.archive, expect, cache_dir=cache, workers=args.workers))
        assert not first.cached
        phases["first"] = load_first
        serial_s = None
        if args.serial:
            phases["serial"] = _load()
            serial_s, again = _timed(lambda: I.read(args.archive, expect, cache_dir=cache / "serial", workers=1))
            assert not again.cached
        phases["cached"] = _load()
        cached = []
        for _ in range(args.repeats):
            t, c = _timed(lambda: I.read(args.archive, expect, cache_dir=cache))
            assert c.cached
            cached.append(t)
        phases["data_load"] = _load()
        data_load = []
        for _ in range(max(1, args.repeats // 2)):
            t, d = _timed(lambda: D.load("cifar10", args.archive, cache_dir=cache))
            data_load.append(t)
        entry = cache / "imagefolder" / first.source["sha256"]
        cache_bytes = sum(f.stat().st_size for f in entry.iterdir())
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cpus = os.cpu_count()
    result = {
        "kind": "benchmark-imagefolder-load",
        "provenance": provenance(),
        "machine": f"{os.uname().machine}, {cpus} CPUs visible, no GPU",
        "load_average_before": phases,
        "archive": {"file": args.archive.name, "bytes": args.archive.stat().st_size, "sha256": first.source["sha256"]},
        "images": {"train": int(len(first.train_x)), "test": int(len(first.test_x)), "shape": list(first.train_x.shape[1:])},
        "source": first.source,
        "workers": args.workers or cpus,
        "first_load_s": first_s,
        "first_load_serial_s": serial_s,
        "cached_load_s": _stats(cached),
        "data_load_from_cache_s": _stats(data_load),
        "cache_bytes": cache_bytes,
        "standard": STANDARD,
        "meets_standard": max(cached) < 1.0,
    }
    emit_json(result, args.out)
    return result


if __name__ == "__main__":
    main()
