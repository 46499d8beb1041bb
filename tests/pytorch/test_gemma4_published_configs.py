"""Gemma 4's published configs (tests/data/hf/gemma4/) against transformers 5.24 on the meta
device: flopcalc's parameters equal the wrapper's language model and LM head."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests import sweep  # noqa: E402
from tests.conftest import DATA, run  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("name", ["gemma-4-31b", "gemma-4-e2b", "gemma-4-26b-a4b"])
def test_published_gemma4_equals_transformers(cli, name):
    from transformers import AutoConfig

    path = DATA / "hf" / "gemma4" / f"{name}.json"
    raw = json.loads(path.read_text())
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    model = sweep.build(sweep.Case("gemma4", auto="multimodal_lm"), config, "meta")
    assert run(cli, "model", path)["params"]["total"] == sweep.text_params(model)
