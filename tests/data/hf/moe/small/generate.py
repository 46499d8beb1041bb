"""Regenerate expected.json next to this file from tests/hfref_moe.py (PyTorch/transformers only).

    . .venv/bin/activate && python tests/data/hf/moe/small/generate.py

For every small config here: parameters, and FlopCounterMode FLOPs of one forward at two lengths and
batch 1 and 3 on a real CPU model (seeded random weights and tokens) with eager attention and

* eager experts (``experts_implementation="eager"``), checked per layer against the closed form
  router 2*T*d*E + routed 2*T*k*3*d*I + shared (``hfref_moe.formula_flops``), and that every token
  was routed to k distinct experts;
* the transformers default experts kernel (grouped_mm), whose routed experts FlopCounterMode counts 0.

Also the absorbed-MLA decode checks for the two deepseek_v3 configs, and meta-device parameter
summaries of the published configs in ../ (total, by kind, per expert, active, DeepSeek MTP).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[4]))  # repository root

from tests import hfref_moe as ref  # noqa: E402

LENGTHS = (5, 12)  # gpt_oss small slides a window of 4: smaller than both
BATCHES = (1, 3)
MLA_POINTS = ((7, 1), (16, 2))  # (context keys including the new token, batch)


def small() -> dict:
    out = {}
    for path in sorted(HERE.glob("*.json")):
        if path.name == "expected.json":
            continue
        config = ref.load_config(path)
        model = ref.build(config, device="meta")
        points = []
        for seq in LENGTHS:
            for batch in BATCHES:
                eager = ref.forward_flops(config, seq, batch, experts="eager")
                default = ref.forward_flops(config, seq, batch, experts=None)
                formula = ref.formula_flops(config, seq, batch)
                assert eager["total"] == formula["total"] and eager["layers"] == formula["layers"], path.name
                assert all(r["k_distinct"] for r in eager["routing"].values()), path.name
                points.append({
                    "seq": seq, "batch": batch,
                    "eager": eager["total"],
                    "default_kernel": default["total"],
                    "default_implementation": default["implementation"],
                    "default_routed_experts": sum(layer["routed_experts"] for layer in default["layers"]),
                    "eager_equals_formula": True,
                    "layers": eager["layers"],
                    "lm_head": eager["lm_head"],
                    "tokens_per_expert": {str(i): r["tokens_per_expert"] for i, r in eager["routing"].items()},
                })
        out[path.stem] = {"model_type": config.model_type, "params": ref.param_count(model),
                          "params_by_kind": ref.param_breakdown(model),
                          "moe_layers": ref.moe_layers(config), "flops": points}
        print(path.stem, out[path.stem]["params"], [(p["seq"], p["batch"], p["eager"], p["default_kernel"])
                                                   for p in points])
    return out


def mla() -> dict:
    out = {}
    for name in ("deepseek_v3-no-q-lora", "deepseek_v3-q-lora"):
        config = ref.load_config(HERE / f"{name}.json")
        rows = []
        for context, batch in MLA_POINTS:
            r = ref.mla_decode_check(config, context, batch)
            assert r["absorbed"]["counted"] == r["absorbed"]["formula"], name
            assert r["absorbed"]["counted_total"] == sum(r["absorbed"]["formula"].values()), name
            assert r["hf"]["counted_total"] == sum(r["hf"]["formula"].values()), name
            assert r["max_abs_diff_output"] < 1e-12, r
            rows.append(r)
        out[name] = rows
    return out


def published() -> dict:
    out = {}
    for path in sorted(HERE.parent.glob("*.json")):
        summary = ref.published_summary(path)
        if summary["model_type"] == "deepseek_v3":
            config = ref.load_config(path)
            summary["mtp_params_unique"] = ref.deepseek_mtp_params(config)
        out[path.name] = summary
        print(path.name, summary["params"], summary["active_params"])
    return out


def main() -> None:
    import torch
    import transformers

    expected = {
        "generator": "tests/data/hf/moe/small/generate.py (tests/hfref_moe.py)",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "conventions": "FlopCounterMode total (2 FLOPs per multiply-add) of model(input_ids, use_cache=False) "
                       "under no_grad, attn_implementation='eager'; 'eager' = experts_implementation='eager', "
                       "'default_kernel' = transformers default (grouped_mm, routed experts count 0). "
                       "Weights and tokens seeded (seed 0).",
        "small": small(),
        "mla_decode": mla(),
        "published": published(),
    }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
