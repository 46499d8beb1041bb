"""The Mamba-1 presets against transformers 5 on the meta device: the published config.json of
each (tests/data/hf/mamba1/) builds a model whose parameter count is the preset's total and the
import's; Falcon-Mamba-7B's full-width forward, run on meta tensors in training mode without a
cache, counts what flopcalc counts (the Hugging Face PyTorch path: no mamba_ssm kernels here).
Small configs of every Mamba-1 model type run for real in tests/sweep/cases_mamba1.py."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import flopcalc  # noqa: E402

from tests.conftest import DATA  # noqa: E402

pytestmark = pytest.mark.torch

PUBLISHED = {"jamba-1.5-mini": DATA / "hf" / "mamba1" / "jamba-1.5-mini.json",
             "falcon-mamba-7b": DATA / "hf" / "mamba1" / "falcon-mamba-7b.json"}


def build_meta(path):
    import contextlib
    import io
    import warnings

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = json.loads(path.read_text())
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    with torch.device("meta"), warnings.catch_warnings(), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return AutoModelForCausalLM.from_config(config, attn_implementation="eager")


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_total_is_the_published_model_on_the_meta_device(name):
    total = sum(p.numel() for p in build_meta(PUBLISHED[name]).parameters())
    assert flopcalc.model(name).params.total == total
    assert flopcalc.model(str(PUBLISHED[name])).params.total == total


@pytest.mark.parametrize("seq, batch", [(1, 1), (3, 2), (6, 1)])
def test_falcon_mamba_7b_forward_at_full_width(seq, batch):
    import contextlib
    import io
    import warnings

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_meta(PUBLISHED["falcon-mamba-7b"]).train()
    ids = torch.zeros(batch, seq, dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as counter, warnings.catch_warnings(), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        model(input_ids=ids, use_cache=False)
    assert flopcalc.model("falcon-mamba-7b", seq=seq, batch=batch).flops.forward == \
        counter.get_total_flops()
