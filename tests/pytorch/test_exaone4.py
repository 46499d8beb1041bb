"""Against transformers 5.24: EXAONE 4 with `sliding_window_pattern` "LLLG" beside its
`layer_types` (as EXAONE-4.0-32B's published config.json writes both), and with the pattern
alone, counted as transformers builds and runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

pytestmark = pytest.mark.torch

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "hf" / "exaone-4.0-32b.json"
SEQ, BATCH = 12, 2


def _small(layers: int, **more):
    """EXAONE-4.0-32B's keys at a small width (the counts scale; the pattern keys are its)."""
    keys = json.loads(PUBLISHED.read_text())
    for k in ("architectures", "model_type", "transformers_version", "torch_dtype"):
        keys.pop(k)
    keys.update(hidden_size=64, intermediate_size=96, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, num_hidden_layers=layers, vocab_size=256,
                max_position_embeddings=128, sliding_window=5,
                layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * (layers // 4))
    keys.update(more)
    return keys


@pytest.mark.parametrize("keys", [_small(8)], ids=["layer_types+LLLG"])
def test_exaone4_counts_equal_transformers(keys):
    from tests import sweep

    config = sweep.config_of("exaone4", keys)
    data = sweep.saved(config)
    assert data["sliding_window_pattern"] == "LLLG"
    case = sweep.Case("exaone4", auto="causal_lm")
    report = sweep.flopcalc_report(data, seq=SEQ, batch=BATCH)
    assert report.params.total == sweep.hf_params(case, config)
    assert report.flops.forward == sweep.hf_flops(case, config, BATCH, SEQ)
