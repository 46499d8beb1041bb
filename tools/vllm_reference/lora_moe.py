"""Run vLLM's own MoE LoRA buffer allocation (lora/layers/fused_moe.py) on the meta device.

    python tools/vllm_reference/lora_moe.py vllm-0.33.0-...whl \
        > tests/data/serve/vllm_0_33_lora_moe.json

Needs only torch (the project's venv has it) and the vllm wheel (pip download vllm==0.33.0
--no-deps). Importing vllm needs its CUDA stack, so the methods that allocate the buffers,
`FusedMoEWithLoRA._create_lora_a_weights`, `FusedMoEWithLoRA._create_lora_b_weights` and
`FusedMoE3DWithLoRA._create_lora_b_weights`, are taken verbatim out of the wheel's source (by
`ast`), compiled with torch and vLLM's `divide`, and called on a stand-in `self` holding the
attributes their code reads (hidden_size, local_num_experts, intermediate_size_per_partition,
_w13_slices, the shared-LoRA expert counts, fully_sharded, tp_size) with `device="meta"`:
the shapes and dtypes are vLLM's, no memory is allocated. What is NOT real: those attributes,
set as `FusedMoEWithLoRA.__init__` and `FusedMoEConfig.__post_init__` derive them (I/tp, or
E/ep experts of width I under expert parallelism; 1 slice for FusedMoE3DWithLoRA, line 489 of
0.33.0's file).

Prints JSON: per case the inputs and the bytes of every buffer per MoE layer on one device.
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile
from types import SimpleNamespace

import torch

SOURCE = "vllm/lora/layers/fused_moe.py"
# name, experts, hidden, intermediate, tp, ep, fused (is_3d_moe_weight), max_loras, rank
CASES = [
    ("qwen3-30b-a3b", 128, 2048, 768, 1, 1, False, 1, 8),
    ("qwen3-30b-a3b", 128, 2048, 768, 2, 1, False, 2, 16),
    ("qwen3-30b-a3b", 128, 2048, 768, 2, 2, False, 2, 16),
    ("gpt-oss-20b", 32, 2880, 2880, 1, 1, True, 1, 8),
    ("gpt-oss-120b", 128, 2880, 2880, 4, 1, True, 4, 64),
    ("mixtral-8x7b", 8, 4096, 14336, 8, 1, False, 3, 32),
]


def methods(text: str) -> dict[str, object]:
    """The three allocating methods, compiled from the file's own text."""
    tree = ast.parse(text)
    ns = {"torch": torch, "divide": lambda a, b: a // b, "LoRAConfig": object}
    out = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef) or cls.name not in ("FusedMoEWithLoRA",
                                                                  "FusedMoE3DWithLoRA"):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("_create_lora_"):
                mod = ast.Module(body=[fn], type_ignores=[])
                exec(compile(mod, f"{SOURCE}:{cls.name}", "exec"), ns)
                out[f"{cls.name}.{fn.name}"] = ns[fn.name]
                print(f"{cls.name}.{fn.name}: line {fn.lineno}", file=sys.stderr)
    return out


def run(fns: dict, experts: int, hidden: int, inter: int, tp: int, ep: int, fused: bool,
        max_loras: int, rank: int) -> dict:
    local, moe_tp = (experts // ep, 1) if ep > 1 else (experts, tp)
    me = SimpleNamespace(hidden_size=hidden, local_num_experts=local,
                         intermediate_size_per_partition=inter // moe_tp,
                         _w13_slices=1 if fused else 2, _w13_a_num_experts=local,
                         _w2_b_num_experts=local, fully_sharded=False, tp_size=moe_tp,
                         device="meta")
    cfg = SimpleNamespace(max_lora_rank=rank, lora_dtype=torch.bfloat16)
    fns["FusedMoEWithLoRA._create_lora_a_weights"](me, max_loras, cfg)
    b = "FusedMoE3DWithLoRA" if fused else "FusedMoEWithLoRA"
    fns[f"{b}._create_lora_b_weights"](me, max_loras, cfg)
    buffers = {}
    for name in ("w13_lora_a_stacked", "w13_lora_b_stacked", "w2_lora_a_stacked",
                 "w2_lora_b_stacked"):
        ts = getattr(me, name)
        buffers[name] = {"shapes": [list(t.shape) for t in ts],
                         "bytes": sum(t.numel() * t.element_size() for t in ts)}
    return {"buffers": buffers, "bytes_per_layer": sum(v["bytes"] for v in buffers.values())}


def main() -> None:
    with zipfile.ZipFile(sys.argv[1]) as z:
        text = z.read(SOURCE).decode()
    fns = methods(text)
    cases = []
    for name, e, h, i, tp, ep, fused, n, r in CASES:
        got = run(fns, e, h, i, tp, ep, fused, n, r)
        cases.append({"model": name, "experts": e, "hidden": h, "intermediate": i, "tp": tp,
                      "ep": ep, "fused_w13": fused, "max_loras": n, "max_lora_rank": r,
                      "dtype": "bf16", **got})
    json.dump({"source": f"{sys.argv[1].rsplit('/', 1)[-1]}: {SOURCE}", "cases": cases},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
