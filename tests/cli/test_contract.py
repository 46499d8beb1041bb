"""The command line as users and scripts see it: exit codes, JSON keys, CSV, tables, streams."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest

from flopcalc import __version__

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

CONTRACT = [
    "schema_version", "model.name", "settings.seq", "settings.batch", "settings.tokens",
    "settings.attention", "params.total", "params.embedding", "params.non_embedding",
    "params.components", "flops.forward", "flops.weights", "flops.attention", "flops.components",
    "training.tokens", "training.six_nd", "training.attention_correction",
    "training.six_nd_plus_attention", "training.exact", "crossover.seq",
    "crossover.d_model_multiple",
]


def dig(doc, dotted):
    for key in dotted.split("."):
        doc = doc[key]
    return doc


@pytest.mark.parametrize("name", ["gpt2", "gpt3", "llama-3.1-8b", "transformer-base"])
def test_json_contract(cli, name):
    r = cli("model", name, "--format", "json")
    assert r.code == 0 and r.err == ""
    doc = r.json()
    for key in CONTRACT:
        dig(doc, key)
    p, f = doc["params"], doc["flops"]
    assert f["forward"] == f["weights"] + f["attention"]
    assert sum(f["components"].values()) == f["forward"]
    assert sum(p["components"].values()) == p["total"]
    assert p["total"] == p["embedding"] + p["non_embedding"]
    assert all(isinstance(v, int) for v in [*p["components"].values(), *f["components"].values()])


def test_options_reach_the_report(cli):
    doc = cli("model", "gpt2", "--seq", "512", "--batch", "4", "--tokens", "1e9",
              "--attention", "causal", "-f", "json").json()
    assert doc["settings"] == {**doc["settings"], "seq": 512, "batch": 4, "tokens": 10**9,
                               "attention": "causal"}
    assert doc["training"]["tokens"] == 10**9


def test_causal_counts_half_the_pairs_plus_diagonal(cli):
    full = cli("model", "gpt2", "--seq", "1000", "-f", "json").json()["flops"]
    causal = cli("model", "gpt2", "--seq", "1000", "--attention", "causal", "-f", "json").json()["flops"]
    assert causal["weights"] == full["weights"]
    # full: 4·s²·d_q per layer; causal: 4·d_q·s(s+1)/2 per layer.
    assert causal["attention"] * 2 * 1000 == full["attention"] * 1001


def test_tgt_seq_changes_only_the_decoder(cli):
    doc = cli("model", "transformer-base", "--seq", "100", "--tgt-seq", "50", "-f", "json").json()
    comps = doc["flops"]["components"]
    assert comps["decoder.cross_attn.scores"] == 2 * 8 * 50 * 100 * 64 * 6
    assert comps["encoder.attn.scores"] == 2 * 8 * 100 * 100 * 64 * 6
    assert comps["lm_head"] == 2 * 50 * 512 * 37000
    assert doc["settings"]["tgt_seq"] == 50


def test_default_tokens_say_where_they_come_from(cli):
    gpt3 = cli("model", "gpt3", "-f", "json").json()["settings"]
    assert gpt3["tokens"] == 300 * 10**9 and gpt3["tokens_source"].startswith("published")
    gpt2 = cli("model", "gpt2", "-f", "json").json()
    assert gpt2["settings"]["tokens"] == 20 * gpt2["params"]["total"]
    assert "20 tokens per parameter" in gpt2["settings"]["tokens_source"]


def test_csv_has_header_and_component_rows(cli):
    r = cli("model", "llama-3.1-8b", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert r.code == 0
    assert all(row["model"] == "llama-3.1-8b" and row["seq"] == "8192" for row in rows)
    flops = {row["name"]: int(row["value"]) for row in rows if row["section"] == "flops"}
    assert flops["forward"] == sum(v for k, v in flops.items() if "." in k or k == "lm_head")
    assert any(row["name"] == "decoder.mlp.gate.weight" for row in rows)


def test_table_fits_80_columns_and_states_conventions(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("model", "gpt3", "--seq", "32768")
    assert r.code == 0
    assert max(len(line) for line in r.out.splitlines()) <= 80
    assert "2 FLOPs per multiply-add" in r.out and "attention full" in r.out
    assert "174,604,259,328 (174.6B)" in r.out
    assert "\x1b[" not in r.out  # no colour codes when stdout is not a terminal


def test_seq_beyond_context_warns_on_stderr_only(cli):
    r = cli("model", "gpt2", "--seq", "4096", "-f", "json")
    assert r.code == 0 and "exceeds gpt2's context of 1,024" in r.err
    assert r.json()["settings"]["seq"] == 4096


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_list_in_every_format(cli, fmt):
    r = cli("list", "--format", fmt)
    assert r.code == 0
    assert "llama-3.1-405b" in r.out and "405853388800" in r.out.replace(",", "")


def test_list_json_rows(cli):
    rows = {row["model"]: row for row in cli("list", "-f", "json").json()["presets"]}
    assert rows["llama-3.1-8b"]["n_kv_heads"] == 8
    assert rows["gpt3"]["params_total"] == 174_604_259_328


def test_show_reloads_to_the_same_numbers(cli, tmp_path):
    shown = cli("show", "llama-3.1-8b")
    path = tmp_path / "copy.yaml"
    path.write_text(shown.out)
    a = cli("model", "llama-3.1-8b", "-f", "json").json()
    b = cli("model", str(path), "-f", "json").json()
    assert a["params"] == b["params"] and a["flops"] == b["flops"]


def test_schema_documents_the_contract(cli):
    schema = cli("schema").json()
    assert "params" in schema["properties"] and "crossover" in schema["properties"]
    assert "Params" in schema["$defs"]
    assert cli("schema", "model").json() == schema


@pytest.mark.parametrize("command, key", [
    ("sweep", "rows"), ("compare", "models"), ("check", "rows"), ("conventions", "spread"),
    ("attention", "terms"), ("infer", "kv_cache"), ("train", "days"), ("memory", "memory"),
    ("list", "presets"), ("accelerators", "accelerators")])
def test_schema_of_every_command(cli, command, key):
    schema = cli("schema", command).json()
    assert key in schema["properties"] and "schema_version" in schema["required"]


def test_schema_of_an_unknown_command(cli):
    r = cli("schema", "modle")
    assert r.code == 2 and "did you mean 'model'" in r.err


def test_unknown_model_is_one_line_exit_2(cli):
    r = cli("model", "gtp3")
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and "did you mean 'gpt3'" in r.err


def test_version(cli):
    assert cli("--version").out.strip() == f"flopcalc {__version__}"


def test_python_dash_m_runs_the_same_cli():
    out = subprocess.run([sys.executable, "-m", "flopcalc", "model", "gpt2", "-f", "json"],
                         capture_output=True, text=True, check=True).stdout
    assert '"total": 124439808' in out


@pytest.mark.parametrize("command", [
    ["model"], ["sweep", "--seqs", "1k"], ["compare", "gpt2"], ["conventions"],
    ["infer", "--prompt", "8", "--gen", "2"],
    ["train", "--accelerator", "h100-sxm", "--mfu", "0.4"]])
def test_brackets_in_titles_and_paths_print_as_themselves(cli, tmp_path, command):
    """Tables print user text (titles, file names) literally: rich markup is off."""
    from tests.conftest import ROOT

    path = tmp_path / "odd[b].yaml"
    text = (ROOT / "presets" / "gpt2.yaml").read_text()
    path.write_text(text.replace(text.splitlines()[0], 'title: "GPT [/oops] [bold]x"'))
    name, *rest = command
    r = cli(name, str(path), *rest)
    assert r.code == 0, r.err
    assert "GPT [/oops] [bold]x" in r.out or "odd[b]" in r.out
