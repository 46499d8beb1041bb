"""DeepSeek-V3.2 and Llama 4 against transformers 5.24 on the meta device: the presets' totals
are the parameters of the models built from the published configs (tests/data/hf/sparse/,
SOURCES.md there), and the configs import to the presets' figures. The forward FLOPs, decode
cache and variants are in the sweep (tests/sweep/cases_sparse.py)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.conftest import DATA, run  # noqa: E402

pytestmark = pytest.mark.torch
SPARSE = DATA / "hf" / "sparse"


def meta_params(config) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def deepseek_v32_config():
    from transformers import AutoConfig

    raw = json.loads((SPARSE / "deepseek-v3.2.json").read_text())
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


def llama4_text_config(name: str):
    """The text model of a published Llama 4 config, as transformers builds Llama4ForCausalLM:
    its strict 5.24 config rejects Scout's "attn_temperature_tuning": 4, which the model only
    tests for truth, so it is read as true."""
    from transformers import Llama4TextConfig

    raw = json.loads((SPARSE / f"{name}.json").read_text())["text_config"]
    raw.pop("model_type")
    if "attn_temperature_tuning" in raw:
        raw["attn_temperature_tuning"] = bool(raw["attn_temperature_tuning"])
    return Llama4TextConfig(**raw)


def report(cli, model: str) -> dict:
    return run(cli, "model", model, "--seq", 16)


def test_deepseek_v32_preset_is_the_published_model(cli):
    config = deepseek_v32_config()
    total = meta_params(config)
    assert total == 671_877_929_216
    moe_layers = sum(t == "sparse" for t in config.mlp_layer_types)
    unused = moe_layers * (config.n_routed_experts - config.num_experts_per_tok) * 3 * \
        config.hidden_size * config.moe_intermediate_size
    for model in ("deepseek-v3.2", str(SPARSE / "deepseek-v3.2.json")):
        p = report(cli, model)["params"]
        assert (p["total"], p["active"]) == (total, total - unused)


@pytest.mark.parametrize("name", ["llama-4-scout", "llama-4-maverick"])
def test_llama4_presets_are_the_published_text_models(cli, tmp_path, name):
    config = llama4_text_config(name)
    total = meta_params(config)
    unused = len(config.moe_layers) * (config.num_local_experts - config.num_experts_per_tok) \
        * 3 * config.hidden_size * config.intermediate_size
    text = json.loads((SPARSE / f"{name}.json").read_text())["text_config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(text))
    for model in (name, str(path)):
        p = report(cli, model)["params"]
        assert (p["total"], p["active"]) == (total, total - unused)


def test_scouts_published_temperature_tuning_is_rejected_by_the_strict_config():
    from transformers import Llama4TextConfig

    with pytest.raises(Exception):
        Llama4TextConfig(attn_temperature_tuning=4)
