"""Run the model-zoo sweep and print the table of supported Hugging Face model types.

    python tools/sweep.py [--only TYPE ...] [--no-flops] [--write-docs]

For every case in `tests/sweep/` (one per supported `model_type`): build transformers' default
config, save it as a checkpoint would be saved, import it with flopcalc, and compare
parameters with the model built on the meta device, at the default and at each variant; then
forward FLOPs of the shrunk copy with FlopCounterMode (eager attention, eager experts) at each
of the case's lengths, batch 1 and 2; and, for cases that ask, the cache bytes after a real
`generate`. The same checks as `pytest -m torch tests/pytorch/test_model_zoo.py`, printed as a
Markdown table; `--write-docs` puts the table into docs/huggingface.md between its markers. Needs
torch and transformers (test tools, never flopcalc dependencies). Exits 1 if any figure differs.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import sweep  # noqa: E402

START, END = "<!-- sweep table: start -->", "<!-- sweep table: end -->"


def configs(case: sweep.Case) -> list[dict[str, Any]]:
    return [dict(case.fix)] + [{**case.fix, **v} for v in case.variants]


def kinds(data: dict[str, Any]) -> set[str]:
    """The kinds filling the layers' slots (class names: Attention, GatedDeltaNet, Moe, ...)."""
    import json
    import tempfile

    from flopcalc.models.registry import load_model

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(data))
        spec = load_model(str(path)).spec
    return {type(kind).__name__ for g in spec.groups() for _, kind in g.layer.slots()}


def check(case: sweep.Case, flops: bool) -> dict[str, Any]:
    """One row: what was compared and whether each figure was equal."""
    row: dict[str, Any] = {"type": case.model_type, "configs": 0, "params": True,
                           "flops": None, "cache": None, "kinds": set(), "note": case.note}
    for keys in configs(case):
        config = sweep.config_of(case.model_type, keys, case.text_config)
        report = sweep.flopcalc_report(sweep.saved(config), seq=8)
        row["configs"] += 1
        row["kinds"] |= kinds(sweep.saved(config))
        row["params"] &= report.params.total == sweep.hf_params(case, config)
        if flops:
            shrunk = sweep.config_of(case.model_type, {**keys, **case.shrink}, case.text_config)
            data = sweep.saved(shrunk)
            for seq in case.lengths:
                for batch in (1, 2):
                    ours = sweep.flopcalc_report(data, seq=seq, batch=batch).flops.forward
                    extra = case.extra_flops(shrunk, batch, seq) if case.extra_flops else 0
                    same = ours + extra == sweep.hf_flops(case, shrunk, batch, seq)
                    row["flops"] = same if row["flops"] is None else row["flops"] and same
    if flops and case.cache:
        config = sweep.config_of(case.model_type, {**case.fix, **case.shrink}, case.text_config)
        data = sweep.saved(config)
        row["cache"] = all(
            sweep.flopcalc_report(data, seq=0, batch=b, command="infer", prompt=p, gen=n - 1,
                                  kv_dtype="fp32", state_dtype="fp32").kv_cache.bytes
            == sweep.hf_generated_cache(case, config, b, p, n)
            for b, p, n in ((1, 3, 2), (2, 9, 4)))
    return row


def mark(value: Any) -> str:
    return "-" if value is None else ("equal" if value else "DIFFERS")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| model_type | layers | configs | parameters | forward FLOPs | cache | note |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        note = " ".join(r["note"].split()).replace("|", "/")
        lines.append(f"| `{r['type']}` | {', '.join(sorted(r['kinds']))} | {r['configs']} | "
                     f"{mark(r['params'])} | {mark(r['flops'])} | {mark(r['cache'])} | {note} |")
    return "\n".join(lines)


DOCS = ROOT / "docs" / "huggingface.md"  # the page about Hugging Face import holds the table


def write_docs(text: str) -> None:
    path = DOCS
    readme = path.read_text()
    if START not in readme or END not in readme:
        sys.exit(f"{path.relative_to(ROOT)} has no {START} ... {END} markers")
    body = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: f"{START}\n{text}\n{END}",
                  readme, flags=re.S)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(body)
    tmp.replace(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, metavar="TYPE")
    parser.add_argument("--no-flops", action="store_true",
                        help="parameters only (meta device: seconds, not minutes)")
    parser.add_argument("--write-docs", "--write-readme", dest="write_docs", action="store_true",
                        help="put the table into docs/huggingface.md (--write-readme: its old name)")
    args = parser.parse_args()
    cases = [c for c in sweep.cases() if args.only is None or c.model_type in args.only]
    rows = []
    start = time.perf_counter()
    for case in cases:
        rows.append(check(case, flops=not args.no_flops))
        print(f"{case.model_type}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    text = table(rows)
    print(text)
    failed = [r["type"] for r in rows if False in (r["params"], r["flops"], r["cache"])]
    if args.write_docs:
        if failed or args.only is not None or args.no_flops:
            print("not written: the docs carry only a full, passing sweep", file=sys.stderr)
        else:
            write_docs(text)
    if failed:
        print(f"differs: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
