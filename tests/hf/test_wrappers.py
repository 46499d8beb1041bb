"""Wrappers, their nested text types, multi-token prediction and settings transformers accepts
(flopcalc/models/hf/multimodal.py, gated_deltanet.py, moe.py, hybrid.py, sparse.py).

The fast tests hold hand-worked integers and transformers' own figures (measured on the meta
device with transformers 5.24, quoted); the `torch` ones compare with transformers live
(parameters on the meta device, FLOPs of a shrunk model with FlopCounterMode, eager attention
and eager experts), as the model-zoo sweep does (tests/sweep/)."""

from __future__ import annotations

import json

import pytest

import flopcalc

from tests import sweep
from tests.sweep.cases_sparse import llama4_all_experts

pytestmark = [pytest.mark.hand, pytest.mark.recorded, pytest.mark.behaviour]

DATA = sweep.HERE.parent / "data"


def _model(tmp_path, data: dict, seq: int = 8):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return flopcalc.model(str(path), seq=seq)


# ---------------------------------------------------------------- nested text types alone

LLAMA = dict(vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)


@pytest.mark.parametrize("model_type, qkv_bias", [
    ("qwen2_vl_text", True), ("qwen2_5_vl_text", True), ("glm_ocr_text", True),
    ("granite_docling_text", False), ("qwen3_vl_text", False)])
def test_nested_text_types_import_on_their_own(tmp_path, model_type, qkv_bias):
    report = _model(tmp_path, {"model_type": model_type, **LLAMA, "head_dim": 16,
                               "tie_word_embeddings": False})
    # per layer: q 64·64, k and v 64·32 each, o 64·64 (+ biases 64 + 32 + 32 on q, k, v for the
    # Qwen2 types), gate/up/down 3·64·96, two norms of 64; Qwen3's QK-norms 2·16
    layer = 64 * 64 * 2 + 2 * 64 * 32 + 3 * 64 * 96 + 2 * 64
    layer += 128 if qkv_bias else 0
    layer += 32 if model_type == "qwen3_vl_text" else 0
    # embedding and the untied head 2·100·64, the final norm 64
    assert report.params.total == 2 * layer + 2 * 100 * 64 + 64


def test_nested_text_type_ties_by_its_wrappers_default(tmp_path):
    # Granite-Docling's wrapper ties by default (GraniteDoclingConfig tie_word_embeddings true),
    # Qwen3-VL's does not: without the key, the head is the embedding for the first only
    data = {**LLAMA, "head_dim": 16}
    granite = _model(tmp_path, {"model_type": "granite_docling_text", **data})
    qwen = _model(tmp_path, {"model_type": "qwen3_vl_text", **data})
    assert qwen.params.total - granite.params.total == 100 * 64 + 2 * 2 * 16


# ------------------------------------------------------------------------------ Qwen3.5

def test_qwen3_5_ties_by_the_wrappers_flag_and_names_its_tower(tmp_path):
    # transformers 5.24, Qwen3_5ForConditionalGeneration(Qwen3_5Config(text_config=
    # {tie_word_embeddings: true})) on the meta device: 9,407,453,936 parameters, of which
    # 453,650,672 in model.visual; the head is untied (the top-level flag, false). The tower
    # is counted with the rest (it was left out before, as vLLM does not leave it out).
    report = _model(tmp_path, {"model_type": "qwen3_5",
                               "text_config": {"tie_word_embeddings": True}})
    assert report.params.total == 9_407_453_936
    assert "Qwen3.5 vision tower" in report.model.notes
    assert "all in params.total" in report.model.notes
    tied = _model(tmp_path, {"model_type": "qwen3_5_moe", "tie_word_embeddings": True,
                             "text_config": {}})
    # Qwen3_5MoeForConditionalGeneration, tied: 34,605,702,000 with the same tower
    assert tied.params.total == 34_605_702_000


# ------------------------------------------------------------------- multi-token prediction

def test_qwen3_next_reports_its_mtp_module():
    report = flopcalc.model(str(DATA / "hf" / "gated_deltanet" /
                                "qwen3-next-80b-a3b-instruct.json"), seq=8)
    # one module (the config has no key; the checkpoint ships mtp.*): two norms 2·2,048, fc
    # 2·2,048 x 2,048, a final norm 2,048 and one full-attention layer: gated attention
    # 2,048·(16·256·2) + 2·2,048·(2·256) + 16·256·2,048 + QK-norms 2·256 = 27,263,488, the MoE
    # 512·3·2,048·512 + router 512·2,048 + shared expert 3·2,048·512 + its gate 2,048
    # = 1,614,809,088, two layer norms 2·2,048
    layer = 27_263_488 + 1_614_809_088 + 2 * 2048
    assert report.params.mtp == 2 * 2048 + 2 * 2048 * 2048 + 2048 + layer
    assert report.params.total == 79_674_391_296  # unchanged: MTP is outside the total


def test_qwen3_5_reads_mtp_num_hidden_layers(tmp_path):
    text = {"vocab_size": 97, "hidden_size": 64, "intermediate_size": 96,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
            "linear_key_head_dim": 8, "linear_value_head_dim": 12}
    two = _model(tmp_path, {"model_type": "qwen3_5", "text_config": {
        **text, "mtp_num_hidden_layers": 2}})
    # per module: two norms 2·64, fc 2·64·64, a final norm 64 and the last (full-attention)
    # layer: q (gated) 64·128, k and v 64·32 each, o 64·64, QK-norms 2·16, MLP 3·64·96, two
    # norms 2·64
    layer = 64 * 128 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + 3 * 64 * 96 + 2 * 64
    assert two.params.mtp == 2 * (2 * 64 + 2 * 64 * 64 + 64 + layer)
    # the last layer is a gated DeltaNet layer: the module is named, not counted
    odd = _model(tmp_path, {"model_type": "qwen3_5", "text_config": {
        **text, "full_attention_interval": 3, "mtp_num_hidden_layers": 1}})
    assert odd.params.mtp == 0 and "multi-token-prediction module" in odd.model.notes
    # no key: none (the types embedding Qwen3.5's text model write none and ship none)
    assert _model(tmp_path, {"model_type": "qwen3_5", "text_config": text}).params.mtp == 0


def test_minimax_m2_names_its_declared_mtp_modules(tmp_path):
    data = {"model_type": "minimax_m2", **LLAMA, "head_dim": 16, "num_local_experts": 4,
            "num_experts_per_tok": 2, "use_mtp": True, "num_mtp_modules": 3,
            "mtp_transformer_layers": 1}
    report = _model(tmp_path, data)
    assert report.params.mtp == 0
    assert "3 multi-token-prediction modules" in report.model.notes
    assert "multi-token" not in (_model(tmp_path, {**data, "use_mtp": False}).model.notes or "")


# ------------------------------------------------------ settings transformers accepts (torch)

def _live(model_type: str, keys: dict, shrink: dict, lengths=(5,), extra=None) -> None:
    """flopcalc against transformers: parameters at `keys`, FLOPs at keys + `shrink`."""
    case = sweep.Case(model_type)
    config = sweep.config_of(model_type, keys)
    assert sweep.flopcalc_report(sweep.saved(config), seq=8).params.total == \
        sweep.hf_params(case, config)
    small = sweep.config_of(model_type, {**keys, **shrink})
    data = sweep.saved(small)
    for seq in lengths:
        for batch in (1, 2):
            ours = sweep.flopcalc_report(data, seq=seq, batch=batch).flops.forward
            beyond = extra(small, batch, seq) if extra else 0
            assert ours + beyond == sweep.hf_flops(case, small, batch, seq), (seq, batch)


@pytest.mark.torch
def test_nemotron_h_zero_shared_width_is_the_dense_width():
    pytest.importorskip("transformers")
    # NemotronHMLP(intermediate_size=0) falls back to config.intermediate_size
    _live("nemotron_h", {"moe_shared_expert_intermediate_size": 0},
          dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_attention_heads=4,
               num_key_value_heads=2, head_dim=8, mamba_num_heads=8, mamba_head_dim=8,
               n_groups=2, ssm_state_size=8, chunk_size=8, n_routed_experts=4,
               moe_intermediate_size=16))


@pytest.mark.torch
def test_granite_4_h_zero_shared_width():
    pytest.importorskip("transformers")
    # a 0-wide shared MLP: transformers builds Linear(d, 0) and Linear(0, d)
    _live("granitemoehybrid", {"shared_intermediate_size": 0, "num_hidden_layers": 3,
                               "layer_types": ["mamba", "attention", "mamba"]},
          dict(vocab_size=97, hidden_size=32, intermediate_size=16, num_attention_heads=4,
               num_key_value_heads=2, mamba_n_heads=8, mamba_d_state=8, mamba_n_groups=2,
               mamba_chunk_size=8))


@pytest.mark.torch
@pytest.mark.parametrize("no_rope, kinds", [
    # RoPE layers attending globally beside chunked ones
    ([1, 1, 1, 0], ["chunked_attention", "full_attention", "chunked_attention",
                    "full_attention"]),
    # NoPE layers in chunks
    ([1, 0, 1, 0], ["chunked_attention"] * 4)])
def test_llama4_other_attention_patterns(no_rope, kinds):
    pytest.importorskip("transformers")
    _live("llama4_text", {"num_hidden_layers": 4, "no_rope_layers": no_rope,
                          "layer_types": kinds, "num_local_experts": 2},
          dict(hidden_size=32, intermediate_size=12, intermediate_size_mlp=20,
               num_attention_heads=4, num_key_value_heads=2, head_dim=8,
               attention_chunk_size=4, floor_scale=3, vocab_size=64,
               max_position_embeddings=64),
          lengths=(3, 9), extra=llama4_all_experts)
