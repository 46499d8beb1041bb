"""Estimate the mutation score of the counting code from a uniform random sample of its mutants.

    pip install mutmut==3.8.1
    python tools/mutation_sample.py [--per-folder 400] [--draw 2026] [--folders counting]

A whole `mutmut run` over `flopcalc/counting/` and `flopcalc/kinds/` (about 19,000 mutants) is
several hours on two cores. This draws, by a fixed draw number (the random generator's start), the same number of mutants from
each folder, uniformly among all of that folder's mutants, has mutmut run exactly those, and
prints for each folder the share caught with its 95% Wilson interval, then every survivor's
name (`mutmut show NAME` prints its diff). The sample is unbiased where a partial run is not:
mutmut runs the mutants with the fewest tests first.

The mutants are those `mutmut run` generates from `[tool.mutmut]` in `pyproject.toml`; when
`mutants/` holds none yet, this first runs mutmut on a name that matches no mutant, which
generates them all, records which tests reach which function, and runs the tests once.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("counting", "kinds")
# mutmut's exit codes as it records them: 0 the tests passed (survived), 33 no test reaches the
# function, 34 skipped, None not run; any other code is a failing (catching) test run, a
# timeout or a crash of the mutant, which mutmut counts as caught too.
SURVIVED, NO_TESTS, SKIPPED = 0, 33, 34


def mutants() -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for meta in sorted(glob.glob(str(ROOT / "mutants" / "flopcalc" / "**" / "*.py.meta"),
                              recursive=True)):
        out.update(json.loads(Path(meta).read_text())["exit_code_by_key"])
    return out


def folder(name: str) -> str:
    return name.split(".")[1]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def mutmut(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=ROOT, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-folder", type=int, default=400)
    parser.add_argument("--draw", type=int, default=2026,
                        help="start of the random generator: the same number draws the same sample")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--folders", nargs="+", choices=FOLDERS, default=list(FOLDERS),
                        help="sample only these folders of flopcalc/")
    args = parser.parse_args()

    if not mutants():
        # mutmut stops, once it has generated the mutants and the tests' coverage, at "nothing
        # matches": what is wanted here
        subprocess.run([sys.executable, "-m", "mutmut", "run", "flopcalc.no_such_module*"],
                       cwd=ROOT, check=False)
    everything = mutants()
    rng = random.Random(args.draw)
    sample: list[str] = []
    for f in args.folders:
        names = sorted(n for n in everything if folder(n) == f)
        sample += rng.sample(names, min(args.per_folder, len(names)))
    mutmut("run", "--max-children", str(args.max_children), *sample)

    results = mutants()
    survivors: list[str] = []
    print(f"\ndraw {args.draw}, {args.per_folder} mutants drawn from each folder")
    for f in args.folders:
        drawn = [n for n in sample if folder(n) == f]
        codes = [results[n] for n in drawn]
        ran = [c for c in codes if c not in (None, SKIPPED)]
        caught = sum(c not in (SURVIVED, NO_TESTS) for c in ran)
        low, high = wilson(caught, len(ran))
        total = sum(folder(n) == f for n in everything)
        print(f"flopcalc/{f}/: {caught} of {len(ran)} caught ({caught / len(ran):.1%}, 95% "
              f"interval {low:.1%} to {high:.1%}); {codes.count(SURVIVED)} survived, "
              f"{codes.count(NO_TESTS)} reached by no test; {total:,} mutants in the folder")
        survivors += [n for n in drawn if results[n] in (SURVIVED, NO_TESTS)]
    print("\nnot caught:")
    for name in sorted(survivors):
        print(f"  {name}  ({'no test' if results[name] == NO_TESTS else 'survived'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
