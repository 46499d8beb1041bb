"""Mixtures of experts and latent attention against transformers 5 and PyTorch 2.13.

Small configs run for real on CPU with eager attention and eager experts (transformers 5's
default `grouped_mm` expert kernel is invisible to FlopCounterMode: it counts 0; the test below
shows it), shared experts, dense-first layers, `mlp_only_layers`, `q_lora_rank` null and value
heads narrower than query heads, at two lengths and batch 1 and 3; the published configs'
parameters on the meta device; and a weight-absorbed MLA decode step written plainly in
tests/hfref_moe.py that returns HF's attention output (to 1e-12) and whose FlopCounterMode count
equals flopcalc's decode attention.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests import hfref_moe  # noqa: E402
from tests.conftest import DATA, run  # noqa: E402

pytestmark = pytest.mark.torch

SMALL = sorted(p for p in (DATA / "hf" / "moe" / "small").glob("*.json")
               if p.name != "expected.json")
PUBLISHED = sorted((DATA / "hf" / "moe").glob("*.json"))


def report(cli, path, *args) -> dict:
    return run(cli, "model", path, *args)


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_params(cli, path):
    model = hfref_moe.build(hfref_moe.load_config(path), "cpu")
    assert report(cli, path, "--seq", 8)["params"]["total"] == hfref_moe.param_count(model)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("seq", [5, 12])
@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_forward_flops_with_eager_experts(cli, path, seq, batch):
    ref = hfref_moe.forward_flops(hfref_moe.load_config(path), seq, batch)
    assert all(r["k_distinct"] for r in ref["routing"].values())
    assert report(cli, path, "--seq", seq, "--batch", batch)["flops"]["forward"] == ref["total"]


def test_the_default_expert_kernel_counts_nothing(cli):
    path = DATA / "hf" / "moe" / "small" / "mixtral.json"
    eager = hfref_moe.forward_flops(hfref_moe.load_config(path), 5, 1)
    default = hfref_moe.forward_flops(hfref_moe.load_config(path), 5, 1, experts=None)
    assert default["implementation"] == "grouped_mm"
    assert all(layer["routed_experts"] == 0 for layer in default["layers"])
    assert eager["total"] > default["total"]


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.stem)
def test_published_params_on_the_meta_device(cli, path):
    config = hfref_moe.load_config(path)
    total = hfref_moe.param_count(hfref_moe.build(config, "meta"))
    doc = report(cli, path, "--seq", 16)
    assert doc["params"]["total"] == total
    assert doc["params"]["active"] == hfref_moe.active_params(config, total)


@pytest.mark.parametrize("name", ["deepseek_v3-no-q-lora", "deepseek_v3-q-lora"])
@pytest.mark.parametrize("context, batch", [(7, 1), (16, 2)])
def test_absorbed_mla_decode(cli, name, context, batch):
    """The absorbed module reproduces HF's attention output, and its counted FLOPs are
    flopcalc's decode attention for one layer (a step at position c = context)."""
    from flopcalc.kinds.base import total
    from flopcalc.models.registry import load_model

    path = DATA / "hf" / "moe" / "small" / f"{name}.json"
    check = hfref_moe.mla_decode_check(hfref_moe.load_config(path), context, batch)
    assert check["max_abs_diff_output"] < 1e-12 * max(1.0, check["max_abs_output"])
    spec = load_model(str(path)).spec
    ours = spec.groups()[0].layer.mixers[0].decode(spec.d_model, batch, context, context)
    assert total(ours) == check["absorbed"]["counted_total"]
    # The cache is the latent: kv_lora_rank + qk_rope_head_dim values per token and layer.
    doc = cli("infer", str(path), "--prompt", context - 1, "--gen", 1, "--kv-dtype", "fp32",
              "-f", "json").json()
    config = hfref_moe.load_config(path)
    per_token = config.num_hidden_layers * (config.kv_lora_rank + config.qk_rope_head_dim) * 4
    assert doc["kv_cache"]["bytes_per_token"] == per_token
