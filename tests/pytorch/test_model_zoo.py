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
    config = sweep.config_of(case.model_type, keys, case.text_config)
    report = sweep.flopcalc_report(sweep.saved(config), seq=8)
    assert report.params.total == sweep.hf_params(case, config)


@pytest.mark.parametrize("case, label, keys", FLOPS,
                         ids=[f"{c.model_type}-{label}" for c, label, _ in FLOPS])
def test_forward_flops(case, label, keys):
    config = sweep.config_of(case.model_type, keys, case.text_config)
    data = sweep.saved(config)
    for seq in case.lengths:
        for batch in (1, 2):
            ours = sweep.flopcalc_report(data, seq=seq, batch=batch).flops.forward
            extra = case.extra_flops(config, batch, seq) if case.extra_flops else 0
            assert ours + extra == sweep.hf_flops(case, config, batch, seq), (seq, batch)


CACHED = [c for c in CASES if c.cache]


@pytest.mark.parametrize("case", CACHED, ids=[c.model_type for c in CACHED])
def test_cache_bytes_after_generate(case):
    # fp32 model: K/V, conv and recurrent states all 4 bytes; HF holds prompt + new − 1 tokens.
    config = sweep.config_of(case.model_type, {**case.fix, **case.shrink}, case.text_config)
    data = sweep.saved(config)
    for batch, prompt, new in ((1, 3, 2), (2, 9, 4)):
        doc = sweep.flopcalc_report(data, seq=0, batch=batch, command="infer", prompt=prompt,
                                    gen=new - 1, kv_dtype="fp32", state_dtype="fp32")
        assert doc.kv_cache.bytes == sweep.hf_generated_cache(case, config, batch, prompt, new)
