"""Print PyTorch reference counts (params, FlopCounterMode forward FLOPs) for every preset.

    python tools/torch_counts.py [--json OUT]

Needs torch and transformers (test-time only, never a flopcalc dependency).  Every model is
built on the meta device, so the whole table takes about a minute on two CPU cores.  FLOPs
are for batch 1 and full attention (FlopCounterMode counts the whole s x s products even
under a causal or sliding-window mask); "formula - counted" compares them with the closed
form in tests/torchref.py (2 FLOPs per multiply-add, matmuls only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import torchref  # noqa: E402

SEQS = (1000, 2048, 3001, 4096, 8192)
HF_SEQS = (1000, 3001)
HF_DIR = ROOT / "tests" / "data" / "hf"


def rows() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, arch in torchref.PRESETS.items():
        own = () if arch["context"] is None else (arch["context"],)
        for seq in sorted({*SEQS, *own}):
            counted = torchref.count(arch, seq)
            out.append(dict(model=name, seq=seq, **counted,
                            expected_params=torchref.EXPECTED_PARAMS.get(name),
                            formula_flops=torchref.formula_flops(arch, seq)))
    for path in sorted(HF_DIR.glob("*.json")):
        arch = torchref.arch_from_hf(torchref.load_hf_config(path))
        for seq in HF_SEQS:
            counted = torchref.count_hf_config(path, seq)
            out.append(dict(model=f"hf/{path.name}", seq=seq, **counted, expected_params=None,
                            formula_flops=torchref.formula_flops(arch, seq)))
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| model | seq | params | published params | forward FLOPs (FlopCounterMode) "
             "| formula - counted |", "|---|---:|---:|---:|---:|---:|"]
    for r in table:
        expected = "" if r["expected_params"] is None else f"{r['expected_params']:,}"
        lines.append(f"| {r['model']} | {r['seq']} | {r['params']:,} | {expected} "
                     f"| {r['forward_flops']:,} | {r['formula_flops'] - r['forward_flops']:,} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the rows as JSON")
    args = parser.parse_args()

    import torch
    import transformers

    transformers.logging.set_verbosity_error()  # e.g. Gemma's legacy hidden_act notice
    table = rows()
    print(markdown(table))
    if args.json:
        payload = dict(torch=torch.__version__, transformers=transformers.__version__, batch=1,
                       rows=table)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    wrong = [r for r in table if r["expected_params"] not in (None, r["params"])]
    for r in wrong:
        print(f"params mismatch: {r['model']} {r['params']:,} != {r['expected_params']:,}",
              file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
