"""Against transformers 5.24: every alias a config class declares (`attribute_map`) is read
under both names (each importer module's ALIASES), and the importer-bug fixtures of
tests/data/hf/zoo/ are what save_pretrained writes, counted as transformers builds them."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from flopcalc.models.hf import _aliases, aliases, dense, dense_layernorm, encoders, moe  # noqa: E402

ALIASES = _aliases()

pytestmark = pytest.mark.torch
# The families whose converters read aliases through ALIASES (other modules read the names
# their types' files use themselves).
TYPES = sorted({t for m in (aliases, dense, dense_layernorm, encoders, moe) for t in m.CONVERTERS})


@pytest.mark.parametrize("model_type", TYPES)
def test_attribute_map_is_read(model_type):
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        pytest.skip(f"{model_type} is not a transformers model_type")
    declared = dict(getattr(CONFIG_MAPPING[model_type], "attribute_map", {}) or {})
    assert declared.items() <= ALIASES.get(model_type, {}).items(), declared


def _bugs():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "hf" / "zoo" / "generate.py"
    spec = importlib.util.spec_from_file_location("zoo_generate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUGS = _bugs()


@pytest.mark.parametrize("name", sorted(BUGS.KEYS))
def test_bug_fixtures_are_what_transformers_writes_and_counts(name):
    import json

    from tests import sweep

    model_type, keys = BUGS.KEYS[name]
    keys = {k: v for k, v in keys.items() if v is not None}
    config = sweep.config_of(model_type, keys)
    data = sweep.saved(config)
    data.pop("transformers_version", None)
    assert data == json.loads((BUGS.HERE / f"{name}.json").read_text())
    case = sweep.Case(model_type, auto="masked_lm" if model_type == "bert" else "causal_lm")
    report = sweep.flopcalc_report(data, seq=BUGS.SEQ, batch=BUGS.BATCH)
    assert report.params.total == sweep.hf_params(case, config)
    assert report.flops.forward == sweep.hf_flops(case, config, BUGS.BATCH, BUGS.SEQ)
