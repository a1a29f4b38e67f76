"""Issue 60: the four methods' verdicts side by side (PSGD, BC, BR, STAM), per class of F, on each method's natural
measure and on the common measure, as one result file the findings generator and the figure ``methods`` read.

PSGD, BC, BR (with lam fixed, and grown by 1.02 per step) and STAM on the common measure are what ``stam pep --region
--algo NAME [--measure common] [--rho R] --json`` prints (exact certificates and exact refuting runs, seconds);
STAM's natural-measure region is read from the committed ``stam pep --region`` result
``benchmarks/results/lyapunov_region.json`` (its Lyapunov certificates; minutes to recompute).

    python benchmarks/methods_regions.py --out benchmarks/results/methods_regions.json
"""

from __future__ import annotations

import argparse

from stam.theory.worstcase.lyapunov import REGION
from stam.theory.worstcase.methods_region import METHODS_REGIONS, regions_result

STAM_REGION = "benchmarks/results/lyapunov_region.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/methods_regions.json")
    ap.add_argument("--stam-region", default=STAM_REGION, help="a lyapunov-region file (stam pep --region --out)")
    args = ap.parse_args(argv)
    result = regions_result(REGION.read(args.stam_region), args.stam_region)
    METHODS_REGIONS.write(result, args.out)
    for m in result["methods"]:
        for measure in ("natural", "common"):
            for v in m[measure] or []:
                print(f"{m['label']:>24} {measure:>8} {v['f_class']:>9}: {v['verdict']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
