"""DeepSeek-V3 counted by hand from its published shape (DeepSeek-AI, "DeepSeek-V3 Technical
Report", 2024, §2.1 and §4.2, with deepseek-ai/DeepSeek-V3's config.json): every parameter
family, the forward pass at 4,096 tokens and ten decode steps over latent attention's
compressed cache, each by name, so a wrong name, shape or weights/attention label fails here.

Shape: 61 layers, d = 7,168, 128 heads; queries through a rank-1,536 latent, keys and values
through a rank-512 latent plus a 64-wide shared RoPE key; per head 128 + 64 query/key dims and
128 value dims; the first 3 layers dense (d_ff 18,432), the other 58 a mixture of 256 routed
experts (8 active) and 1 shared expert, each 2,048 wide and gated; vocabulary 129,280, untied.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

L, DENSE, MOE = 61, 3, 58
D, H, Q_RANK, KV_RANK, ROPE, NOPE, V = 7168, 128, 1536, 512, 64, 128, 128
QK = NOPE + ROPE  # 192
FF, EXPERTS, TOP_K, EXPERT_FF, VOCAB = 18432, 256, 8, 2048, 129280


def test_parameters_by_family(cli):
    c = run(cli, "model", "deepseek-v3", "--seq", 16)["params"]["components"]
    expected = {
        "embed.tokens": VOCAB * D,  # 926,679,040
        "decoder.attn_norm.weight": L * D,
        "decoder.attn.q_a.weight": L * D * Q_RANK,  # 61 · 11,010,048
        "decoder.attn.q_a_norm.weight": L * Q_RANK,
        "decoder.attn.q_b.weight": L * Q_RANK * H * QK,  # 61 · 1,536 · 24,576
        "decoder.attn.kv_a.weight": L * D * (KV_RANK + ROPE),  # 61 · 7,168 · 576
        "decoder.attn.kv_a_norm.weight": L * KV_RANK,
        "decoder.attn.kv_b.weight": L * KV_RANK * H * (NOPE + V),  # 61 · 512 · 32,768
        "decoder.attn.o.weight": L * H * V * D,  # 61 · 16,384 · 7,168
        "decoder.mlp_norm.weight": L * D,
        "decoder.mlp.gate.weight": DENSE * D * FF,
        "decoder.mlp.up.weight": DENSE * D * FF,
        "decoder.mlp.down.weight": DENSE * FF * D,
        "decoder.mlp.router.weight": MOE * D * EXPERTS,
        "decoder.mlp.experts.gate.weight": MOE * EXPERTS * D * EXPERT_FF,
        "decoder.mlp.experts.up.weight": MOE * EXPERTS * D * EXPERT_FF,
        "decoder.mlp.experts.down.weight": MOE * EXPERTS * EXPERT_FF * D,
        "decoder.mlp.shared.gate.weight": MOE * D * EXPERT_FF,
        "decoder.mlp.shared.up.weight": MOE * D * EXPERT_FF,
        "decoder.mlp.shared.down.weight": MOE * EXPERT_FF * D,
        "decoder.final_norm.weight": D,
        "lm_head.weight": D * VOCAB,
    }
    assert c == expected
    assert sum(expected.values()) == 671_026_404_352  # the report's 671B


def _mlp_and_head(tokens: int) -> dict[str, int]:
    """The weight GEMMs after attention for `tokens` tokens: the 3 dense layers' gated MLP,
    and in the 58 MoE layers the router, the top-8 routed experts and the shared expert; then
    the LM head. The same in the forward pass and in decode."""
    return {
        "decoder.mlp.gate": 2 * tokens * D * FF * DENSE,
        "decoder.mlp.up": 2 * tokens * D * FF * DENSE,
        "decoder.mlp.down": 2 * tokens * FF * D * DENSE,
        "decoder.mlp.router": 2 * tokens * D * EXPERTS * MOE,
        "decoder.mlp.experts.gate": 2 * tokens * TOP_K * D * EXPERT_FF * MOE,
        "decoder.mlp.experts.up": 2 * tokens * TOP_K * D * EXPERT_FF * MOE,
        "decoder.mlp.experts.down": 2 * tokens * TOP_K * EXPERT_FF * D * MOE,
        "decoder.mlp.shared.gate": 2 * tokens * D * EXPERT_FF * MOE,
        "decoder.mlp.shared.up": 2 * tokens * D * EXPERT_FF * MOE,
        "decoder.mlp.shared.down": 2 * tokens * EXPERT_FF * D * MOE,
        "lm_head": 2 * tokens * D * VOCAB,
    }


def test_forward_by_name_and_kind(cli):
    s = 4096
    f = run(cli, "model", "deepseek-v3", "--seq", s)["flops"]
    weights = {  # 2·T·in·out per matmul, T = s tokens
        "decoder.attn.q_a": 2 * s * D * Q_RANK * L,
        "decoder.attn.q_b": 2 * s * Q_RANK * H * QK * L,
        "decoder.attn.kv_a": 2 * s * D * (KV_RANK + ROPE) * L,
        "decoder.attn.kv_b": 2 * s * KV_RANK * H * (NOPE + V) * L,
        "decoder.attn.o": 2 * s * H * V * D * L,
    } | _mlp_and_head(s)
    attention = {  # every (query, key) pair (full): QKᵀ over 192 dims, A·V over 128, per head
        "decoder.attn.scores": 2 * s * s * H * QK * L,
        "decoder.attn.av": 2 * s * s * H * V * L,
    }
    assert f["components"] == weights | attention
    assert f["weights"] == sum(weights.values())
    assert f["attention"] == sum(attention.values())


def test_decode_over_the_latent_cache(cli):
    # Ten steps after a 100-token prompt: contexts 101..110, Σ c = 1,055 keys per head and
    # layer. Absorbed decode: the query's no-RoPE part is mapped into the 512-wide latent
    # (q_absorb), scores run over latent + RoPE key (576), A·V over the latent, then v_up.
    t, keys = 10, sum(range(101, 111))
    d = run(cli, "infer", "deepseek-v3", "--prompt", 100, "--gen", t)["decode"]
    weights = {
        "decoder.attn.q_a": 2 * t * D * Q_RANK * L,
        "decoder.attn.q_b": 2 * t * Q_RANK * H * QK * L,
        "decoder.attn.kv_a": 2 * t * D * (KV_RANK + ROPE) * L,
        "decoder.attn.q_absorb": 2 * t * H * NOPE * KV_RANK * L,
        "decoder.attn.v_up": 2 * t * H * KV_RANK * V * L,
        "decoder.attn.o": 2 * t * H * V * D * L,
    } | _mlp_and_head(t)
    attention = {
        "decoder.attn.scores": 2 * H * keys * (KV_RANK + ROPE) * L,  # 9,489,530,880
        "decoder.attn.av": 2 * H * keys * KV_RANK * L,  # 8,435,138,560
    }
    assert d["components"] == weights | attention
    assert (d["weights"], d["attention"]) == (sum(weights.values()), sum(attention.values()))
    # The cache holds 512 + 64 values per token and layer, 2 bytes each (bf16): 70,272 bytes.
    per_token = (KV_RANK + ROPE) * 2 * L
    assert d["bytes_components"]["kv_cache.write"] == t * per_token
    assert d["bytes_components"]["kv_cache.read"] == keys * per_token
