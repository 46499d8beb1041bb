"""The Qwen3-Next-80B-A3B preset against transformers: the model built on the meta device from
the published config.json (tests/data/hf/gated_deltanet/, sources in SOURCES.md there), whole
and mixer by mixer."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.conftest import DATA  # noqa: E402

pytestmark = pytest.mark.torch
CONFIG = DATA / "hf" / "gated_deltanet" / "qwen3-next-80b-a3b-instruct.json"


@pytest.fixture(scope="module")
def meta_model():
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = json.loads(CONFIG.read_text())
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def test_preset_total_is_the_meta_models(cli, meta_model):
    r = cli("model", "qwen3-next-80b-a3b", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["params"]["total"] == sum(p.numel() for p in meta_model.parameters()) \
        == 79_674_391_296


def test_mixers_are_the_meta_models(meta_model):
    layers = meta_model.model.layers
    gdn = sum(p.numel() for p in layers[0].linear_attn.parameters())
    attn = sum(p.numel() for p in layers[3].self_attn.parameters())
    assert (gdn, attn) == (33_718_464, 27_263_488)
    # The recurrent state one sequence keeps per gated DeltaNet layer: H_v·d_k·d_v.
    mixer = layers[0].linear_attn
    assert mixer.num_v_heads * mixer.head_k_dim * mixer.head_v_dim == 524_288
