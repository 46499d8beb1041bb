"""`serve --max-loras` on a mixture of experts: the adapter slots vLLM 0.33 allocates on the
routed experts (lora/layers/fused_moe.py, FusedMoEWithLoRA and FusedMoE3DWithLoRA), worked by
hand, and vLLM 0.11's none (lora/models.py, is_moe_model: experts get no adapter)."""

from __future__ import annotations

import json

import pytest

from flopcalc import api
from tests.conftest import run_process

pytestmark = [pytest.mark.hand, pytest.mark.engine]

# Qwen3-30B-A3B: d 2048, 32 query heads and 4 KV heads of 128 (q 4096 wide, k and v 512), 48
# layers, a router 2048 → 128, 128 experts of width 768 (gate, up, down), no shared expert.


def test_qwen3_30b_rank_8_one_slot_by_hand():
    # per layer and slot, rank 8, tp 1, values:
    #   attention: q 8·2048 + 8·4096 = 49,152; k, v 8·2048 + 8·512 = 20,480 each; o 8·4096 +
    #   8·2048 = 49,152; the router (a ReplicatedLinear, wrapped too) 8·(2048 + 128) = 17,408
    #   → 156,672
    #   experts (FusedMoEWithLoRA, two w13 slices): w13 A 2·(128, 8, 2048), w13 B 2·(128, 768,
    #   8), w2 A (128, 8, 768), w2 B (128, 2048, 8) → 128·8·(3·2048 + 3·768) = 8,650,752
    # (156,672 + 8,650,752) · 48 layers · 2 bytes = 845,512,704
    r = api.serve("qwen3-30b-a3b", kv_memory="1GiB", max_loras=1, max_lora_rank=8)
    assert r.lora.device_bytes == [845_512_704]
    assert "FusedMoEWithLoRA" in r.lora.how
    # vLLM 0.11 serves the model with adapters on attention and the router only:
    # 156,672 · 48 · 2 = 15,040,512
    old = api.serve("qwen3-30b-a3b", kv_memory="1GiB", max_loras=1, max_lora_rank=8,
                    engine="vllm==0.11")
    assert old.lora.device_bytes == [15_040_512]
    assert "routed experts none" in old.lora.how


def test_tensor_and_expert_parallel_by_hand():
    # tp 2, rank 16, 2 slots. Attention per layer and slot: q 16·2048 + 16·2048 = 65,536; k, v
    # 16·2048 + 16·256 = 36,864 each; o (row) 16·2048 + 16·2048 = 65,536; router 16·2176 =
    # 34,816 → 239,616.
    # Experts split by tp (I_p = 768/2 = 384): 128·16·(3·2048 + 3·384) = 14,942,208
    # (239,616 + 14,942,208) · 48 · 2 slots · 2 bytes = 2,914,910,208
    r = api.serve("qwen3-30b-a3b", kv_memory="1GiB", max_loras=2, max_lora_rank=16, tp=2)
    assert r.lora.device_bytes == [2_914_910_208]
    # expert parallelism over the 2 ranks (vLLM's MoE tp_size becomes 1): 64 whole experts
    # each, 64·16·(3·2048 + 3·768) = 8,650,752; (239,616 + 8,650,752) · 48 · 2 · 2 =
    # 1,706,950,656
    r = api.serve("qwen3-30b-a3b", kv_memory="1GiB", max_loras=2, max_lora_rank=16, tp=2, ep=2)
    assert r.lora.device_bytes == [1_706_950_656]


def test_gpt_oss_fused_gate_up_shares_one_a_by_hand():
    # gpt-oss-20b (vLLM's is_3d_moe_weight: FusedMoE3DWithLoRA): d 2880, q 4096, k and v 512,
    # 24 layers, router 2880 → 32, 32 experts of width 2880. Rank 8, one slot, tp 1:
    #   attention: q 8·2880 + 8·4096 = 55,808; k, v 8·2880 + 8·512 = 27,136 each; o 55,808;
    #   router 8·(2880 + 32) = 23,296 → 189,184
    #   experts: w13 A (32, 8, 2880) once, w13 B (32, 2·2880, 8), w2 A (32, 8, 2880), w2 B
    #   (32, 2880, 8) → 32·8·(2·2880 + 3·2880) = 3,686,400 (not 32·8·6·2880 = 4,423,680)
    # (189,184 + 3,686,400) · 24 · 2 bytes = 186,028,032
    r = api.serve("gpt-oss-20b", kv_memory="1GiB", max_loras=1, max_lora_rank=8)
    assert r.lora.device_bytes == [186_028_032]
    assert "FusedMoE3DWithLoRA" in r.lora.how


def test_cli_json_shows_the_expert_slots():
    r = run_process("serve", "qwen3-30b-a3b", "--kv-memory", "8GiB", "--max-loras", "1",
                    "--max-lora-rank", "8", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["lora"]["device_bytes"] == [845_512_704]
