"""The routed experts' LoRA slots against vLLM 0.33.0's own allocating code: `tools/
vllm_reference/lora_moe.py` ran `FusedMoEWithLoRA._create_lora_a_weights`, `_create_lora_b_
weights` and `FusedMoE3DWithLoRA._create_lora_b_weights` (lora/layers/fused_moe.py, taken from
the wheel) on the meta device and recorded every buffer's shape and bytes per MoE layer
(tests/data/serve/vllm_0_33_lora_moe.json; 0.34.0 gives the same)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc import api
from flopcalc.engines import lora as L
from flopcalc.kinds.base import EXPERT, LAYERS, Part

pytestmark = [pytest.mark.recorded, pytest.mark.engine]

CASES = json.loads((Path(__file__).parent.parent / "data" / "serve" /
                    "vllm_0_33_lora_moe.json").read_text())["cases"]


def _stacks(e: int, h: int, i: int) -> list[Part]:
    # flopcalc's expert stacks (E, n_in, n_out) as a gated MLP declares them
    return [Part(f"experts.{m}.weight", e * h * i, LAYERS, shape, EXPERT, matmul=True,
                 module=f"experts.{m}")
            for m, shape in (("gate", (e, h, i)), ("up", (e, h, i)), ("down", (e, i, h)))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['model']}-tp{c['tp']}-ep{c['ep']}")
def test_expert_slots_equal_vllms_buffers(case):
    values = L.expert_slot_values(_stacks(case["experts"], case["hidden"],
                                          case["intermediate"]),
                                  case["tp"], case["ep"], case["max_lora_rank"],
                                  case["fused_w13"])
    assert case["max_loras"] * 2 * values == case["bytes_per_layer"]


def test_presets_reserve_the_recorded_bytes_per_layer():
    # what serve adds for the experts (0.33 minus 0.11, which adapts none) over 48 layers is
    # the recorded buffers of one Qwen3-30B-A3B layer
    (case,) = [c for c in CASES if c["model"] == "qwen3-30b-a3b" and c["tp"] == 1]
    new, old = (api.serve("qwen3-30b-a3b", kv_memory="1GiB", max_loras=1, max_lora_rank=8,
                          engine=e).lora.device_bytes[0] for e in ("vllm", "vllm==0.11"))
    assert new - old == 48 * case["bytes_per_layer"]
    (case,) = [c for c in CASES if c["model"] == "gpt-oss-20b"]
    new, old = (api.serve("gpt-oss-20b", kv_memory="1GiB", max_loras=1, max_lora_rank=8,
                          engine=e).lora.device_bytes[0] for e in ("vllm", "vllm==0.11"))
    assert new - old == 24 * case["bytes_per_layer"]
