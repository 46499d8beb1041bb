"""The importers of flopcalc/models/hf/moe.py: aliases read under either name, the layer
patterns their config classes derive, and what they refuse, in one line. (Their counts against
transformers are in tests/sweep/cases_moe_zoo.py.)"""

from __future__ import annotations

import json

import pytest

import flopcalc
from flopcalc.errors import FlopcalcError
from flopcalc.models.hf import from_hf_dict, moe

pytestmark = pytest.mark.behaviour

SMALL = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=64, max_position_embeddings=64)


def convert(data: dict) -> dict:
    return from_hf_dict(data, "config.json")


def counts(tmp_path, data: dict) -> tuple[int, int]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    r = flopcalc.model(str(path), seq=6, batch=2)
    return r.params.total, r.flops.forward


def refused(data: dict, *words: str) -> None:
    with pytest.raises(FlopcalcError) as e:
        convert(data)
    message = str(e.value)
    assert "\n" not in message and all(w in message for w in words), message


@pytest.mark.parametrize("model_type, canonical, alias", [
    ("ernie4_5_moe", {"moe_num_experts": 4, "moe_k": 2}, {"num_experts": 4,
                                                           "num_experts_per_tok": 2}),
    ("hunyuan_v1_moe", {"num_experts": 4, "moe_topk": 2}, {"num_local_experts": 4,
                                                            "num_experts_per_tok": 2}),
    ("minimax_m2", {"num_local_experts": 4, "num_experts_per_tok": 2},
     {"num_experts": 4, "num_experts_per_tok": 2}),
    ("dots1", {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
               "moe_intermediate_size": 16},
     {"num_local_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
      "moe_intermediate_size": 16}),
    ("glm4_moe", {"n_routed_experts": 4, "num_nextn_predict_layers": 0, "num_experts_per_tok": 2},
     {"num_local_experts": 4, "num_mtp_layers": 0, "num_experts_per_tok": 2}),
])
def test_aliases_read_as_the_canonical_names(tmp_path, model_type, canonical, alias):
    base = {"model_type": model_type, **SMALL}
    assert counts(tmp_path, {**base, **canonical}) == counts(tmp_path, {**base, **alias})


def test_dbrx_and_longcat_aliases(tmp_path):
    dbrx = {"model_type": "dbrx", "d_model": 32, "n_heads": 4, "n_layers": 2,
            "max_seq_len": 64, "vocab_size": 64, "attn_config": {"kv_n_heads": 2},
            "ffn_config": {"ffn_hidden_size": 16, "moe_num_experts": 4, "moe_top_k": 2}}
    renamed = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
               "max_position_embeddings": 64}
    short = {k: v for k, v in dbrx.items() if k not in ("d_model", "n_heads", "n_layers",
                                                         "max_seq_len")}
    assert counts(tmp_path, dbrx) == counts(tmp_path, {**short, **renamed})
    longcat = {"model_type": "longcat_flash", "hidden_size": 32, "num_layers": 1,
               "num_attention_heads": 4, "vocab_size": 64, "q_lora_rank": 16,
               "kv_lora_rank": 12, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4,
               "v_head_dim": 6, "n_routed_experts": 4, "zero_expert_num": 2}
    assert counts(tmp_path, {**longcat, "ffn_hidden_size": 48, "expert_ffn_hidden_size": 16,
                             "moe_topk": 3}) == \
        counts(tmp_path, {**longcat, "intermediate_size": 48, "moe_intermediate_size": 16,
                          "num_experts_per_tok": 3})


def test_layer_patterns():
    # ERNIE 4.5: MoE where (i + 1) % interval == 0 and start ≤ i ≤ end (-1: the last layer).
    raw = convert({"model_type": "ernie4_5_moe", **SMALL, "num_hidden_layers": 6,
                   "moe_layer_start_index": 1, "moe_layer_end_index": -1,
                   "moe_layer_interval": 2})
    assert raw["moe"]["dense_layers"] == [0, 2, 4]
    # No layer in range: a dense model.
    raw = convert({"model_type": "ernie4_5_moe", **SMALL, "moe_layer_start_index": 9})
    assert "moe" not in raw
    # dots.llm1 without layer_types: windows from max_window_layers on.
    raw = convert({"model_type": "dots1", **SMALL, "n_routed_experts": 4,
                   "num_experts_per_tok": 2, "n_shared_experts": 1, "sliding_window": 4,
                   "max_window_layers": 2})
    assert (raw["layer_types"], raw["sliding_window"]) == (["full", "full", "window",
                                                            "window"], 4)
    # LongCat-Flash: 2 flopcalc layers per layer, the mixture on the even ones.
    raw = convert({"model_type": "longcat_flash", "num_layers": 3})
    assert (raw["n_layers"], raw["moe"]["dense_layers"]) == (6, [1, 3, 5])
    # PhiMoE's sparsemixer always takes 2; JetMoE's heads are KV heads × top-k.
    assert convert({"model_type": "phimoe", **SMALL, "num_experts_per_tok": 1}
                   )["moe"]["top_k"] == 2
    raw = convert({"model_type": "jetmoe", "num_key_value_heads": 3, "num_experts_per_tok": 2})
    assert (raw["n_heads"], raw["n_kv_heads"]) == (6, 3)


def test_refused_in_one_line():
    refused({"model_type": "hunyuan_v1_moe", **SMALL, "moe_topk": [2, 1, 2, 2]},
            "'moe_topk' differs between layers")
    refused({"model_type": "hunyuan_v1_moe", **SMALL, "num_experts": [4, 4, 4, 4]},
            "per-layer num_experts")
    refused({"model_type": "deepseek_v2", **SMALL, "num_experts_per_tok": 2,
             "n_shared_experts": 0, "mlp_bias": True}, "n_shared_experts 0 with mlp_bias")
    refused({"model_type": "longcat_flash", "n_routed_experts": 0, "num_layers": 2},
            "n_routed_experts 0")
    refused({"model_type": "ernie4_5_moe", **SMALL, "moe_layer_interval": 0},
            "moe_layer_interval")
    refused({"model_type": "dbrx", "attn_config": [1]}, "'attn_config' must be a mapping")
    refused({"model_type": "dots1", **SMALL}, "missing 'n_routed_experts'")


def test_zero_expert_expectation_must_be_whole(tmp_path):
    # 3 picks of 4 + 1: 12/5 computing experts per token is not whole.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "longcat_flash", "num_layers": 1,
                                "n_routed_experts": 4, "zero_expert_num": 1, "moe_topk": 3}))
    with pytest.raises(FlopcalcError, match="must be whole"):
        flopcalc.model(str(path))
