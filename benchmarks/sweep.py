"""Whole-process time of a 10,000-point sweep, for every preset, side by side with the
dependencies' import.

    python benchmarks/sweep.py [--runs 5] [--presets a,b] [--attention full,causal]
                               [--scan chunked,recurrent] [--flopcalc CMD]

For each preset, attention convention and scan: `flopcalc sweep PRESET --seqs 1..1M --points
10000 --format json > /dev/null`, interleaved run by run with the baseline `python -c "import
typer, yaml; from pydantic import BaseModel"`; prints the median wall and CPU time (user +
system: steadier on a shared machine) of each, the slowest, and how many are over the goal of
0.5 s. Uses only the standard library (and `startup.py` beside it). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os

from startup import BASELINES, flopcalc_command, interleaved, preset_names

GOAL = 0.5  # seconds, whole process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--presets", help="comma-separated (default: every preset)")
    parser.add_argument("--attention", default="full,causal")
    parser.add_argument("--scan", default="chunked,recurrent")
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--flopcalc", help="how to run flopcalc (default: the installed "
                        "command), e.g. 'python -m flopcalc'")
    args = parser.parse_args()
    exe = flopcalc_command(args.flopcalc)
    presets = args.presets.split(",") if args.presets else preset_names()
    cases = {"baseline": BASELINES["baseline"]}
    for preset in presets:
        for attention in args.attention.split(","):
            for scan in args.scan.split(","):
                cases[f"{preset} {attention} {scan}"] = [
                    *exe, "sweep", preset, "--seqs", "1..1M", "--points", str(args.points),
                    "--attention", attention, "--scan", scan, "--format", "json"]
    med = interleaved(cases, args.runs)
    width = max(map(len, med))
    print(f"{'':{width}s}  {'wall':>7s}  {'CPU':>7s}")
    for name, (wall, cpu) in med.items():
        print(f"{name:{width}s}  {wall:6.3f}s  {cpu:6.3f}s")
    sweeps = {k: v for k, v in med.items() if k != "baseline"}
    slowest = max(sweeps, key=lambda k: sweeps[k][0])
    over = sum(1 for wall, _ in sweeps.values() if wall > GOAL)
    print(f"medians of {args.runs} interleaved runs on {os.cpu_count()} CPUs; slowest: "
          f"{slowest} {sweeps[slowest][0]:.3f}s wall; {over} of {len(sweeps)} over {GOAL} s")


if __name__ == "__main__":
    main()
