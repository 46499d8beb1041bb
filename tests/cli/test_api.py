"""The Python API returns the command line's reports: `to_dict()` equals `--format json`, and a
bad input raises FlopcalcError with the message the command line prints."""

from __future__ import annotations

import pytest

import flopcalc

pytestmark = pytest.mark.behaviour

CASES = [
    ("model", ["llama-3.1-8b", "--seq", "4096", "--attention", "causal"],
     lambda: flopcalc.model("llama-3.1-8b", seq=4096, attention="causal")),
    ("model", ["t5-base", "--seq", "512", "--tgt-seq", "128", "--elementwise"],
     lambda: flopcalc.model("t5-base", seq="512", tgt_seq=128, elementwise=True)),
    ("sweep", ["gpt3", "--seqs", "1k..64k"], lambda: flopcalc.sweep("gpt3", seqs="1k..64k")),
    ("compare", ["gpt3", "mixtral-8x7b", "--seq", "8k"],
     lambda: flopcalc.compare(["gpt3", "mixtral-8x7b"], seq="8k")),
    ("conventions", ["llama-3.1-8b", "--seq", "8k", "--recompute", "full"],
     lambda: flopcalc.conventions("llama-3.1-8b", seq="8k", recompute="full")),
    ("attention", ["--n", "8k", "--d-k", "128", "--d-v", "128", "--heads", "32"],
     lambda: flopcalc.attention(n="8k", d_k=128, d_v=128, heads=32)),
    ("infer", ["deepseek-v3", "--prompt", "32k", "--gen", "1k", "--accelerator", "h200",
               "--count", "8"],
     lambda: flopcalc.infer("deepseek-v3", prompt="32k", gen="1k", accelerator="h200",
                            count=8)),
    ("train", ["gpt3", "--tokens", "300B", "--accelerator", "h100", "--count", "1024",
               "--mfu", "40%", "--price", "2.5"],
     lambda: flopcalc.train("gpt3", tokens="300B", accelerator="h100", count=1024, mfu="40%",
                            price=2.5)),
    ("memory", ["llama-3.1-70b", "--count", "64", "--tp", "8", "--zero", "3",
                "--accelerator", "h100"],
     lambda: flopcalc.memory("llama-3.1-70b", count=64, tp=8, zero=3, accelerator="h100")),
]


@pytest.mark.parametrize("command, args, call", CASES, ids=[c[0] for c in CASES])
def test_api_equals_cli(cli, command, args, call):
    r = cli(command, *args, "-f", "json")
    assert r.code == 0, r.err
    assert call().to_dict() == r.json()


def test_attribute_access_and_load():
    r = flopcalc.model("gpt2", seq=1024)
    assert r.params.total == 124_439_808 and r.crossover.seq == 4608
    spec = flopcalc.load("gpt2", set=["n_layers=24"]).spec
    assert spec.n_layers() == 24


@pytest.mark.parametrize("args, call", [
    (["model", "gtp3"], lambda: flopcalc.model("gtp3")),
    (["model", "gpt2", "--seq", "0"], lambda: flopcalc.model("gpt2", seq=0)),
    (["model", "gpt2", "--set", "n_kv_heads=5"],
     lambda: flopcalc.model("gpt2", set=["n_kv_heads=5"])),
    (["infer", "transformer-base", "--prompt", "1", "--gen", "1"],
     lambda: flopcalc.infer("transformer-base", prompt=1, gen=1)),
    (["train", "gpt2", "--accelerator", "h100", "--mfu", "150%"],
     lambda: flopcalc.train("gpt2", accelerator="h100", mfu="150%")),
    (["memory", "gpt2", "--tp", "5"], lambda: flopcalc.memory("gpt2", tp=5)),
])
def test_errors_carry_the_cli_message(cli, args, call):
    r = cli(*args)
    assert r.code == 2
    with pytest.raises(flopcalc.FlopcalcError) as info:
        call()
    message = r.err.removeprefix("flopcalc: error: ").strip()
    assert message.startswith(str(info.value))


def test_import_is_cheap():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys, flopcalc; print(sorted(m for m in "
                          "('typer', 'click', 'rich', 'pydantic', 'yaml') if m in sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
