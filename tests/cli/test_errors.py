"""Every bad input gets one clear line on stderr and exit 2; nothing on stdout; no traceback;
nothing executed from a file."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.behaviour

GOOD = (ROOT / "presets" / "gpt2.yaml").read_text()


def variant(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


FILES = {  # name: (content, words the message must contain)
    "empty.yaml": ("", "the model file is empty"),
    "blank.yaml": ("\n  \n", "the model file is empty"),
    "syntax.yaml": ("d_model: [1, 2\n", "invalid YAML at line 2"),
    "list.yaml": ("- a\n- b\n", "the top level is a list"),
    "scalar.yaml": ("42\n", "the top level is a single int"),
    "float.yaml": (variant("d_model: 768", "d_model: 768.5"), "d_model must be a whole number, got 768.5"),
    "float0.yaml": (variant("d_model: 768", "d_model: 768.0"), "d_model must be a whole number, got 768.0"),
    "bool.yaml": (variant("d_model: 768", "d_model: true"), "d_model must be a whole number, got true"),
    "string.yaml": (variant("d_model: 768", 'd_model: "768"'), "got '768'"),
    "negative.yaml": (variant("d_model: 768", "d_model: -768"), "d_model must be a positive integer"),
    "zero.yaml": (variant("n_layers: 12", "n_layers: 0"), "n_layers must be a positive integer, got 0"),
    "missing.yaml": (variant("d_ff: 3072\n", ""), "missing key 'd_ff'"),
    "unknown.yaml": (GOOD + "n_head: 12\n", "unknown key 'n_head'; did you mean 'n_heads'"),
    "kv.yaml": (GOOD + "n_kv_heads: 5\n", "n_kv_heads=5 must divide n_heads=12"),
    "indivisible.yaml": (variant("d_model: 768", "d_model: 770"), "d_model=770 is not divisible by n_heads=12; set head_dim"),
    "badenum.yaml": (variant("mlp: plain", "mlp: swiglu"), "mlp must be 'plain' or 'gated', got 'swiglu'"),
    "nested.yaml": (variant("bias:", "bias:\n  qkvv: true\nx:"), "unknown key"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_bad_model_file(cli, tmp_path, name):
    content, needle = FILES[name]
    path = tmp_path / name
    path.write_text(content)
    r = cli("model", str(path), "--format", "json")
    assert r.code == 2 and r.out == ""
    assert needle in r.err and name in r.err, r.err
    assert r.err.startswith("flopcalc: error: ") and r.err.count("\n") == 1


def test_binary_garbage(cli, tmp_path):
    path = tmp_path / "garbage.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    r = cli("model", str(path))
    assert r.code == 2 and "binary data" in r.err


def test_not_utf8(cli, tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("title: café\n".encode("latin-1"))
    assert "not UTF-8" in cli("model", str(path)).err


def test_missing_path_and_directory(cli, tmp_path):
    r = cli("model", str(tmp_path / "nope.yaml"))
    assert r.code == 2 and "no such model file" in r.err
    r = cli("model", str(tmp_path) + "/")
    assert r.code == 2 and "is a directory" in r.err


def test_oversized_file_refused_before_parsing(cli, tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("title: " + "x" * (1 << 20) + "\n")
    r = cli("model", str(path))
    assert r.code == 2 and "too large" in r.err


@pytest.mark.parametrize("doc", [
    '!!python/object/apply:os.system ["touch {marker}"]\n',
    'n_layers: !!python/object/apply:os.system ["touch {marker}"]\n',
    'title: !!python/object/new:subprocess.check_output [["touch", "{marker}"]]\n',
])
def test_python_tags_construct_nothing(cli, tmp_path, doc):
    marker = tmp_path / "PWNED"
    path = tmp_path / "tag.yaml"
    path.write_text(doc.format(marker=marker))
    r = cli("model", str(path))
    assert r.code == 2 and "unsupported YAML tag !!python/" in r.err
    assert not marker.exists()


def test_unknown_preset_suggests(cli):
    r = cli("model", "llama-3.1-7b")
    assert r.code == 2 and "did you mean" in r.err and "'llama-3.1-8b'" in r.err


@pytest.mark.parametrize("option", ["--seq", "--batch", "--tokens", "--tgt-seq"])
@pytest.mark.parametrize("value", ["abc", "1.5", "0", "-3", "nan", "inf", "1e999999", "4kk"])
def test_bad_numeric_options(cli, option, value):
    r = cli("model", "transformer-base", option, value, "--format", "json")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"flopcalc: error: Invalid value for '{option}': ")
    assert r.err.count("\n") == 1 and "--help)" in r.err, r.err


@pytest.mark.parametrize("args, needle", [
    (["--format", "xml"], "'xml' is not one of 'table', 'json', 'csv'"),
    (["--attention", "sparse"], "'sparse' is not one of 'full', 'causal'"),
    (["--set", "nope"], "expected KEY=VALUE"),
    (["--set", "d_model=[1]"], "d_model must be a whole number, got a list"),
    (["--set", "bias={qkv: true}"], "not a mapping; set nested keys one by one (bias.KEY=VALUE)"),
    (["--set", "vocab=5"], "unknown key 'vocab'"),
    (["--bogus"], "No such option"),
])
def test_bad_options(cli, args, needle):
    r = cli("model", "gpt2", *args)
    assert r.code == 2 and needle in r.err and r.out == ""
    assert "Traceback" not in r.err


@pytest.mark.parametrize("model", ["gpt2", "bert-base"])
def test_target_length_on_a_one_stack_model_is_refused(cli, model):
    """A decoder-only or encoder-only model reads one sequence: --tgt-seq would be ignored."""
    r = cli("model", model, "--tgt-seq", "128")
    assert r.code == 2 and r.out == ""
    assert "is not an encoder-decoder model" in r.err and "--seq" in r.err


@pytest.mark.parametrize("seq", ["1..1M --points 10001", ",".join(["7"] * 10_001)])
def test_sweeps_are_bounded_to_ten_thousand_lengths(cli, seq):
    r = cli("sweep", "gpt2", "--seqs", *seq.split(" "))
    assert r.code == 2 and r.out == "" and "10,000" in r.err and r.err.count("\n") == 1


def test_debug_shows_the_traceback(cli):
    from flopcalc.errors import FlopcalcError

    with pytest.raises(FlopcalcError):
        cli("--debug", "model", "gtp3")


def test_every_command_reports_bad_models_the_same_way(cli):
    for args in (["model", "x"], ["show", "x"], ["sweep", "x"], ["compare", "gpt2", "x"],
                 ["check", "x", "--max", "params.total=1"]):
        r = cli(*args)
        assert r.code == 2 and "unknown model 'x'" in r.err, args


def test_huge_configs_stay_exact_and_fast(cli, tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(variant("n_layers: 12", "n_layers: 100000").replace(
        "d_model: 768", "d_model: 3000000000").replace("d_ff: 3072", "d_ff: 12000000000")
        .replace("n_heads: 12", "n_heads: 3000"))
    r = cli("model", str(path), "--seq", "1M", "-f", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    d, L = 3 * 10**9, 10**5
    layer = 4 * d * d + 2 * d * 4 * d + (3 * d + d + 4 * d + d) + 4 * d
    assert doc["params"]["total"] == L * layer + 2 * d + 50257 * d + 1024 * d
    assert doc["flops"]["forward"] == sum(doc["flops"]["components"].values())


def test_more_layers_than_any_model_is_refused(cli):
    r = cli("model", "gpt2", "--set", "n_layers=1000000000")
    assert r.code == 2 and "more than 100,000 layers" in r.err
