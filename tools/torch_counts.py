"""Print flopcalc's counts next to PyTorch's for every preset and the HF fixture configs.

    python tools/torch_counts.py [--json OUT]

Needs torch and transformers (test-time only, never a flopcalc dependency).  Every model is
built on the meta device, so the whole table takes about a minute on two CPU cores.  FLOPs
are for batch 1 and full attention (FlopCounterMode counts the whole s x s products even
under a causal or sliding-window mask). Exits 1 if any figure differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import hfref  # noqa: E402
import torchref  # noqa: E402

import flopcalc  # noqa: E402

SEQS = (1000, 2048, 3001, 4096, 8192)
HF_SEQS = (1000, 3001)
HF_DIR = ROOT / "tests" / "data" / "hf"


def flopcalc_counts(model: str, seq: int) -> dict[str, int]:
    report = flopcalc.model(model, seq=seq, attention="full")
    return {"flopcalc_params": report.params.total, "flopcalc_flops": report.flops.forward}


def hf_counts(path: Path, seq: int) -> dict[str, int]:
    """transformers' own model for a published config (T5: the checkpoint's untied head)."""
    config = hfref.load_config(path)
    params = hfref.param_count(hfref.build(config))
    raw = json.loads(path.read_text())
    if raw.get("model_type") == "t5" and not raw.get("tie_word_embeddings", True):
        params += raw["vocab_size"] * raw["d_model"]
    return {"params": params, "forward_flops": hfref.forward_flops(config, seq)}


def rows() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, arch in torchref.PRESETS.items():
        own = () if arch["context"] is None else (arch["context"],)
        for seq in sorted({*SEQS, *own}):
            out.append(dict(model=name, seq=seq, context=arch["context"],
                            **torchref.count(arch, seq), **flopcalc_counts(name, seq)))
    for path in sorted(HF_DIR.glob("*.json")):
        for seq in HF_SEQS:
            out.append(dict(model=f"hf/{path.name}", seq=seq, context=None,
                            **hf_counts(path, seq),
                            **flopcalc_counts(str(path), seq)))
    return out


def same(r: dict[str, Any]) -> bool:
    return (r["params"], r["forward_flops"]) == (r["flopcalc_params"], r["flopcalc_flops"])


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| model | seq | params (PyTorch = flopcalc) | forward FLOPs (FlopCounterMode "
             "= flopcalc) | equal |", "|---|---:|---:|---:|:-:|"]
    for r in table:
        beyond = " (> context)" if r["context"] and r["seq"] > r["context"] else ""
        params = f"{r['params']:,}" if r["params"] == r["flopcalc_params"] else (
            f"{r['params']:,} vs {r['flopcalc_params']:,}")
        flops = f"{r['forward_flops']:,}" if r["forward_flops"] == r["flopcalc_flops"] else (
            f"{r['forward_flops']:,} vs {r['flopcalc_flops']:,}")
        lines.append(f"| {r['model']} | {r['seq']:,}{beyond} | {params} | {flops} "
                     f"| {'yes' if same(r) else 'NO'} |")
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
    wrong = [r for r in table if not same(r)]
    for r in wrong:
        print(f"mismatch: {r['model']} at seq {r['seq']}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
