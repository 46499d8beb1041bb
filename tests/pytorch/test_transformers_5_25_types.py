"""transformers 5.25's new text-capable types that flopcalc imports (flopcalc/models/hf/moe.py and multimodal.py
and the wrappers in multimodal.py), against transformers 5.25 itself: parameters at the default
config and at variants against the model built on the meta device, forward FLOPs of a shrunk
copy against FlopCounterMode (eager attention, eager experts), as the model-zoo sweep
(tests/sweep/) does for 5.24's types. Skipped where the installed transformers is older: the
sweep's own pin is 5.24, and these classes do not exist there."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests import sweep  # noqa: E402
from tests.sweep import Case  # noqa: E402

_VERSION = tuple(int(p) for p in transformers.__version__.split(".")[:2] if p.isdigit())
pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(_VERSION < (5, 25), reason="needs transformers 5.25 (installed: "
                                 f"{transformers.__version__}); its new model types")]

# GLM-4.5's layers, shrunk: 3 layers (one dense), 4 experts of which 2 routed
_GLM = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_routed_experts=4,
            num_experts_per_tok=2, moe_intermediate_size=24, n_shared_experts=1)
_QWEN3 = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=16)
TIED, UNTIED = {"top": {"tie_word_embeddings": True}}, {"top": {"tie_word_embeddings": False}}

CASES = [
    Case("param2moe", shrink=_GLM, variants=(
        # untied, q/k/v biased (the original configs' `use_qkv_bias`), no QK-norm, two dense
        # layers, three shared experts
        dict(tie_word_embeddings=False, use_qkv_bias=True, use_qk_norm=False,
             first_k_dense_replace=2, n_shared_experts=3),
        dict(num_mtp_layers=1, num_key_value_heads=32))),
    Case("minicpm5_moe", shrink={**_GLM, "mlp_layer_types": ["dense", "sparse", "sparse"]},
         variants=(
             # biases, dense and sparse layers interleaved, two shared experts, tied
             dict(attention_bias=True, num_hidden_layers=4, n_shared_experts=2,
                  mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                  tie_word_embeddings=True),
             dict(num_key_value_heads=32, head_dim=64))),
    # the language model alone (the towers are not read); a tiny tower for the FLOP run, its
    # output as wide as the text model, as the config class checks
    Case("llava_onevision1_5", variants=(TIED, UNTIED), count="text", text_config="text_config",
         shrink={**_QWEN3, "top": {"vision_config": dict(
             depth=2, hidden_size=32, intermediate_size=64, num_heads=4, patch_size=4,
             out_hidden_size=64)}}, lengths=(5,)),
    Case("ovis2_5", variants=(TIED, UNTIED), count="text", text_config="text_config",
         shrink={**_QWEN3, "top": {"vision_config": dict(
             hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             patch_size=4, image_size=16, vocab_size=32)}}, lengths=(5,)),
]



def _configs(case):
    return [("default", dict(case.fix))] + [(f"variant{i}", {**case.fix, **v})
                                            for i, v in enumerate(case.variants)]


# the later types' cases (Ergo, Kolibri 1.1) are kept with their seeded settings in
# test_transformers_5_25_more.py and run here
from tests.pytorch.test_transformers_5_25_more import CASES as LATER  # noqa: E402

PARAMS = [(c, label, keys) for c in CASES + LATER for label, keys in _configs(c)]
IDS = [f"{c.model_type}-{'seeded-' if c.fix else ''}{label}" for c, label, _ in PARAMS]


@pytest.mark.parametrize("case, label, keys", PARAMS, ids=IDS)
def test_params(case, label, keys):
    config = sweep.config_of(case.model_type, keys, case.text_config)
    report = sweep.flopcalc_report(sweep.saved(config), seq=8)
    assert report.params.total == sweep.hf_params(case, config)


@pytest.mark.parametrize("case, label, keys", PARAMS, ids=IDS)
def test_forward_flops(case, label, keys):
    top = {**keys.get("top", {}), **case.shrink.get("top", {})}
    shrunk = {**keys, **case.shrink, **({"top": top} if top else {})}
    config = sweep.config_of(case.model_type, shrunk, case.text_config)
    data = sweep.saved(config)
    for seq in case.lengths:
        for batch in (1, 2):
            ours = sweep.flopcalc_report(data, seq=seq, batch=batch).flops.forward
            assert ours == sweep.hf_flops(case, config, batch, seq), (seq, batch)

def test_param2moe_default_is_transformers_count():
    # Param2MoeConfig() built by Glm4MoeForCausalLM on the meta device: 17,151,124,096
    # parameters (21 layers, 64 experts of 2,048, 2 shared, tied 128,000 x 2,048 embedding)
    config = sweep.config_of("param2moe", {})
    assert sweep.flopcalc_report(sweep.saved(config), seq=8).params.total == 17_151_124_096
