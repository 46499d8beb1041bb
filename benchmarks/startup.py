"""Start-up and sweep timings of the installed `flopcalc`, measured side by side.

    python benchmarks/startup.py [--runs 21]

Interleaves, run by run, the baseline `python -c "import typer, yaml; from pydantic import
BaseModel"`, the same plus `import rich.console, rich.table`, `flopcalc model gpt3 --format json`
and `flopcalc model gpt3` (table), and prints each median wall time and the two ratios the
project tracks (json / baseline, table / baseline-with-rich), plus the wall time of a
10,000-point sweep. Uses only the standard library (subprocess + time.perf_counter).
A benchmark, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

BASE = "import typer, yaml; from pydantic import BaseModel"
CASES = {
    "baseline": [sys.executable, "-c", BASE],
    "baseline+rich": [sys.executable, "-c", BASE + "; import rich.console, rich.table"],
    "model gpt3 json": ["flopcalc", "model", "gpt3", "--format", "json"],
    "model gpt3 table": ["flopcalc", "model", "gpt3"],
}
SWEEP = ["flopcalc", "sweep", "llama-3.1-405b", "--seq", "1..1M", "--points", "10000",
         "--format", "csv"]


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    exe = shutil.which("flopcalc")
    if exe is None:
        sys.exit("flopcalc is not on PATH: install the project first (see README)")
    cases = {name: [exe, *cmd[1:]] if cmd[0] == "flopcalc" else cmd for name, cmd in CASES.items()}
    for cmd in cases.values():  # warm the file cache
        wall(cmd)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, cmd in cases.items():
            times[name].append(wall(cmd))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, m in med.items():
        print(f"{name:18s} median {m * 1000:7.1f} ms over {args.runs} interleaved runs")
    print(f"ratio json / baseline            {med['model gpt3 json'] / med['baseline']:.3f}"
          "  (target <= 1.0)")
    print(f"ratio table / baseline+rich      {med['model gpt3 table'] / med['baseline+rich']:.3f}"
          "  (target <= 1.15)")
    sweep = [wall([exe, *SWEEP[1:]]) for _ in range(5)]
    # No ratio here: the sweep's time is its counting, which no import baseline measures.
    # Compare it with an older build on the same machine.
    print(f"sweep llama-3.1-405b, 10,000 points, csv: median {statistics.median(sweep):.3f} s")


if __name__ == "__main__":
    main()
