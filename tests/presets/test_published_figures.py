"""Golden numbers: every preset's parameter count, the crossovers and the source documents'
worked figures. Every expected value is a published figure or a hand-worked integer."""

from __future__ import annotations

import pytest

from flopcalc.models.registry import load_model, preset_names

from tests.conftest import ROOT, run

pytestmark = [pytest.mark.hand, pytest.mark.published]

# SPEC §2 and the issues: the counts the tool must print (published weights, or transformers'
# own modules on the meta device for the newer models).
TOTALS = {
    "transformer-base": 63_082_496,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "gpt3": 174_604_259_328,
    "gpt3-13b": 12_853_386_240,  # Table D.1's 12,850M
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
}
REQUIRED = set(TOTALS) | {
    "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-xl", "gpt3-2.7b", "gpt3-6.7b"}


def report(cli, *args: str) -> dict:
    return run(cli, "model", *args)


def test_every_required_preset_ships():
    assert REQUIRED <= set(preset_names())


@pytest.mark.parametrize("name", sorted(TOTALS))
def test_total_params(cli, name):
    assert report(cli, name)["params"]["total"] == TOTALS[name]


@pytest.mark.parametrize("name", preset_names())
def test_presets_carry_title_source_and_notes(name):
    spec = load_model(name).spec
    assert spec.title and spec.source and spec.notes


@pytest.mark.parametrize("name, seq, multiple", [
    # Dense MHA with d_ff = 4d: W = 24·d²·L, A = 4·d·L, s* = 6d.
    ("gpt3", 73_728, 6), ("gpt2", 4_608, 6),
    # Llama 3.1 8B: W = 2·(d·d + 2·d·1024 + d·d + 3·d·14336) = 2·d·(2d + 2048 + 43008),
    # A = 4·d, s* = (2d + 45056)/2 = 4096 + 22528 = 26,624 = 6.5·4096.
    ("llama-3.1-8b", 26_624, 6.5)])
def test_crossover(cli, name, seq, multiple):
    x = report(cli, name)["crossover"]
    assert (x["seq"], x["exact"], x["d_model_multiple"]) == (seq, str(seq), multiple)


def test_causal_crossover_is_12d_minus_1(cli):
    # Causal pairs s(s+1)/2: 4·d·s(s+1)/2 = 24·d²·s ⇒ s + 1 = 12d ⇒ s* = 12·12288 − 1.
    x = report(cli, "gpt3", "--attention", "causal")["crossover"]
    assert x["seq"] == 147_455 and x["exact"] == "147455"


def test_crossover_is_where_the_layers_flops_meet(cli):
    # At s* the layers' attention equals their weights: forward − LM head = 2 × attention.
    doc = report(cli, "llama-3.1-8b", "--seq", "26624")
    f = doc["flops"]
    assert f["weights"] - f["components"]["lm_head"] == f["attention"]


def layer_split(cli, name: str) -> dict[str, int]:
    (layer,) = report(cli, name)["layers"]
    split: dict[str, int] = {}
    for row in layer["param_rows"]:
        group = "norms" if "norm" in row["name"] else row["name"].split(".")[0]
        split[group] = split.get(group, 0) + row["value"]
    return split


def test_gpt2_block_split(cli):
    # "Multi-Head Attention and the Transformer Block": GPT-2 small's block.
    assert layer_split(cli, "gpt2") == {"attn": 2_362_368, "mlp": 4_722_432, "norms": 3_072}


def test_llama_block_split(cli):
    split = layer_split(cli, "llama-3.1-8b")
    assert split["attn"] == 41_943_040 and split["mlp"] == 176_160_768


def test_practice_block_of_the_lesson(cli):
    """"Learn: Multi-Head Attention & the Transformer Block", practice problem 1."""
    doc = report(cli, str(ROOT / "examples" / "ideal-block-d4096.yaml"), "--seq", "2048")
    (layer,) = doc["layers"]
    assert layer["params"] == 12 * 4096**2 == 201_326_592
    f = doc["flops"]
    assert f["weights"] - f["components"]["lm_head"] == 24 * 2048 * 4096**2 == 824_633_720_832
    assert f["attention"] == 4 * 2048**2 * 4096 == 68_719_476_736
    assert doc["crossover"]["seq"] == 24_576


def test_lesson_six_nd(cli, tmp_path):
    """Practice problem 2: N = 7e9, D = 2e12 gives C ≈ 6ND = 8.4e22. A one-layer model with
    exactly 7e9 non-embedding parameters: 12·d² with no norms, d = 24,152.5... is not whole, so
    take d_ff to fill: 4·d² (attention) + 2·d·f = 7e9 with d = 5000: f = (7e9 − 1e8)/10^4."""
    path = tmp_path / "n7e9.yaml"
    path.write_text("n_layers: 1\nd_model: 5000\nn_heads: 50\nd_ff: 690000\nnorm: none\n"
                    "final_norm: false\npositions: rotary\nvocab_size: 10\n")
    doc = report(cli, str(path), "--tokens", "2e12", "--seq", "8")
    assert doc["params"]["non_embedding"] == 4 * 5000**2 + 2 * 5000 * 690_000 == 7 * 10**9
    assert doc["training"]["six_nd"] == 84 * 10**21  # 8.4e22


def test_gpt3_training_at_2048(cli):
    D, s, L, d = 300 * 10**9, 2048, 96, 12288
    doc = report(cli, "gpt3", "--seq", str(s), "--tokens", str(D))
    t = doc["training"]
    # N = total − 50,257·12,288 (tokens) − 2,048·12,288 (positions).
    assert t["n"] == 174_604_259_328 - 50_257 * d - 2_048 * d == 173_961_535_488
    assert t["six_nd"] == 6 * 173_961_535_488 * D
    assert t["attention_correction"] == 12 * L * s * d * D  # 3 × 4·L·s·d_q per token
    # Forward per token: 24·L·d² + 4·L·s·d + 2·d·V.
    per_token = 24 * L * d * d + 4 * L * s * d + 2 * d * 50_257
    assert t["forward_per_token"] == per_token == 358_791_143_424
    assert t["exact"] == 3 * per_token * D == 322_912_029_081_600_000_000_000
    assert t["rounded"] is False


def test_gpt3_13b_uses_table_d1_width(cli):
    doc = report(cli, "gpt3-13b")
    q = next(r for r in doc["layers"][0]["param_rows"] if r["name"] == "attn.q.weight")
    assert q["shape"] == [5120, 5120]


def test_head_dim_other_than_d_over_h_stays_expressible(cli):
    # Table 2.1's 13B: d_model 5140, 40 heads of 128: Q, K, V project 5140 → 5120.
    doc = report(cli, "gpt3-13b", "--set", "d_model=5140", "--set", "head_dim=128",
                 "--set", "d_ff=20560")
    q = next(r for r in doc["layers"][0]["param_rows"] if r["name"] == "attn.q.weight")
    assert q["shape"] == [5140, 5120]
    assert doc["params"]["total"] == 12_936_488_380  # Table 2.1's reading: 12.94B


def test_gpt3_xl_keeps_d_model(cli):
    doc = report(cli, "gpt3-xl")
    assert doc["crossover"]["seq"] == 6 * 2048  # h·d_h = d: the 6d rule holds


def test_llama_default_seq_is_the_pretraining_length(cli):
    doc = report(cli, "llama-3.1-70b")
    assert doc["settings"]["seq"] == 8192 and doc["settings"]["context"] == 131_072


def test_transformer_base_structure(cli):
    doc = report(cli, "transformer-base")
    stacks = [(g["stack"], g["n_layers"]) for g in doc["layers"]]
    assert stacks == [("encoder", 6), ("decoder", 6)]
    names = {r["name"] for r in doc["layers"][1]["param_rows"]}
    assert "cross_attn.q.weight" in names and "cross_attn_norm.weight" in names
