"""Two importer rules the model-zoo sweep cannot reach (its files are saved by transformers,
every key resolved), each checked on a hand-written config.json mapping (the sweep,
tests/sweep/cases_core.py, checks both figures against transformers)."""

from __future__ import annotations

import pytest

from flopcalc.models.hf import from_hf_dict

pytestmark = [pytest.mark.published, pytest.mark.behaviour]

LLAMA = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, vocab_size=128, max_position_embeddings=64)


def test_perception_lm_ties_as_its_text_config_when_the_file_leaves_the_flag_out():
    # PerceptionLMConfig.tie_word_embeddings is None by default; __post_init__ takes the text
    # config's: a file without the top-level flag ties as its language model does.
    text = dict(LLAMA, tie_word_embeddings=True)
    assert from_hf_dict({"model_type": "perception_lm", "text_config": text},
                        "x")["tie_embeddings"] is True
    assert from_hf_dict({"model_type": "perception_lm", "text_config": text,
                         "tie_word_embeddings": False}, "x")["tie_embeddings"] is False
    assert from_hf_dict({"model_type": "perception_lm", "text_config": LLAMA},
                        "x")["tie_embeddings"] is False


def test_deepseek_v3_with_every_layer_dense_has_no_experts():
    # DeepseekV3DecoderLayer: experts from first_k_dense_replace on, so none when it reaches
    # num_hidden_layers (a dense MLP of intermediate_size on every layer).
    mla = dict(LLAMA, model_type="deepseek_v3", q_lora_rank=16, kv_lora_rank=12,
               qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, n_routed_experts=4,
               num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1)
    assert "moe" not in from_hf_dict({**mla, "first_k_dense_replace": 2}, "x")
    assert from_hf_dict({**mla, "first_k_dense_replace": 1}, "x")["moe"]["first_dense"] == 1


def test_deepseek_v3_keys_left_out_take_the_class_defaults(cli, tmp_path):
    """A deepseek_v3 file naming only its sizes: the rest is DeepseekV3Config's defaults
    (first_k_dense_replace 3, one shared expert, q_lora_rank 1,536, ...), so it counts as the
    published DeepSeek-V3 (671,026,404,352 parameters, the preset's figure)."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "deepseek_v3"}))
    r = cli("model", str(path), "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["params"]["total"] == 671_026_404_352
