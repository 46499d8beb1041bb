"""The model-zoo sweep against transformers (docs/validation.md, `tests/sweep/`):
for every supported model type, parameters at the default config and at its variants equal the
model built on the meta device; forward FLOPs of a shrunk copy equal FlopCounterMode's."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests import sweep  # noqa: E402

pytestmark = pytest.mark.torch
CASES = sweep.cases()


def configs(case: sweep.Case) -> list[tuple[str, dict]]:
    """(label, keys) of the default config and of each variant."""
    return [("default", dict(case.fix))] + [(f"variant{i}", {**case.fix, **v})
                                            for i, v in enumerate(case.variants)]


PARAMS = [(c, label, keys) for c in CASES for label, keys in configs(c)]
FLOPS = [(c, label, {**keys, **c.shrink}) for c in CASES for label, keys in configs(c)]


@pytest.mark.parametrize("case, label, keys", PARAMS,
                         ids=[f"{c.model_type}-{label}" for c, label, _ in PARAMS])
def test_params(case, label, keys):
    sweep.check_params(case, keys)


@pytest.mark.parametrize("case, label, keys", FLOPS,
                         ids=[f"{c.model_type}-{label}" for c, label, _ in FLOPS])
def test_forward_flops(case, label, keys):
    sweep.check_flops(case, keys)


CACHED = [c for c in CASES if c.cache]


@pytest.mark.parametrize("case", CACHED, ids=[c.model_type for c in CACHED])
def test_cache_bytes_after_generate(case):
    sweep.check_cache(case)
