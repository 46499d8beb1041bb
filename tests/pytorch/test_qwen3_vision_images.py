"""Qwen3-VL's and Qwen3.5's vision towers on images against FlopCounterMode, end to end (as
tests/pytorch/test_vision.py does for the other towers): a tiny wrapper runs on images laid out
as flopcalc's Qwen processor rule places them (<|vision_start|>, t·h·w/m² features,
<|vision_end|>), and `flopcalc model CONFIG --seq TEXT --images N --image-size HxW` must equal
the whole forward: the text model at text + image tokens, the patch convolution, the blocks,
the merger and (Qwen3-VL) each deepstack merger that runs. The position table's bilinear
resampling and the deepstack additions into the text model are element-wise (no FLOPs)."""

from __future__ import annotations

import pytest

from tests.pytorch.test_vision import QWEN_IDS, check, qwen_inputs, saved, tower

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.torch

TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, vocab_size=512,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                 mrope_section=[2, 3, 3]))
# 3 blocks; deepstack after block 0 twice (only the first merger runs) and after a block the
# tower does not have (built, never run)
VISION = dict(depth=3, hidden_size=32, intermediate_size=56, num_heads=4, patch_size=4,
              spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64,
              num_position_embeddings=16)


@pytest.mark.parametrize("size, images", [((64, 96), 1), ((60, 90), 2)])
def test_qwen3_vl(size, images):
    config = transformers.Qwen3VLConfig(
        vision_config=dict(VISION, deepstack_visual_indexes=[0, 0, 5, 2]), text_config=TEXT,
        **QWEN_IDS)
    path = saved(config)
    t = tower(path)
    assert t.deepstack_runs == 2
    check(config, qwen_inputs(config, t, size, images), images, size, path)


@pytest.mark.parametrize("size, images", [((64, 96), 1), ((100, 36), 2)])
def test_qwen3_5(size, images):
    config = transformers.Qwen3_5Config(
        vision_config=VISION, text_config=dict(TEXT, num_hidden_layers=4), **QWEN_IDS)
    path = saved(config)
    t = tower(path)
    check(config, qwen_inputs(config, t, size, images), images, size, path)
