"""A hand-written config.json of the decoders in flopcalc/models/hf/decoders2.py that leaves out
`head_dim` or `num_key_value_heads` counts what transformers builds from it: the config
class's defaults (head_dim 128, 4 to 8 KV heads), not d / heads and multi-head attention. The
expected counts are transformers' own, recorded from the meta-device model at the class's
default config (tests/data/zoo/, tools/zoo_reference.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import sweep

pytestmark = pytest.mark.recorded

ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"
TYPES = ["mellum", "kolibri1", "flint", "lfm3", "laguna", "lara_mini", "bitnet"]


def _default(model_type: str) -> dict:
    doc = json.loads((ZOO / f"{model_type}.json").read_text())
    (entry,) = [e for e in doc["cases"][0]["params"] if e["label"] == "default"]
    return entry


@pytest.mark.parametrize("model_type", TYPES)
@pytest.mark.parametrize("left_out", ["head_dim", "num_key_value_heads"])
def test_a_key_left_out_takes_the_class_default(model_type, left_out):
    entry = _default(model_type)
    config = {k: v for k, v in entry["config"].items() if k != left_out}
    assert sweep.flopcalc_report(config, seq=8).params.total == entry["params"]
