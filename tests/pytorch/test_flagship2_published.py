"""Published-size configs of the flagship families imported since transformers 5.24
(tests/data/hf/sparse/mistral-large-4.json): flopcalc's parameters against the model transformers
builds from the same file on the meta device."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests import sweep  # noqa: E402
from tests.conftest import DATA  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("name, model_type", [("mistral-large-4", "mistral_large4")])
def test_published_config_counts_as_transformers_builds_it(name, model_type):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if model_type not in CONFIG_MAPPING_NAMES:
        pytest.skip(f"transformers {transformers.__version__} has no {model_type}")
    data = json.loads((DATA / "hf" / "sparse" / f"{name}.json").read_text())
    config = transformers.AutoConfig.for_model(
        model_type, **{k: v for k, v in data.items() if k != "model_type"})
    case = sweep.Case(model_type, auto="image_text")
    assert sweep.flopcalc_report(data, seq=8).params.total == sweep.hf_params(case, config)
