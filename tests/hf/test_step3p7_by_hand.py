"""Step 3.7's text model (`step3p5`, transformers `models/step3p7/modular_step3p7.py`) counted
by hand: sliding layers with their own query head count (per_layer_config), heads gated by
g_proj, a dense layer and a sigmoid-routed mixture with a shared expert."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = pytest.mark.hand

# Two layers, sliding (4 query heads) then full (2), one KV head 4 wide; layer 0 dense, layer 1
# two experts of 3 (top 1) and a shared expert of 5; untied, no biases.
TINY = dict(model_type="step3p5", vocab_size=10, hidden_size=8, intermediate_size=6,
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=4,
            layer_types=["sliding_attention", "full_attention"], sliding_window=4,
            num_sliding_attention_heads=4, mlp_layer_types=["dense", "sparse"],
            n_routed_experts=2, num_experts_per_tok=1, moe_intermediate_size=3,
            share_expert_dim=5, max_position_embeddings=64, tie_word_embeddings=False)


def test_tiny_step3p5_by_hand(cli, tmp_path):
    # layer 0 (sliding, 4 heads): q 8·4·4 = 128, k 8·4 = 32, v 32, o 128, q_norm + k_norm 8,
    #   g_proj 8·4 = 32 → 360; norms 2·8 = 16; dense MLP 3·8·6 = 144; layer 520
    # layer 1 (full, 2 heads): q 64, k 32, v 32, o 64, norms 8, g_proj 16 → 216; norms 16;
    #   router 2·8 = 16, experts 2·3·(8·3) = 144, shared 3·8·5 = 120 → 280; layer 512
    # model: embeddings 10·8 = 80, head 80, final norm 8; total 520 + 512 + 168 = 1,200
    # (transformers 5.24 builds 1,200 on the meta device)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    doc = run(cli, "model", path, "--seq", 4, "--batch", 1)
    assert doc["params"]["total"] == 1200
    # per token against weights: layer 0 128 + 32 + 32 + 128 + 32 + 144 = 496; layer 1
    # 64 + 32 + 32 + 64 + 16 + router 16 + one expert 72 + shared 120 = 416; head 80 → 992,
    # ×2×4 tokens = 7,936. Scores and AV over all 4×4 pairs (eager attention computes the
    # masked ones too): 4 heads·16·2·(4 + 4) = 1,024 and 2·16·2·(4 + 4) = 512 → 1,536
    assert doc["flops"]["weights"] == 7_936
    assert doc["flops"]["attention"] == 1_536


@pytest.mark.parametrize("extra, words", [
    (dict(per_layer_config={"0": {"head_dim": 8}}), "per_layer_config['0'] overrides 'head_dim'"),
    (dict(num_hidden_layers=3, layer_types=["sliding_attention", "full_attention",
                                             "sliding_attention"],
          mlp_layer_types=["dense"] * 3,
          per_layer_config={"0": {"num_attention_heads": 4}, "2": {"num_attention_heads": 2}}),
     "per_layer_config[0] gives a head count"),
    (dict(per_layer_config={"7": {"num_attention_heads": 4}}),
     "per_layer_config['7'] names no layer"),
])
def test_step3p5_per_layer_config_refusals(cli, tmp_path, extra, words):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **extra}))
    result = cli("model", path)
    assert result.code == 2
    assert words in result.err and len(result.err.strip().splitlines()) == 1


def test_tiny_step3p5_in_the_published_files_legacy_keys(cli, tmp_path):
    # the same model as the published files write it: the sliding layers' heads in
    # attention_other_setting, the KV heads as num_attention_groups, the mixture's layers as
    # moe_layers_enum (transformers 5.24 reads all three and builds the same 1,200)
    legacy = {k: v for k, v in TINY.items()
              if k not in ("num_sliding_attention_heads", "num_key_value_heads",
                           "mlp_layer_types")}
    legacy.update(attention_other_setting={"num_attention_heads": 4}, num_attention_groups=1,
                  moe_layers_enum="1")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(legacy))
    assert run(cli, "model", path, "--seq", 4, "--batch", 1)["params"]["total"] == 1200
