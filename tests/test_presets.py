"""Golden numbers: every preset's parameter count, the crossovers and the seeds' worked figures."""

from __future__ import annotations

import pytest

from flopcalc import counting as c
from flopcalc.registry import load_model, preset_names
from flopcalc.report import build_report

from .conftest import ROOT

# SPEC §2: the counts the tool must print (published weights / exact architecture counts).
SPEC_TOTALS = {
    "transformer-base": 63_082_496,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "gpt3": 174_604_259_328,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
}
REQUIRED = set(SPEC_TOTALS) | {
    "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-xl", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b"}


def params(name: str) -> list[c.Part]:
    return c.model_params(load_model(name).config)


def test_every_required_preset_ships():
    assert REQUIRED <= set(preset_names())


@pytest.mark.parametrize("name", sorted(SPEC_TOTALS))
def test_total_params_match_spec(name):
    assert c.total(params(name)) == SPEC_TOTALS[name]


@pytest.mark.parametrize("name", preset_names())
def test_presets_carry_title_source_and_notes(name):
    cfg = load_model(name).config
    assert cfg.title and cfg.source and cfg.notes


@pytest.mark.parametrize("name, seq, multiple", [
    ("gpt3", 73_728, 6), ("llama-3.1-8b", 26_624, 6.5), ("gpt2", 4_608, 6)])
def test_crossover(name, seq, multiple):
    cfg = load_model(name).config
    s_star = c.crossover_seq(cfg, "full")
    assert s_star == seq
    assert s_star / cfg.d_model == multiple


def test_crossover_is_where_layer_flops_meet():
    cfg = load_model("llama-3.1-8b").config
    w = c.workload(cfg, 26_624)
    weights, attention = c.layers_weights_attention(cfg, w)
    assert weights == attention


def layer_split(name: str) -> dict[str, int]:
    split: dict[str, int] = {}
    for p in c.layer_params(load_model(name).config, "decoder"):
        group = "norms" if "norm" in p.name else p.name.split(".")[0]
        split[group] = split.get(group, 0) + p.value
    return split


def test_seed003_gpt2_block_split():
    assert layer_split("gpt2") == {"attn": 2_362_368, "mlp": 4_722_432, "norms": 3_072}


def test_seed003_llama_block_split():
    split = layer_split("llama-3.1-8b")
    assert split["attn"] == 41_943_040 and split["mlp"] == 176_160_768


def test_seed000_practice_block():
    block = load_model(str(ROOT / "examples" / "seed000-block.yaml"))
    report = build_report(block, seq=2048)
    (layer,) = report.layers
    assert layer.params == 12 * 4096**2 == 201_326_592
    weights = report.flops.weights - report.flops.components["lm_head"]
    assert weights == 24 * 2048 * 4096**2 == 824_633_720_832  # ≈ 8.24e11
    assert report.flops.attention == 4 * 2048**2 * 4096 == 68_719_476_736  # ≈ 6.87e10
    assert report.crossover.seq == 24_576


def test_seed000_six_nd():
    w = c.Workload(seq=2048, tgt_seq=2048)
    cost = c.training_cost(forward=0, attention=0, n_non_embedding=7 * 10**9, w=w,
                           tokens=2 * 10**12)
    assert cost.six_nd == 84 * 10**21  # 8.4e22


def test_gpt3_training_at_2048():
    loaded = load_model("gpt3")
    cfg = loaded.config
    D, s = 300 * 10**9, 2048
    report = build_report(loaded, seq=s, tokens=D)
    t = report.training
    assert t.n == 173_961_535_488
    assert t.six_nd == 6 * 173_961_535_488 * D
    assert t.attention_correction == 12 * cfg.n_layers * s * cfg.d_q * D
    assert t.exact == 3 * report.flops.forward // s * D
    assert report.flops.forward % s == 0 and not t.rounded
    assert t.six_nd_plus_attention == t.six_nd + t.attention_correction


def test_gpt3_13b_heads_narrower_than_d_model():
    cfg = load_model("gpt3-13b").config
    assert (cfg.d_model, cfg.d_q) == (5140, 5120)
    q = next(p for p in c.layer_params(cfg, "decoder") if p.name == "attn.q.weight")
    assert q.shape == (5140, 5120)


def test_gpt3_xl_keeps_d_model():
    cfg = load_model("gpt3-xl").config
    assert cfg.d_q == cfg.d_model == 2048


def test_transformer_base_structure():
    cfg = load_model("transformer-base").config
    assert cfg.is_encoder_decoder and cfg.n_encoder_layers == cfg.n_layers == 6
    names = {p.name for p in c.layer_params(cfg, "decoder")}
    assert "cross_attn.q.weight" in names and "cross_attn_norm.weight" in names
