"""The Mamba-2 hybrids' published configs against transformers on the meta device: parameters
of `AutoModelForCausalLM.from_config` equal flopcalc's import of the same file and the preset
(tests/data/hf/mamba2_hybrids/SOURCES.md). The model-zoo sweep (tests/sweep/cases_hybrid2.py)
checks every type's forward FLOPs and cache bytes on small copies."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.conftest import DATA, run  # noqa: E402

pytestmark = pytest.mark.torch

HYBRIDS = DATA / "hf" / "mamba2_hybrids"
PUBLISHED = {"nemotron-h-8b-base-8k.json": "nemotron-h-8b",
             "granite-4.0-h-small.json": "granite-4.0-h-small",
             "falcon-h1-7b.json": "falcon-h1-7b"}


def meta_params(config) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def total(cli, *args) -> int:
    return run(cli, "model", *args)["params"]["total"]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_config_on_the_meta_device(cli, name):
    from transformers import AutoConfig

    data = json.loads((HYBRIDS / name).read_text())
    config = AutoConfig.for_model(data.pop("model_type"), **data)
    expected = meta_params(config)
    assert total(cli, HYBRIDS / name) == expected
    assert total(cli, PUBLISHED[name]) == expected


def test_mamba2_2_7b_from_its_mamba_ssm_config(cli):
    """state-spaces/mamba2-2.7b is in mamba_ssm's format: mapped to Mamba2Config with
    mamba_ssm's Mamba2 defaults (d_state 128, d_conv 4, expand 2, headdim 64, ngroups 1,
    chunk_size 256, conv bias, no projection bias) and the vocabulary padded to a multiple of
    pad_vocab_size_multiple, as MambaLMHeadModel pads it."""
    from transformers import AutoConfig

    s = json.loads((HYBRIDS / "mamba2-2.7b.json").read_text())
    assert s["ssm_cfg"] == {"layer": "Mamba2"} and not s["attn_layer_idx"]
    assert s["d_intermediate"] == 0  # no MLP
    pad = s["pad_vocab_size_multiple"]
    config = AutoConfig.for_model(
        "mamba2", hidden_size=s["d_model"], num_hidden_layers=s["n_layer"],
        vocab_size=-(-s["vocab_size"] // pad) * pad, expand=2, head_dim=64,
        num_heads=2 * s["d_model"] // 64, state_size=128, n_groups=1, conv_kernel=4,
        chunk_size=256, use_bias=False, use_conv_bias=True,
        tie_word_embeddings=s["tie_embeddings"])
    assert total(cli, "mamba2-2.7b") == meta_params(config) == 2_702_599_680
