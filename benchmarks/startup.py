"""Start-up timings of the installed `flopcalc`, measured side by side with its dependencies.

    python benchmarks/startup.py [--runs 21] [--every-preset] [--flopcalc CMD] [--instructions]

Interleaves, run by run, the baseline `python -c "import typer, yaml; from pydantic import
BaseModel"`, the same plus `import rich.console, rich.table`, and `flopcalc model MODEL --format
json` and `flopcalc model MODEL` (table) for gpt3, deepseek-v3 (latent attention, experts) and
qwen3-next-80b-a3b (a hybrid of gated DeltaNet and attention) — with `--every-preset`, for every
preset — and prints each median wall time, the median CPU time (user + system of the process:
steadier than wall time on a shared machine) and the ratios the project tracks: json /
baseline (goal <= 1.0) and table / baseline-with-rich (goal <= 1.15). `benchmarks/sweep.py`
times sweeps the same way. Uses only the standard library. A benchmark, not a test: the numbers
depend on the machine and its load; run it on an idle machine, with the cache warm.
`--instructions` counts each command's instructions once under valgrind's cachegrind instead
(needs valgrind): a figure that does not move with the machine's load, for a shared machine,
though a process's wall time is not in proportion to it (loading files and the interpreter's
start weigh more in time than in instructions).
docs/startup.md records the measurements and what keeps start-up fast.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BASE = "import typer, yaml; from pydantic import BaseModel"
BASELINES = {
    "baseline": [sys.executable, "-c", BASE],
    "baseline+rich": [sys.executable, "-c", BASE + "; import rich.console, rich.table"],
}
MODELS = ("gpt3", "deepseek-v3", "qwen3-next-80b-a3b")
JSON_GOAL, TABLE_GOAL = 1.0, 1.15


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process, its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{shlex.join(cmd)} failed (exit {done.returncode}): "
                 f"{done.stderr.decode(errors='replace').strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved(cases: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each case over `runs` rounds, one run of every case a round (so
    a change in the machine's load touches them all alike), after one warm-up round."""
    for cmd in cases.values():
        timed(cmd)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, cmd in cases.items():
            samples[name].append(timed(cmd))
    return {name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for name, s in samples.items()}


def instructions(cmd: list[str]) -> int:
    """Instructions one whole process executes (valgrind's cachegrind, no cache simulation)."""
    timed(cmd)  # warm: the validated-input cache and the compiled modules in place
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *cmd],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in done.stderr.splitlines():
        if "I" in line and "refs:" in line:
            return int(line.split(":")[1].replace(",", "").strip())
    sys.exit(f"valgrind gave no instruction count for {shlex.join(cmd)}: {done.stderr[-300:]}")


def flopcalc_command(given: str | None) -> list[str]:
    if given:
        return shlex.split(given)
    exe = shutil.which("flopcalc")
    if exe is None:
        sys.exit("flopcalc is not on PATH: install the project first (see README), or pass "
                 "--flopcalc 'python -m flopcalc'")
    return [exe]


def preset_names() -> list[str]:
    folder = Path(__file__).resolve().parent.parent / "presets"
    return sorted(p.stem for p in folder.glob("*.yaml"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--every-preset", action="store_true",
                        help="time `model` for every preset, not only three")
    parser.add_argument("--flopcalc", help="how to run flopcalc (default: the installed "
                        "command), e.g. 'python -m flopcalc'")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind on PATH")
    exe = flopcalc_command(args.flopcalc)
    models = preset_names() if args.every_preset else MODELS
    cases = dict(BASELINES)
    for model in models:
        cases[f"model {model} --format json"] = [*exe, "model", model, "--format", "json"]
        cases[f"model {model}"] = [*exe, "model", model]
    if args.instructions:
        counts = {name: instructions(cmd) for name, cmd in cases.items()}
        worst = {"json": 0.0, "table": 0.0}
        for name, count in counts.items():
            ratio = ""
            if name.startswith("model"):
                kind = "json" if name.endswith("json") else "table"
                r = count / counts["baseline" if kind == "json" else "baseline+rich"]
                worst[kind] = max(worst[kind], r)
                ratio = f"{r:.3f}"
            print(f"{name:{max(map(len, counts))}s}  {count / 1e6:8.1f}M  {ratio}")
        print(f"instructions, one run each; worst ratio json {worst['json']:.3f}, table "
              f"{worst['table']:.3f} (the goals are on wall time: json <= {JSON_GOAL}, table <= "
              f"{TABLE_GOAL})")
        return
    med = interleaved(cases, args.runs)
    width = max(map(len, med))
    print(f"{'':{width}s}  {'wall':>8s}  {'CPU':>8s}  ratio (wall, CPU)")
    base, rich = med["baseline"], med["baseline+rich"]
    worst = {"json": 0.0, "table": 0.0}
    for name, (wall, cpu) in med.items():
        ratio = ""
        if name.startswith("model"):
            table = not name.endswith("json")
            against = rich if table else base
            r = (wall / against[0], cpu / against[1])
            worst["table" if table else "json"] = max(worst["table" if table else "json"], r[0])
            ratio = f"{r[0]:.3f}, {r[1]:.3f} of {'baseline+rich' if table else 'baseline'}"
        print(f"{name:{width}s}  {wall * 1000:6.1f}ms  {cpu * 1000:6.1f}ms  {ratio}")
    print(f"medians of {args.runs} interleaved runs on {os.cpu_count()} CPUs; worst wall "
          f"ratio json {worst['json']:.3f} (goal <= {JSON_GOAL}), table {worst['table']:.3f} "
          f"(goal <= {TABLE_GOAL})")


if __name__ == "__main__":
    main()
