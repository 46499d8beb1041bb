"""flopcalc against numbers measured in PyTorch 2.13 and transformers 5.24, without torch: the
`expected.json` files that tests/data/hf/small/generate.py and tests/data/hf/moe/small/
generate.py wrote (tests/pytorch/test_layered_configs.py and tests/pytorch/test_moe.py measure
the same live where torch is installed). Parameters, forward FLOPs (eager attention, eager experts),
visible attention pairs per layer and decode keys per step."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, run

pytestmark = pytest.mark.recorded

DENSE = json.loads((DATA / "hf" / "small" / "expected.json").read_text())
MOE = json.loads((DATA / "hf" / "moe" / "small" / "expected.json").read_text())


def report(cli, path, *args) -> dict:
    return run(cli, "model", path, *args)


def vision_params(doc) -> int:
    """A multimodal config's tower and projector (`vision.*`), which the reference (the text
    model, Gemma3ForCausalLM) does not hold; tests/kinds/test_vision.py checks them."""
    return sum(v for k, v in doc["params"]["components"].items() if k.startswith("vision."))


def untied_t5_head(path) -> int:
    """transformers 5 ties T5's head whatever the config says; an untied one holds V x d more."""
    raw = json.loads(path.read_text())
    if raw.get("model_type") == "t5" and not raw.get("tie_word_embeddings", True):
        return raw["vocab_size"] * raw["d_model"]
    return 0


@pytest.mark.parametrize("name", sorted(DENSE["published"]))
def test_published_dense_configs(cli, name):
    ref = DENSE["published"][name]
    path = DATA / "hf" / f"{name}.json"
    doc = report(cli, path, "--seq", ref["forward"]["seq"])
    assert doc["params"]["total"] - vision_params(doc) == ref["params"] + untied_t5_head(path)
    assert doc["flops"]["forward"] == ref["forward"]["flops"]


@pytest.mark.parametrize("name", sorted(DENSE["small"]))
def test_small_dense_configs(cli, name):
    ref = DENSE["small"][name]
    path = DATA / "hf" / "small" / f"{name}.json"
    assert report(cli, path)["params"]["total"] == ref["params"] + untied_t5_head(path)
    for run in ref["forward"]:
        extra = ["--tgt-seq", run["tgt_seq"]] if run["tgt_seq"] else []
        doc = report(cli, path, "--seq", run["seq"], "--batch", run["batch"], *extra)
        assert doc["flops"]["forward"] == run["flops"], run


@pytest.mark.parametrize("name", sorted(DENSE["small"]))
def test_visible_pairs_of_the_masks(cli, name):
    """--attention causal counts 2·h·(d_qk + d_v) per pair the masks transformers builds leave
    visible, layer by layer (summed here over layers of the same widths)."""
    ref = DENSE["small"][name]
    path = DATA / "hf" / "small" / f"{name}.json"
    raw = json.loads(path.read_text())
    heads = raw.get("num_attention_heads") or raw["num_heads"]
    head = raw.get("head_dim") or raw.get("d_kv") or raw["hidden_size"] // heads
    for run in ref["visible_pairs"]:
        extra = ["--tgt-seq", run["tgt_seq"]] if run["tgt_seq"] else []
        doc = report(cli, path, "--seq", run["seq"], "--attention", "causal", *extra)
        assert doc["flops"]["attention"] == 4 * heads * head * sum(run["pairs"].values())


@pytest.mark.parametrize("name", sorted(n for n, r in DENSE["small"].items() if r.get("decode")))
def test_decode_keys_per_step(cli, name):
    """Each decode step attends over the keys transformers' cache hands the attention."""
    ref = DENSE["small"][name]
    path = DATA / "hf" / "small" / f"{name}.json"
    raw = json.loads(path.read_text())
    heads = raw["num_attention_heads"]
    head = raw.get("head_dim") or raw["hidden_size"] // heads
    for trace in ref["decode"]:
        for step, keys in enumerate(trace["keys"][1:], start=1):
            position = trace["prompt"] + step
            r = cli("infer", str(path), "--prompt", position - 1, "--gen", 1, "-f", "json")
            assert r.json()["decode"]["attention"] == 4 * heads * head * sum(keys)


@pytest.mark.parametrize("name", sorted(MOE["published"]))
def test_published_moe_configs(cli, name):
    ref = MOE["published"][name]
    doc = report(cli, DATA / "hf" / "moe" / name, "--seq", 16)
    assert doc["params"]["total"] == ref["params"]
    assert doc["params"]["active"] == ref["active_params"]
    if "mtp_params_unique" in ref:
        assert doc["params"]["mtp"] == ref["mtp_params_unique"]


@pytest.mark.parametrize("name", sorted(MOE["small"]))
def test_small_moe_configs_with_eager_experts(cli, name):
    ref = MOE["small"][name]
    path = DATA / "hf" / "moe" / "small" / f"{name}.json"
    assert report(cli, path)["params"]["total"] == ref["params"]
    for run in ref["flops"]:
        assert run["default_routed_experts"] == 0  # grouped_mm: invisible to FlopCounterMode
        doc = report(cli, path, "--seq", run["seq"], "--batch", run["batch"])
        assert doc["flops"]["forward"] == run["eager"], run


@pytest.mark.parametrize("name", sorted(MOE["mla_decode"]))
def test_absorbed_mla_decode_step(name):
    from flopcalc.kinds.base import total
    from flopcalc.models.registry import load_model

    spec = load_model(str(DATA / "hf" / "moe" / "small" / f"{name}.json")).spec
    for check in MOE["mla_decode"][name]:
        assert check["max_abs_diff_output"] < 1e-12
        # One step at position c over c keys, of the first layer's latent attention.
        attention = spec.groups()[0].layer.mixers[0]
        ours = attention.decode(spec.d_model, check["batch"], check["context"],
                                check["context"])
        assert total(ours) == check["absorbed"]["counted_total"]
