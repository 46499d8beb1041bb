"""Shell, CI and spreadsheet workflows: number syntax, --set, config.json import, sweep, compare,
check and schema."""

from __future__ import annotations

import csv
import io
import json

import pytest

from flopcalc.errors import FlopcalcError
from flopcalc.numbers import parse_count, parse_length
from flopcalc.reports.sweep import parse_seq_spec

from tests.conftest import DATA

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]


@pytest.mark.parametrize("text, value", [
    ("2048", 2048), ("1_000", 1000), ("1,000,000", 10**6), ("3.14e23", 314 * 10**21),
    ("300B", 300 * 10**9), ("300b", 300 * 10**9), ("1.5T", 15 * 10**11), ("2G", 2 * 10**9),
    ("7k", 7000), ("2.5M", 2_500_000), ("1e0", 1)])
def test_counts(text, value):
    assert parse_count(text) == value


@pytest.mark.parametrize("text, value", [
    ("32k", 32_768), ("128k", 131_072), ("128K", 131_072), ("1M", 1_048_576), ("3001", 3001),
    ("0.5k", 512)])
def test_lengths_use_binary_k(text, value):
    assert parse_length(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.5", "0", "-3", "nan", "inf", "-inf", "1e-3",
                                  "12x", "0.0003k", "1..2", "--1", "1e400x"])
def test_bad_numbers_are_errors(text):
    with pytest.raises(FlopcalcError):
        parse_count(text)


def test_every_output_echoes_the_resolved_integer(cli):
    doc = cli("model", "gpt2", "--seq", "2k", "--tokens", "1.5T", "--batch", "1_0",
              "-f", "json").json()
    assert (doc["settings"]["seq"], doc["settings"]["tokens"], doc["settings"]["batch"]) == (
        2048, 1_500_000_000_000, 10)


# --set ---------------------------------------------------------------------------------------

def test_set_overrides_like_yaml(cli):
    base = cli("model", "gpt2", "-f", "json").json()["params"]
    deeper = cli("model", "gpt2", "--set", "n_layers=24", "-f", "json").json()["params"]
    per_layer = (base["non_embedding"] - 2 * 768) // 12  # minus the final norm
    assert deeper["total"] - base["total"] == 12 * per_layer


def test_set_nested_key(cli):
    no_qkv_bias = cli("model", "gpt2", "--set", "bias.qkv=false", "-f", "json").json()["params"]
    assert cli("model", "gpt2", "-f", "json").json()["params"]["total"] - no_qkv_bias["total"] \
        == 12 * 3 * 768


def test_set_untie_adds_exactly_v_times_d(cli):
    tied = cli("model", "gpt2", "-f", "json").json()["params"]["total"]
    untied = cli("model", "gpt2", "--set", "tie_embeddings=false", "-f", "json").json()
    assert untied["params"]["total"] - tied == 50257 * 768


@pytest.mark.parametrize("override, needle", [
    ("n_layers=2.5", "n_layers must be a whole number"),
    ("n_layer=3", "unknown key 'n_layer'"),
    ("n_layers", "expected KEY=VALUE"),
    ("=3", "expected KEY=VALUE"),
    ("n_kv_heads=5", "n_kv_heads=5 must divide n_heads=12"),
    ("bias.qkv=maybe", "bias.qkv must be true or false"),
])
def test_bad_set_is_one_line_exit_2(cli, override, needle):
    r = cli("model", "gpt2", "--set", override)
    assert r.code == 2 and needle in r.err and r.out == ""


# Hugging Face config.json -----------------------------------------------------------------------

def hf(name: str) -> str:
    return str(DATA / "hf" / name)


def test_hf_gpt2_defaults_n_inner_to_4d(cli):
    doc = cli("model", hf("gpt2.json"), "-f", "json").json()
    assert doc["params"]["total"] == 124_439_808
    assert doc["params"]["components"]["decoder.mlp.up.weight"] == 12 * 768 * 3072


def test_hf_qwen2_has_qkv_bias_only(cli):
    comps = cli("model", hf("qwen2-0.5b.json"), "-f", "json").json()["params"]["components"]
    assert "decoder.attn.q.bias" in comps and "decoder.attn.o.bias" not in comps
    assert not any(k.startswith("decoder.mlp") and k.endswith("bias") for k in comps)


def test_hf_gemma_explicit_head_dim_and_tied(cli):
    r = cli("show", hf("gemma-2b.json"))
    assert "head_dim: 256" in r.out and "tie_embeddings: false" not in r.out  # tied: the default


@pytest.mark.parametrize("name", ["gpt2.json", "llama-3.1-8b.json", "mistral-7b-v0.1.json",
                                  "qwen2-0.5b.json", "gemma-2b.json"])
def test_hf_show_reloads_identically(cli, tmp_path, name):
    path = tmp_path / "preset.yaml"
    path.write_text(cli("show", hf(name)).out)
    a = cli("model", hf(name), "-f", "json").json()
    b = cli("model", str(path), "-f", "json").json()
    assert (a["params"], a["flops"]) == (b["params"], b["flops"])


HF_FIXTURES = sorted(path for path in (DATA / "hf").rglob("*.json")
                     if "model_type" in json.loads(path.read_text()))


@pytest.mark.parametrize("path", HF_FIXTURES, ids=lambda p: str(p.relative_to(DATA / "hf")))
def test_every_config_fixture_shows_and_reloads_identically(cli, tmp_path, path):
    """`show` writes every key the model needs, nulls included (a latent-attention model
    without a query latent has q_lora_rank: null), so the YAML loads back to the same counts."""
    a = cli("model", str(path), "-f", "json")
    assert a.code == 0, a.err
    shown = tmp_path / "preset.yaml"
    shown.write_text(cli("show", str(path)).out)
    b = cli("model", str(shown), "-f", "json")
    assert b.code == 0, b.err
    assert (a.json()["params"], a.json()["flops"]) == (b.json()["params"], b.json()["flops"])


def test_hf_unsupported_model_type_lists_supported(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "no_such_type", "hidden_size": 768}))
    r = cli("model", str(path))
    assert r.code == 2
    assert "model_type 'no_such_type' is not supported; supported: " in r.err
    listed = r.err.split("supported: ", 1)[1].split(" (", 1)[0].split(", ")
    assert listed == sorted(listed) and {"bert", "gpt2", "llama", "t5"} <= set(listed)
    assert "describe the model in a YAML file" in r.err


def test_hf_not_json(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    r = cli("model", str(path))
    assert r.code == 2 and "not valid JSON at line 1" in r.err


# sweep -----------------------------------------------------------------------------------------

def test_seq_specs():
    assert parse_seq_spec("1k,2k,4k") == [1024, 2048, 4096]
    assert parse_seq_spec("1000..5000") == [1024, 2048, 4096]
    assert parse_seq_spec("1k..1M") == [2**k for k in range(10, 21)]
    spaced = parse_seq_spec("1..1M", 100)
    assert spaced[0] == 1 and spaced[-1] == 2**20 and len(spaced) == len(set(spaced)) <= 100
    assert len(parse_seq_spec("1..10", 1000)) == 10  # duplicates removed


@pytest.mark.parametrize("spec, points", [("4k..1k", None), ("3..3", None), ("1k,2k", 5),
                                          ("1..1M", 0), ("x..2", None)])
def test_bad_seq_specs(spec, points):
    with pytest.raises(FlopcalcError):
        parse_seq_spec(spec, points)


def test_sweep_undercount_by_hand(cli):
    # GPT-3 at 2,048: forward per token 358,791,143,424 (presets/test_published_figures),
    # 2N = 347,923,070,976; 6ND is (fwd − 2N)/fwd below exact = 10,868,072,448 / 358,791,143,424.
    (row,) = cli("sweep", "gpt3", "--seqs", "2048", "-f", "json").json()["rows"]
    assert row["six_nd_undercount_pct"] == pytest.approx(100 * 10_868_072_448 / 358_791_143_424,
                                                         rel=1e-12)
    assert row["attention_share_pct"] == pytest.approx(
        100 * 19_791_209_299_968 / 734_804_261_732_352, rel=1e-12)  # 4·L·s²·d / forward


def test_sweep_rows_equal_model_and_mark_crossover(cli):
    doc = cli("sweep", "gpt3", "--seqs", "2k,73728,100k", "-f", "json").json()
    assert doc["crossover"]["seq"] == 73_728
    rows = {r["seq"]: r for r in doc["rows"]}
    single = cli("model", "gpt3", "--seq", "2048", "-f", "json").json()["flops"]
    assert rows[2048]["forward"] == single["forward"]
    assert rows[2048]["attention"] == single["attention"]
    assert [r["past_crossover"] for r in doc["rows"]] == [False, True, True]


def test_sweep_table_shows_crossover_and_bars(cli):
    out = cli("sweep", "gpt2", "--seqs", "1k..64k").out
    assert "s* 4,608" in out and "crossover (6d)" in out and "█" in out


def test_sweep_csv_rows(cli):
    rows = list(csv.DictReader(io.StringIO(cli("sweep", "gpt2", "--seqs", "1..1M", "--points",
                                               "50", "-f", "csv").out)))
    assert 1 < len(rows) <= 50 and int(rows[-1]["seq"]) == 2**20


# compare ---------------------------------------------------------------------------------------

def test_compare_side_by_side(cli):
    doc = cli("compare", "gpt2", "llama-3.1-8b", "--seq", "4k", "-f", "json").json()
    names = [m["model"] for m in doc["models"]]
    assert names == ["gpt2", "llama-3.1-8b"]
    assert doc["models"][1]["crossover_seq"] == 26_624
    assert doc["models"][0]["flops_forward"] == cli(
        "model", "gpt2", "--seq", "4096", "-f", "json").json()["flops"]["forward"]


# check -----------------------------------------------------------------------------------------

def test_check_passes_with_exit_0(cli):
    r = cli("check", "gpt3", "--seq", "2048", "--tokens", "300B",
            "--max", "training.exact=3.3e23", "--max", "params.total=180B")
    assert r.code == 0 and r.out.count("PASS") == 2


def test_check_fails_with_exit_1(cli):
    r = cli("check", "gpt3", "--max", "params.total=170B", "-f", "json")
    assert r.code == 1
    doc = r.json()
    assert doc["passed"] is False
    (row,) = doc["rows"]
    assert row["value"] == 174_604_259_328 and row["limit"] == 170 * 10**9
    assert row["margin"] == 170 * 10**9 - 174_604_259_328


def test_check_unknown_key_lists_valid_ones(cli):
    r = cli("check", "gpt3", "--max", "flops.fwd=1")
    assert r.code == 2 and "flops.forward" in r.err


def test_budget_file(cli, tmp_path):
    budget = tmp_path / "budget.yaml"
    budget.write_text("""checks:
  - model: gpt3
    seq: 2048
    tokens: 300B
    max:
      training.exact: 3.3e23
      params.total: 180B
  - model: llama-3.1-8b
    seq: 8k
    max:
      flops.forward: 1e14
""")
    r = cli("check", "--budget", str(budget), "-f", "json")
    assert r.code == 1
    assert [row["status"] for row in r.json()["rows"]] == ["PASS", "PASS", "FAIL"]


@pytest.mark.parametrize("text, needle", [
    ("checks:\n  - model: gpt3\n", "checks.0 (gpt3): give at least one limit"),
    ("checks:\n  - model: gpt3\n    max: {params.total: lots}\n", "checks.0 (gpt3)"),
    ("checks:\n  - model: gpt3\n    sequence: 5\n    max: {params.total: 1}\n",
     "unknown key 'sequence' for command model; valid keys: model, command, max, min, attention"),
    ("checks:\n  - model: gpt3\n    sq: 5\n    max: {params.total: 1}\n", "did you mean 'seq'"),
    ("checks:\n  - model: gpt3\n    seq: 100.5\n    max: {params.total: 1}\n",
     "checks.0 (gpt3): Invalid value for '--seq': '100.5' is not a whole number"),
    ("checks: []\n", "'checks' is empty"),
    ("- 1\n", "top level is a list"),
])
def test_bad_budget_file_says_which_entry(cli, tmp_path, text, needle):
    budget = tmp_path / "budget.yaml"
    budget.write_text(text)
    r = cli("check", "--budget", str(budget))
    assert r.code == 2 and needle in r.err, r.err


def test_check_needs_model_or_budget(cli):
    assert cli("check").code == 2
    assert cli("check", "gpt3").code == 2


def test_compare_set_applies_to_every_model(cli):
    doc = cli("compare", "gpt2", "gpt3-small", "--set", "n_layers=1", "-f", "json").json()
    assert [m["params_total"] for m in doc["models"]] == [
        cli("model", name, "--set", "n_layers=1", "-f", "json").json()["params"]["total"]
        for name in ("gpt2", "gpt3-small")]


def test_hf_zero_kv_heads_is_an_error_not_mha(cli, tmp_path):
    config = json.loads((DATA / "hf" / "llama-3.1-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_key_value_heads": 0}))
    r = cli("model", str(path))
    assert r.code == 2 and "n_kv_heads must be a positive integer, got 0" in r.err
