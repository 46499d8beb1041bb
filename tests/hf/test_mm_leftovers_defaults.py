"""A file naming only its model_type counts its config class's defaults (by hand where short)
for the nested text types of Molmo 2, Kosmos-2, Unlimited-OCR and ERNIE 4.5 VL MoE (each
figure is also transformers' own: tests/data/zoo/TYPE.json, `default`); and Kosmos-2's
cross-attention, which flopcalc refuses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.recorded]


def _file(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("model_type, total", [
    # Molmo2TextConfig(): d 4,096, 36 layers, 32 heads of 128 and 8 KV heads, MLP 12,288,
    # vocabulary 151,936 + 128 extra rows, untied head
    # table 152,064·4,096 = 622,854,144; head 151,936·4,096 = 622,329,856; final norm 4,096
    # per layer: q, o 2·4,096² = 33,554,432; k, v 2·4,096·1,024 = 8,388,608; q/k norms per head
    #   128 + 128; MLP 3·4,096·12,288 = 150,994,944; two norms 8,192 → 192,946,432; 36 layers
    #   6,946,071,552
    ("molmo2_text", 8_191_259_648),
    # Kosmos2TextConfig(): d 2,048, 24 layers, MLP 8,192, vocabulary 65,037, tied
    # table 65,037·2,048 = 133,195,776; final LayerNorm 4,096
    # per layer: q, k, v, out_proj with biases 4·(2,048² + 2,048) = 16,785,408; fc1 and fc2
    #   with biases 2·2,048·8,192 + 8,192 + 2,048 = 33,564,672; LayerNorms (gain and bias):
    #   before attention, before the MLP, the inner attention one 3·4,096 and the FFN one
    #   2·8,192 = 28,672 → 50,378,752; 24 layers 1,209,090,048
    ("kosmos_2_text_model", 1_342_289_920),
    # UnlimitedOcrTextConfig(): DeepSeek-OCR 2's text model at d 1,280, 12 layers, the first
    # dense (first_k_dense_replace 1), 64 experts of 896 with 6 routed and 2 shared, vocabulary
    # 129,280, untied: transformers' own count (tests/data/zoo/unlimited_ocr_text.json)
    ("unlimited_ocr_text", 2_934_734_080),
    # Ernie4_5_VLMoeTextConfig(): d 2,560, 28 layers (the first dense), 64 text experts of
    # 1,536 and 64 vision experts of 512 (each set with its router and bias), 6 routed, 2
    # shared, vocabulary 103,424, tied: transformers' own count
    # (tests/data/zoo/ernie4_5_vl_moe_text.json); the vision experts held, not run by text
    ("ernie4_5_vl_moe_text", 28_624_635_776),
])
def test_a_file_naming_only_its_type_counts_the_class_defaults(cli, tmp_path, model_type,
                                                               total):
    assert run(cli, "model", _file(tmp_path, {"model_type": model_type}))["params"][
        "total"] == total


def test_kosmos2_cross_attention_is_refused_by_name(cli, tmp_path):
    r = cli("model", str(_file(tmp_path, {"model_type": "kosmos_2_text_model",
                                          "add_cross_attention": True})))
    assert r.code == 2 and "add_cross_attention" in r.err
    assert len(r.err.strip().splitlines()) == 1
