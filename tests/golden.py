"""The figures every preset printed before a change, to prove a refactor changes none of them.

`tests/data/golden/PRESET.json` holds, for each preset, every number of the JSON reports of
`model` (full and causal), `infer`, `memory` (two layouts), `conventions` and `sweep` (full and
causal), flattened to dotted keys (`model_full.params.total`, `sweep_causal.rows.3.attention`).
Text is left out: wording may change, figures may not. A change that is meant to move a figure
rewrites the file with `python -m tests.golden` and says why in its commit.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Iterator

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"


def numbers(doc: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every number (and null) of a JSON document with its dotted key; list items by their
    `name` when they have unique ones (rows of parts: their order is presentation), else by
    index."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from numbers(value, f"{prefix}{key}.")
    elif isinstance(doc, list):
        names = [v.get("name") if isinstance(v, dict) else None for v in doc]
        named = None not in names and len(set(names)) == len(names)
        for i, value in enumerate(doc):
            yield from numbers(value, f"{prefix}{names[i] if named else i}.")
    elif doc is None or (isinstance(doc, (int, float)) and not isinstance(doc, bool)):
        yield prefix[:-1], doc


def runs(name: str) -> dict[str, Any]:
    """The reports recorded for one preset (decoder-only ones get `infer` too)."""
    import flopcalc

    spec = flopcalc.load(name).spec
    out = {
        "model_full": flopcalc.model(name),
        "model_causal": flopcalc.model(name, attention="causal", seq="8k", batch=2),
        "model_elementwise": flopcalc.model(name, attention="causal", seq="3k",
                                            elementwise=True),
        "conventions": flopcalc.conventions(name),
        "sweep_full": flopcalc.sweep(name, seq="1k..64k"),
        "sweep_causal": flopcalc.sweep(name, seq="100..70k", points=9, attention="causal"),
        "memory_plain": flopcalc.memory(name, seq="2k", accelerator="h100"),
        "memory_split": split_memory(name),
    }
    if spec.architecture == "decoder-only":
        out["infer"] = flopcalc.infer(name, prompt="6k", gen="3k", batch=3,
                                      accelerator="h100", count=8)
    return out


def split_memory(name: str) -> Any:
    """Training memory under every kind of split (tensor parallelism of 2 where the heads
    allow it: GPT-2 XL has 25)."""
    import flopcalc

    for tp in (2, 1):
        try:
            return flopcalc.memory(name, seq="4k", batch=2, tp=tp, pp=2, dp=2, zero=3,
                                   recompute="selective", sequence_parallel=tp > 1, flash=True,
                                   accelerator="h100")
        except flopcalc.FlopcalcError:
            if tp == 1:
                raise
    raise AssertionError("unreachable")


def listed(name: str) -> dict[str, Any]:
    """The preset's row of `flopcalc list --format json`."""
    return next(r for r in _list() if r["model"] == name)


@functools.lru_cache(maxsize=1)
def _list() -> list[dict[str, Any]]:
    import contextlib
    import io

    from flopcalc.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["list", "--format", "json"]) == 0
    return json.loads(out.getvalue())["presets"]


def record(name: str) -> dict[str, Any]:
    docs = {run: report.to_dict() for run, report in runs(name).items()}
    docs["list"] = listed(name)
    return {f"{run}.{key}": value for run, doc in docs.items() for key, value in numbers(doc)}


def main() -> None:
    from flopcalc.models.registry import preset_names

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or preset_names():
        (GOLDEN / f"{name}.json").write_text(json.dumps(record(name), indent=0) + "\n")
        print(name)


if __name__ == "__main__":
    main()
