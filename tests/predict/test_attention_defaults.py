"""Masks by default where time is predicted: infer, serve, train, step, plan and mfu count the
pairs each layer's mask lets through unless told --attention full; model, sweep and compare keep
the full count of the source documents; every output says which, and one run uses one."""

from __future__ import annotations

import pytest

import flopcalc
from flopcalc.commands import COMMANDS

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

# Llama 3.1 8B: 32 layers of 32 heads of 128 (d_q = 4,096): 4·4,096·32 = 524,288 FLOPs for each
# (query, key) pair over the layers. At 8,192 tokens full counts 8,192² pairs, causal
# 8,192·8,193/2: 33,550,336 fewer, 17,590,038,560,768 FLOPs.
PAIR = 4 * 4096 * 32
MASKED_8K = (8192 * 8192 - 8192 * 8193 // 2) * PAIR


@pytest.mark.parametrize("command, default", [
    ("infer", "causal"), ("serve", "causal"), ("train", "causal"), ("step", "causal"),
    ("plan", "causal"), ("mfu", "causal"), ("model", "full"), ("sweep", "full"),
    ("compare", "full")])
def test_declared_defaults(command, default):
    # one option, one meaning: the same name, choices and help everywhere, two defaults
    option = COMMANDS[command].option("attention")
    assert option.default == default and option.choices == ("full", "causal")
    assert option.help == COMMANDS["model"].option("attention").help
    predicted = ("infer", "serve", "train", "step", "plan", "mfu")
    assert [COMMANDS[c].option("attention").default for c in predicted] == ["causal"] * 6


def test_infer_counts_the_mask_and_times_it(cli):
    causal = run(cli, "infer", "llama-3.1-8b", "--prompt", "8k", "--gen", 16, "--accelerator",
                 "h100")
    full = run(cli, "infer", "llama-3.1-8b", "--prompt", "8k", "--gen", 16, "--accelerator",
               "h100", "--attention", "full")
    assert causal["settings"]["attention"] == "causal" == causal["roofline"]["attention"]
    assert full["prefill"]["flops"] - causal["prefill"]["flops"] == MASKED_8K
    # one convention in a run: the roofline's prefill is the prefill the report counts
    for doc in (causal, full):
        assert doc["roofline"]["prefill_flops"] == doc["prefill"]["flops"]
    assert full["roofline"]["attention"] == "full"


def test_serve_prefill_follows_attention(cli):
    causal = run(cli, "serve", "llama-3.1-8b", "--accelerator", "h100", "--prompt", "8k")
    full = run(cli, "serve", "llama-3.1-8b", "--accelerator", "h100", "--prompt", "8k",
               "--attention", "full")
    assert causal["settings"]["attention"] == "causal" and full["settings"]["attention"] == "full"
    assert full["timing"]["prefill_flops"] - causal["timing"]["prefill_flops"] == MASKED_8K
    assert full["timing"]["ttft_bound_s"] > causal["timing"]["ttft_bound_s"]
    assert any("causal attention (the default" in line for line in causal["conventions"])


def test_train_counts_the_mask_by_default(cli):
    causal = run(cli, "train", "llama-3.1-8b", "--mfu", "0.4", "--accelerator", "h100",
                 "--tokens", "1T")
    full = run(cli, "train", "llama-3.1-8b", "--mfu", "0.4", "--accelerator", "h100",
               "--tokens", "1T", "--attention", "full")
    assert causal["settings"]["attention"] == "causal"
    # 3 × (masked pairs per sequence / 8,192 tokens) × 10¹² tokens
    assert full["training"]["exact"] - causal["training"]["exact"] == \
        3 * MASKED_8K * 10**12 // 8192


def test_step_plan_mfu_say_their_convention():
    step = flopcalc.step("llama-3.1-8b", seq="8k", dp=8, global_batch=8, micro_batch=1,
                         recompute="none", dropout="off", flash=True,
                         accelerator="h100").to_dict()
    assert step["settings"]["attention"] == "causal"
    assert any("attention causal" in line for line in step["conventions"])
    full = flopcalc.step("llama-3.1-8b", seq="8k", dp=8, global_batch=8, micro_batch=1,
                         recompute="none", dropout="off", flash=True, accelerator="h100",
                         attention="full").to_dict()
    assert full["model_flops_per_step"] - step["model_flops_per_step"] == 3 * MASKED_8K * 8
    plan = flopcalc.plan("llama-3.1-8b", seq="8k", global_batch=8, count=8, flash=True,
                         accelerator="h100", top=1).to_dict()
    assert plan["settings"]["attention"] == "causal"
    mfu = flopcalc.mfu("llama-3.1-8b", tokens_per_second=1000, accelerator="h100").to_dict()
    assert mfu["settings"]["attention"] == "causal"
    assert mfu["mfu"] == next(r["utilisation"] for r in mfu["rows"] if r["name"] ==
                              "exact_causal")


def test_model_keeps_full_and_prints_causal_beside(cli):
    # 8,192 tokens: full counts 8,192² pairs, causal 8,192·8,193/2, 33,550,336 fewer
    assert MASKED_8K == 33_550_336 * 524_288 == 17_590_038_560_768
    doc = run(cli, "model", "llama-3.1-8b")
    assert doc["settings"]["attention"] == "full"
    f = doc["flops"]
    assert f["forward"] == f["forward_full"]
    assert f["forward_full"] - f["forward_causal"] == MASKED_8K
    causal = run(cli, "model", "llama-3.1-8b", "--attention", "causal")["flops"]
    assert causal["forward"] == causal["forward_causal"] == f["forward_causal"]
    out = cli("model", "llama-3.1-8b").out
    assert "forward (attention full)" in out and "forward with attention causal" in out
    assert f"{f['forward_causal']:,}" in out
    brief = cli("model", "llama-3.1-8b", "--brief").out
    assert f"causal {f['forward_causal']:,}" in brief


def test_sweep_and_compare_keep_full_where_infer_does_not(cli):
    assert run(cli, "sweep", "gpt2", "--seqs", "1k")["settings"]["attention"] == "full"
    assert run(cli, "compare", "gpt2", "gpt3")["settings"]["attention"] == "full"
    assert run(cli, "infer", "gpt2", "--prompt", "1k", "--gen", 1)["settings"][
        "attention"] == "causal"


def test_check_follows_the_command_it_checks(cli):
    r = cli("check", "llama-3.1-8b", "--command", "infer", "--prompt", "8k", "--gen", "1",
            "--max", "prefill.flops=1e20", "-f", "json")
    assert r.code == 0, r.err
    assert "attention=causal" in r.json()["rows"][0]["settings"]
    r = cli("check", "llama-3.1-8b", "--max", "flops.forward=1e20", "-f", "json")
    assert "attention=full" in r.json()["rows"][0]["settings"]
