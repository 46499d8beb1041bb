"""Whole-process timings of `flopcalc plan`, side by side with the dependencies' import time.

    python benchmarks/plan.py [--runs 3] [--case NAME ...] [--instructions]

Runs `python -m flopcalc plan ...` (the flopcalc this Python imports: the installed one, or a
tree on PYTHONPATH) for presets and device counts from a few GPUs to absurd ones (10^12), run by
run interleaved with the baseline `python -c "import typer, yaml; from pydantic import
BaseModel"`, and prints each median wall time, its ratio to the baseline and the search's own
seconds (`search_seconds` of the JSON), with the CPU seconds of each process (on a shared
machine the wall time is what the others leave). The search is bounded by the model (heads,
layers, experts), not by --count: 10^12 devices must cost no more than a real cluster. Goals:
DeepSeek-V3 under 2 s on 4,096 H100 and under 5 s on 16,384, whole process. With
PYTHONDONTWRITEBYTECODE set every run compiles flopcalc afresh (about half a second): unset it
to time what an installed flopcalc costs. `--instructions` counts each process's instructions once
under valgrind's cachegrind instead (needs valgrind): a figure the machine's load does not move,
for comparing two trees on a shared machine. Standard library only. A benchmark, not a test:
the numbers depend on the machine and its load. docs/commands/plan.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

BASE = [sys.executable, "-c", "import typer, yaml; from pydantic import BaseModel"]
PLAN = [sys.executable, "-m", "flopcalc", "plan"]
CASES = {
    "llama-3.1-405b x 16,384 h100": ["llama-3.1-405b", "--global-batch", "2048", "--count",
                                     "16384", "--accelerator", "h100", "--flash"],
    "deepseek-v3 x 4,096 h100": ["deepseek-v3", "--global-batch", "8192", "--count", "4096",
                                 "--accelerator", "h100"],
    "deepseek-v3 x 16,384 h100": ["deepseek-v3", "--global-batch", "8192", "--count",
                                  "16384", "--accelerator", "h100"],
    "deepseek-v3 x 4,096 h100 fp8": ["deepseek-v3", "--global-batch", "8192", "--count",
                                     "4096", "--accelerator", "h100", "--dtype", "fp8"],
    "mixtral-8x7b x 64 h100": ["mixtral-8x7b", "--global-batch", "512", "--count", "64",
                               "--accelerator", "h100"],
    "llama-3.1-8b x 1e12 (dense)": ["llama-3.1-8b", "--global-batch", "1e12", "--count", "1e12",
                                    "--accelerator", "h100"],
}


def run(cmd: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the process, the search's seconds or 0). The CPU time
    says what the wall time would be on an idle machine where others share the cores."""
    start = time.perf_counter()
    before = os.times()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    took = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    search = json.loads(done.stdout).get("search_seconds", 0.0) if done.stdout.startswith("{") \
        else 0.0
    return took, cpu, search


def instructions(cmd: list[str]) -> int:
    """Instructions one whole process executes (valgrind's cachegrind, no cache simulation),
    after a run that warms the caches."""
    subprocess.run(cmd, capture_output=True, check=True)
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *cmd],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in done.stderr.splitlines():
        if "I" in line and "refs:" in line:
            return int(line.split(":")[1].replace(",", "").strip())
    sys.exit(f"valgrind gave no instruction count: {done.stderr[-300:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES),
                        help="only these cases (repeatable); default all")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing")
    args = parser.parse_args()
    cases = {name: PLAN + CASES[name] + ["--format", "json"] for name in (args.case or CASES)}
    if args.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind on PATH")
        base = instructions(BASE)
        print(f"{'case':32s} {'instructions':>16s} {'/ import':>9s}")
        print(f"{'baseline (dependencies import)':32s} {base:16,d} {1:9.2f}")
        for name, cmd in cases.items():
            n = instructions(cmd)
            print(f"{name:32s} {n:16,d} {n / base:9.2f}")
        return
    walls: dict[str, list[float]] = {name: [] for name in ["baseline", *cases]}
    cpus: dict[str, list[float]] = {name: [] for name in ["baseline", *cases]}
    searches: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        w, c, _s = run(BASE)
        walls["baseline"].append(w)
        cpus["baseline"].append(c)
        for name, cmd in cases.items():
            w, c, s = run(cmd)
            walls[name].append(w)
            cpus[name].append(c)
            searches[name].append(s)
    base = statistics.median(walls["baseline"])
    print(f"{'case':32s} {'wall':>9s} {'cpu':>9s} {'/ import':>9s} {'search':>9s}")
    print(f"{'baseline (dependencies import)':32s} {base:8.3f}s "
          f"{statistics.median(cpus['baseline']):8.3f}s {1:9.2f}")
    for name in cases:
        w = statistics.median(walls[name])
        print(f"{name:32s} {w:8.3f}s {statistics.median(cpus[name]):8.3f}s {w / base:9.2f} "
              f"{statistics.median(searches[name]):8.3f}s")
    print(f"medians over {args.runs} interleaved runs")


if __name__ == "__main__":
    main()
