"""Families people deploy that flopcalc once refused (tests/sweep/cases_deployed.py), checked
against transformers' own model: parameters on the meta device at the default config and at
each variant, forward FLOPs of a shrunk copy with FlopCounterMode (eager attention, eager
experts), and, where the case asks, the cache bytes after a real generate. The same checks as
tests/test_torch_sweep.py, for these cases alone."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.sweep import cases_deployed  # noqa: E402
from tests.pytorch.test_model_zoo import configs  # noqa: E402
from tests import sweep  # noqa: E402

pytestmark = pytest.mark.torch


def _known(model_type: str) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return model_type in CONFIG_MAPPING_NAMES


CASES = cases_deployed.CASES
PARAMS = [(c, label, keys) for c in CASES for label, keys in configs(c)]
FLOPS = [(c, label, {**keys, **c.shrink}) for c in CASES for label, keys in configs(c)]


@pytest.mark.parametrize("case, label, keys", PARAMS,
                         ids=[f"{c.model_type}-{label}" for c, label, _ in PARAMS])
def test_params_equal_transformers(case, label, keys):
    if not _known(case.model_type):
        pytest.skip(f"transformers {transformers.__version__} has no {case.model_type}")
    sweep.check_params(case, keys)


@pytest.mark.parametrize("case, label, keys", FLOPS,
                         ids=[f"{c.model_type}-{label}" for c, label, _ in FLOPS])
def test_forward_flops_equal_flop_counter(case, label, keys):
    if not _known(case.model_type):
        pytest.skip(f"transformers {transformers.__version__} has no {case.model_type}")
    sweep.check_flops(case, keys)


CACHED = [c for c in CASES if c.cache]


@pytest.mark.parametrize("case", CACHED, ids=[c.model_type for c in CACHED])
def test_cache_bytes_after_generate(case):
    if not _known(case.model_type):
        pytest.skip(f"transformers {transformers.__version__} has no {case.model_type}")
    sweep.check_cache(case)


def test_glm_moe_dsa_shared_layers_keep_no_indexer_keys():
    """GLM-5's shared layers keep the latent and rotary key only: the bytes of transformers'
    cache after a real generate, with two of four layers reusing the selection before them."""
    if not _known("glm_moe_dsa"):
        pytest.skip(f"transformers {transformers.__version__} has no glm_moe_dsa")
    case = next(c for c in CASES if c.model_type == "glm_moe_dsa")
    keys = {**case.shrink, "indexer_types": ["full", "shared", "full", "shared"]}
    config = sweep.config_of("glm_moe_dsa", keys)
    data = sweep.saved(config)
    for batch, prompt, new in ((1, 3, 2), (2, 9, 4)):
        doc = sweep.flopcalc_report(data, seq=0, batch=batch, command="infer", prompt=prompt,
                                    gen=new - 1, kv_dtype="fp32", state_dtype="fp32")
        assert doc.kv_cache.bytes == sweep.hf_generated_cache(case, config, batch, prompt, new)


def test_mimo_v2_flash_sliding_layers_cache_twice_the_heads():
    """MiMo-V2-Flash's sliding layers keep twice the full layers' key/value heads: the bytes of
    transformers' cache after a real generate, with a window of 16 (longer than the 12 tokens
    kept: transformers holds window − 1 tokens of a sliding layer, flopcalc the window)."""
    if not _known("mimo_v2_flash"):
        pytest.skip(f"transformers {transformers.__version__} has no mimo_v2_flash")
    case = next(c for c in CASES if c.model_type == "mimo_v2_flash")
    config = sweep.config_of("mimo_v2_flash", {**case.shrink, "sliding_window": 16})
    data = sweep.saved(config)
    for batch, prompt, new in ((1, 3, 2), (2, 9, 4)):
        doc = sweep.flopcalc_report(data, seq=0, batch=batch, command="infer", prompt=prompt,
                                    gen=new - 1, kv_dtype="fp32", state_dtype="fp32")
        assert doc.kv_cache.bytes == sweep.hf_generated_cache(case, config, batch, prompt, new)


def test_rwkv_state_bytes_equal_transformers_state():
    """RWKV keeps two token-shift vectors and the WKV numerator, denominator and maximum per
    layer and sequence: the bytes of the `state` list transformers returns with use_cache
    (fp32 model; its WKV states are hidden_size wide, so time mixing is d wide here)."""
    import torch

    if not _known("rwkv"):
        pytest.skip(f"transformers {transformers.__version__} has no rwkv")
    case = next(c for c in CASES if c.model_type == "rwkv")
    config = sweep.config_of("rwkv", {**case.shrink, "attention_hidden_size": 32})
    data = sweep.saved(config)
    model = sweep.build(case, config, "cpu").eval()
    for batch, prompt in ((1, 3), (2, 9)):
        ids = torch.randint(0, config.vocab_size, (batch, prompt))
        with torch.no_grad():
            state = model(input_ids=ids, use_cache=True).state
        hf = sum(t.numel() * t.element_size() for t in state)
        doc = sweep.flopcalc_report(data, seq=0, batch=batch, command="infer", prompt=prompt,
                                    gen=1, kv_dtype="fp32", state_dtype="fp32")
        assert doc.kv_cache.bytes == hf
