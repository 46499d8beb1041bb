"""Mistral Large 4 against transformers: the published-size config
(tests/data/hf/sparse/mistral-large-4.json), flopcalc's parameters against the model transformers
builds from the same file on the meta device; the cache of layers sharing latents after a real
generate."""

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


@pytest.mark.parametrize("variant", [0, 1])
def test_cache_after_generate_keeps_no_latent_for_a_reusing_layer(variant):
    # layers that read an earlier layer's latent keep only their indexer keys (or nothing):
    # flopcalc's bytes against the tensors transformers' cache holds after a real generate
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from tests.sweep.cases_hf_flagship2 import CASES, ML4_VARIANTS

    if "mistral_large4" not in CONFIG_MAPPING_NAMES:
        pytest.skip(f"transformers {transformers.__version__} has no mistral_large4")
    case = next(c for c in CASES if c.model_type == "mistral_large4")
    keys = {**case.shrink, **ML4_VARIANTS[variant]}
    config = sweep.config_of(case.model_type, keys, case.text_config)
    data = sweep.saved(config)
    for batch, prompt, new in ((1, 3, 2), (2, 9, 4)):
        doc = sweep.flopcalc_report(data, seq=0, batch=batch, command="infer", prompt=prompt,
                                    gen=new - 1, kv_dtype="fp32", state_dtype="fp32")
        assert doc.kv_cache.bytes == sweep.hf_generated_cache(case, config, batch, prompt, new)
