"""Megatron-Core's `--recompute-modules` by hand: the saved tensors each module's recomputation
frees, and the forward matmuls it runs again, for tiny layers, against integers worked out in
the comments; and the one-line refusals.

What each module frees, read from Megatron-Core at d98e8a64 (docs/conventions.md):
layernorm the norms' outputs (each sublayer's input), moe_act the routed experts' activation
output, mla_up_proj latent attention's per-head Q, K and V, mlp a dense MLP's hidden tensors,
moe the whole MoE layer's tensors, shared_experts the shared experts' hidden tensors, core_attn
the s² scores.

As tests/memory/test_memory_by_hand.py: seq s = 4, micro-batch b = 2, d_model h = 8 (sb = 8,
sbh = 64), two heads; t = 2 unless said.
"""

from __future__ import annotations

import pytest

from flopcalc.models.registry import load_model
from flopcalc.predict.steptime import Layout, profile
from flopcalc.reports.step import hardware_flops_per_sequence, model_flops_per_sequence

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

SB = "--seq", 4, "--batch", 2
TAIL = "positions: rotary\nvocab_size: 10\n"
DENSE = "n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 32\n"  # LayerNorm, GELU MLP 4h, no biases
MOE = ("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 16\nmlp: gated\nactivation: silu\n"
       "norm: rmsnorm\nmoe: {experts: 4, top_k: 2, d_ff: 4, shared_experts: 1, "
       "shared_d_ff: 6}\n")
MLA = ("n_layers: 1\nd_model: 8\nn_heads: 2\nd_ff: 16\nmlp: gated\nactivation: silu\n"
       "norm: rmsnorm\nlatent_attention: {q_lora_rank: 3, kv_lora_rank: 5, "
       "qk_nope_head_dim: 4, qk_rope_head_dim: 2, v_head_dim: 3}\n")

# The MoE layer with FlashAttention, t = 2 (test_memory_by_hand.test_moe_tensors, gated):
MOE_TENSORS = {
    "norm_inputs": 256, "attn.input": 128, "attn.qk": 128, "attn.logsumexp": 32,
    "attn.v": 64, "attn.o_input": 64, "mlp.input": 128,
    "mlp.router_logits": 128,  # fp32 4sbE = 4·8·4
    "mlp.expert_inputs": 256,  # k copies of each input 2sbkh = 2·8·2·8
    "mlp.experts.hidden": 192,  # 3 tensors of 2·sbk·4/t = 64: gate-and-up (2) and the output
    "mlp.shared.hidden": 144,  # 3 tensors of 2sb·6/t = 48
}


def path_of(tmp_path, yaml: str):
    path = tmp_path / "m.yaml"
    path.write_text(yaml + TAIL)
    return path


def tensors(cli, tmp_path, yaml: str, *args) -> dict[str, int]:
    d = run(cli, "memory", path_of(tmp_path, yaml), *SB, *args)
    assert d["activations"]["per_layer"] == sum(d["activations"]["layers"][0]["tensors"].values())
    return d["activations"]["layers"][0]["tensors"]


def without(base: dict[str, int], *names: str, **changed: int) -> dict[str, int]:
    return {k: changed.get(k, v) for k, v in base.items() if k not in names}


@pytest.mark.parametrize("modules, expected", [
    ((), MOE_TENSORS),
    # the two norms' outputs are the attention's and the MoE's inputs, 2sbh = 128 each
    (("layernorm",), without(MOE_TENSORS, "attn.input", "mlp.input")),
    # the activation's output, the second projection's input: 1 of the 3 expert tensors, 64
    (("moe_act",), without(MOE_TENSORS, **{"mlp.experts.hidden": 128})),
    (("shared_experts",), without(MOE_TENSORS, "mlp.shared.hidden")),
    # the whole MoE layer under a normal checkpoint: only its input (mlp.input) stays
    (("moe",), without(MOE_TENSORS, "mlp.router_logits", "mlp.expert_inputs",
                       "mlp.experts.hidden", "mlp.shared.hidden")),
    (("layernorm", "moe_act"), without(MOE_TENSORS, "attn.input", "mlp.input",
                                       **{"mlp.experts.hidden": 128})),
])
def test_moe_layer_frees(cli, tmp_path, modules, expected):
    extra = ("--recompute-modules", ",".join(modules)) if modules else ()
    assert tensors(cli, tmp_path, MOE, "--tp", 2, "--flash", *extra) == expected


def test_mla_up_proj_frees_q_k_v(cli, tmp_path):
    # MLA, t = 2, flash: Q and K 2sb(12 + 12)/t = 192 and V 2sb·6/t = 48 are recomputed from
    # the latents (2sb(2·3 + 2·5 + 2)/t = 144), which stay
    base = tensors(cli, tmp_path, MLA, "--tp", 2, "--flash")
    assert base["attn.qk"] == 192 and base["attn.v"] == 48 and base["attn.latents"] == 144
    got = tensors(cli, tmp_path, MLA, "--tp", 2, "--flash", "--recompute-modules", "mla_up_proj")
    assert got == without(base, "attn.qk", "attn.v")
    assert sum(base.values()) - sum(got.values()) == 240


def test_dense_mlp_and_core_attn(cli, tmp_path):
    # dense GELU MLP, t = 1, eager kernel: mlp frees the activation's input and output,
    # 2 × 2sbf = 2·2·8·32 = 1,024; core_attn the softmax 2as²b = 2·2·16·2 = 128 (as selective)
    base = tensors(cli, tmp_path, DENSE, "--no-flash")
    assert base["mlp.hidden"] == 1_024 and base["attn.softmax"] == 128
    assert tensors(cli, tmp_path, DENSE, "--no-flash", "--recompute-modules", "mlp") == \
        without(base, "mlp.hidden")
    core = tensors(cli, tmp_path, DENSE, "--no-flash", "--recompute-modules", "core_attn")
    assert core == without(base, "attn.softmax")
    assert core == tensors(cli, tmp_path, DENSE, "--no-flash", "--recompute", "selective")


@pytest.mark.parametrize("yaml, modules, extra", [
    # the GELU MLP again, per sequence of 4: 2 matrices × 2·s·h·f = 2·2·4·8·32 = 4,096
    (DENSE, "mlp", 4_096),
    # MLA's up projections: q_b 3 → h·d_qk = 12, 2·4·3·12 = 288; kv_b 5 → h·(4 + 3) = 14,
    # 2·4·5·14 = 560: 848
    (MLA, "mla_up_proj", 848),
    # the shared expert (gated, width 6): 3 matrices × 2·4·8·6 = 1,152
    (MOE, "shared_experts", 1_152),
    # the whole MoE layer: router 2·4·8·4 = 256, routed experts over s·k = 8 token copies
    # 3 × 2·8·8·4 = 1,536, shared expert 1,152: 2,944
    (MOE, "moe", 2_944),
    # element-wise only: no matmul runs again
    (MOE, "moe_act", 0), (MOE, "layernorm", 0),
])
def test_extra_forward_flops(tmp_path, yaml, modules, extra):
    spec = load_model(str(path_of(tmp_path, yaml))).spec
    prof = profile(spec, 4)
    lay = Layout(recompute=modules, flash=True)
    assert hardware_flops_per_sequence(prof, lay) - model_flops_per_sequence(prof, "causal") \
        == extra


def test_step_takes_longer_and_uses_less_memory(cli):
    args = ("step", "deepseek-v3", "--seq", "4k", "--pp", "16", "--ep", "64", "--count", "1024",
            "--global-batch", "8192", "--micro-batch", "1", "--vp", "1", "--dropout", "off",
            "--accelerator", "h100")
    none = run(cli, *args, "--recompute", "none")
    mods = run(cli, *args, "--recompute-modules", "mla_up_proj,mlp,moe_act,layernorm")
    assert mods["layout"]["recompute"] == "moe_act,layernorm,mla_up_proj,mlp"
    assert mods["memory"]["total"] < none["memory"]["total"]
    assert mods["time"]["step_seconds"]["estimate"] > none["time"]["step_seconds"]["estimate"]
    assert mods["hfu"]["estimate"] > mods["mfu"]["estimate"]
    assert any("Megatron-Core's --recompute-granularity selective" in line
               for line in mods["conventions"])


def test_plan_recomputes_the_given_modules(cli):
    d = run(cli, "plan", "qwen3-30b-a3b", "--seq", "4k", "--global-batch", "64", "--count",
            "8", "--accelerator", "h100", "--recompute-modules", "moe_act,layernorm",
            "--top", "2")
    assert d["plans"] and all(p["layout"]["recompute"] == "moe_act,layernorm"
                              for p in d["plans"])


@pytest.mark.parametrize("model, args, words", [
    ("llama-3.1-8b", ("--recompute-modules", "attn"),
     "unknown recompute module 'attn'; the modules are core_attn, moe_act, layernorm, "
     "mla_up_proj, mlp, moe, shared_experts"),
    ("llama-3.1-8b", ("--recompute-modules", "mla_up_proj"),
     "llama-3.1-8b has no latent attention (MLA)"),
    ("llama-3.1-8b", ("--recompute-modules", "moe_act"), "llama-3.1-8b has no mixture of experts"),
    ("qwen3-30b-a3b", ("--recompute-modules", "shared_experts"),
     "qwen3-30b-a3b has no shared experts"),
    ("qwen3-30b-a3b", ("--recompute-modules", "mlp"), "qwen3-30b-a3b has no dense MLP"),
    ("llama-3.1-8b", ("--recompute-modules", ","), "name at least one recompute module"),
    ("llama-3.1-8b", ("--recompute-modules", "mlp", "--recompute", "full"), "give one of them"),
])
def test_bad_modules_one_line_exit_2(cli, model, args, words):
    for command in (("memory", model), ("step", model, "--global-batch", "8", "--accelerator",
                                        "h100", "--count", "8")):
        r = cli(*command, *args)
        assert r.code == 2, (command, r.out)
        assert words in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.parametrize("yaml, modules, extra", [(DENSE, "mlp", 4_096), (MLA, "mla_up_proj", 848),
                                                  (MOE, "moe", 2_944)])
def test_train_adds_the_recomputed_matmuls(cli, tmp_path, yaml, modules, extra):
    # D = 4 tokens, one sequence of 4: the forward matmuls run again once, as in
    # test_extra_forward_flops
    args = ("train", path_of(tmp_path, yaml), "--seq", 4, "--tokens", 4, "--mfu", "40%",
            "--accelerator", "h100")
    plain = run(cli, *args)
    again = run(cli, *args, "--recompute-modules", modules)
    assert again["training"]["exact"] - plain["training"]["exact"] == extra
    assert again["settings"]["recompute"] == modules


def test_train_refuses_core_attn(cli):
    r = cli("train", "llama-3.1-8b", "--mfu", "40%", "--accelerator", "h100",
            "--recompute-modules", "core_attn,mlp")
    assert r.code == 2 and "core_attn" in r.err and len(r.err.strip().splitlines()) == 1
