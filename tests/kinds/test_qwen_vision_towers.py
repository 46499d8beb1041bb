"""Qwen3-VL's and Qwen3.5's vision towers by hand (models/hf/multimodal.py `_qwen3_vl`,
kinds/vision.py's deepstack mergers and resampled position table): a toy wrapper small enough
that every count is worked in the comment beside it, and the published Qwen3.6-35B-A3B config.

The toy tower (transformers 5.24's Qwen3VLVisionModel): E = 32 wide, 2 blocks, 4 heads, MLP
I = 56, patch 4 x 4 over 2 frames of 3 channels (k = 3·2·4² = 96 values a patch), merge m = 2,
out_hidden_size 64 (the text width), a 16-row position table, deepstack after blocks 0 and 1.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, run

pytestmark = pytest.mark.hand

TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, vocab_size=512,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                 mrope_section=[2, 3, 3]))
VISION = dict(depth=2, hidden_size=32, intermediate_size=56, num_heads=4, patch_size=4,
              temporal_patch_size=2, in_channels=3, spatial_merge_size=2, out_hidden_size=64,
              num_position_embeddings=16)

# patch Conv3d 96·32 + 32 = 3,104; positions 16·32 = 512; per block two LayerNorms 2·2·32 =
# 128, qkv 32·96 + 96 = 3,168, proj 32·32 + 32 = 1,056, fc1 32·56 + 56 = 1,848, fc2 56·32 + 32
# = 1,824: 8,024, x 2 = 16,048; merger LayerNorm(32) 64, fc1 (32·2²)² + 128 = 16,512, fc2 128·64
# + 64 = 8,256: 24,832. Qwen3.5's tower: 3,104 + 512 + 16,048 + 24,832 = 44,496.
QWEN3_5_TOWER = 44_496
# each deepstack merger: LayerNorm(128) 256 + 16,512 + 8,256 = 25,024; two of them 50,048
QWEN3_VL_TOWER = QWEN3_5_TOWER + 2 * 25_024


def vision(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k.startswith("vision.")}


def config(tmp_path, wrapper: str, **vision_keys) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": wrapper, "text_config": TEXT,
                                "vision_config": {**VISION, **vision_keys}}))
    return str(path)


def test_qwen3_vl_tower_params(cli, tmp_path):
    doc = run(cli, "model", config(tmp_path, "qwen3_vl", deepstack_visual_indexes=[0, 1]))
    v = vision(doc["params"]["components"])
    assert v["vision.patch_embed.weight"] == 3072 and v["vision.patch_embed.bias"] == 32
    assert v["vision.positions"] == 512
    assert v["vision.deepstack.1.weight"] == 2 * 128 and v["vision.deepstack.2.weight"] == 2 * 16384
    assert sum(v.values()) == QWEN3_VL_TOWER == 94_544
    # the text model alone (its own type) plus the tower is the wrapper
    alone = tmp_path / "text.json"
    alone.write_text(json.dumps({**TEXT, "model_type": "qwen3_vl_text"}))
    assert doc["params"]["total"] == run(cli, "model", alone)["params"]["total"] + 94_544
    assert "all in params.total" in doc["model"]["notes"]


def test_qwen3_5_tower_params_and_an_older_files_vision_type(cli, tmp_path):
    # Qwen3.5's tower has no deepstack mergers; older Qwen3.5-MoE files name the wrapper's own
    # type in vision_config (Qwen3_5MoeConfig reads it as qwen3_5_moe_vision)
    for kind, vision_type in (("qwen3_5", "qwen3_5_vision"), ("qwen3_5_moe", "qwen3_5_moe")):
        doc = run(cli, "model", config(tmp_path, kind, model_type=vision_type))
        assert sum(vision(doc["params"]["components"]).values()) == QWEN3_5_TOWER


def test_qwen3_vl_one_image(cli, tmp_path):
    doc = run(cli, "model", config(tmp_path, "qwen3_vl", deepstack_visual_indexes=[0, 1]),
              "--seq", 10, "--images", 1, "--image-size", "256x256")
    # 256 x 256 is already a multiple of patch·m = 8 and at the processor's minimum of 65,536
    # pixels: N = 64·64 = 4,096 patches, 1,024 merged tokens. Patch conv 2·4,096·96·32 =
    # 25,165,824; per block qkv 2·4,096·32·96 = 25,165,824, proj 2·4,096·32² = 8,388,608,
    # scores and values 2·4,096²·32 = 1,073,741,824 each, MLP 4·4,096·32·56 = 29,360,128;
    # merger on 1,024 tokens fc1 2·1,024·128·128 = 33,554,432, fc2 2·1,024·128·64 =
    # 16,777,216; each of the 2 deepstack mergers the same
    assert vision(doc["flops"]["components"]) == {
        "vision.patch_embed": 25_165_824, "vision.layers.attn.qkv": 2 * 25_165_824,
        "vision.layers.attn.o": 2 * 8_388_608,
        "vision.layers.attn.scores": 2 * 1_073_741_824,
        "vision.layers.attn.values": 2 * 1_073_741_824,
        "vision.layers.mlp": 2 * 29_360_128,
        "vision.projector.2": 33_554_432, "vision.projector.3": 16_777_216,
        "vision.deepstack.2": 2 * 33_554_432, "vision.deepstack.3": 2 * 16_777_216}
    # 1,024 features + <|vision_start|> and <|vision_end|> join the 10 text tokens
    assert doc["settings"]["seq"] == 10 + 1024 + 2


def test_a_deepstack_layer_the_tower_lacks_is_built_but_never_run(cli, tmp_path):
    # indexes 0, 0, 9 and -1 of 2 blocks (transformers builds a merger for each and runs one
    # where `layer_num in deepstack_visual_indexes`): four mergers' parameters, one's FLOPs
    doc = run(cli, "model",
              config(tmp_path, "qwen3_vl", deepstack_visual_indexes=[0, 0, 9, -1]),
              "--seq", 10, "--images", 1, "--image-size", "256x256")
    assert sum(vision(doc["params"]["components"]).values()) == QWEN3_5_TOWER + 4 * 25_024
    f = doc["flops"]["components"]
    assert (f["vision.deepstack.2"], f["vision.deepstack.3"]) == (33_554_432, 16_777_216)


def test_qwen3_6_35b_a3b_tower(cli):
    # the published config (tests/data/hf/quant/SOURCES.md): 27 blocks of 1,152, MLP 4,304,
    # patch 16 x 16 x 2 frames, 2,304 positions, merger to 2,048: per block 2·2·1,152 +
    # 1,152·3,456 + 3,456 + 1,152² + 1,152 + 1,152·4,304 + 4,304 + 4,304·1,152 + 1,152 =
    # 15,239,504, x 27 = 411,466,608; conv 1,536·1,152 + 1,152 = 1,770,624; positions
    # 2,304·1,152 = 2,654,208; merger 2·1,152 + 4,608² + 4,608 + 4,608·2,048 + 2,048 =
    # 30,679,808: 446,571,248
    doc = run(cli, "model", DATA / "hf" / "quant" / "qwen3.6-35b-a3b-nvfp4.json")
    assert sum(vision(doc["params"]["components"]).values()) == 446_571_248
