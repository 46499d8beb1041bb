"""torchtitan's per-op selective activation checkpointing (`--recompute op`): which matmuls run
again, their exact FLOPs, what the layer keeps, and how step times it. The policy read at
torchtitan 820504e, torchtitan/models/llama3/parallelize_llama.py lines 217-266: matmuls are
counted in forward order (the count raised before the test) and those with an even count are
not saved; SDPA is saved; every other op is recomputed."""

from __future__ import annotations

import pytest

from flopcalc.commands import load
from flopcalc.counting.layers import layer_activations
from flopcalc.counting.memory import Setup
from flopcalc.counting.model import recomputed_flops
from flopcalc.counting.recompute import op_reruns
from flopcalc.counting.workload import Workload
from flopcalc.predict import steptime as S

pytestmark = [pytest.mark.hand]

# A tiny Llama block: d 64, 4 heads of 16, 2 KV heads (K and V 32 wide), SwiGLU f 96, 2 layers
TINY = ["d_model=64", "n_heads=4", "n_kv_heads=2", "d_ff=96", "n_layers=2", "vocab_size=100"]
LLAMA = [("attn.q", "column"), ("attn.k", "column"), ("attn.v", "column"), ("attn.o", "row"),
         ("mlp.gate", "column"), ("mlp.up", "column"), ("mlp.down", "row")]



def names(gemms: list[tuple[str, str]], routed: bool) -> set[str]:
    """The names of the matmuls op_reruns marks, position by position."""
    again = op_reruns([role for _, role in gemms], routed)
    assert len(again) == len(gemms)
    return {name for (name, _), rerun in zip(gemms, again) if rerun}


def test_every_second_matmul_of_a_llama_block_runs_again():
    # torchtitan's wq, wk, wv, wo, w1, w3, w2 counted 1..7: even counts 2, 4, 6 = wk, wo, w3
    # (flopcalc's gate is w1, silu's input; up is w3)
    assert names(LLAMA, routed=False) == {"attn.k", "attn.o", "mlp.up"}


def test_the_rerun_matmuls_exact_flops_tiny_llama():
    spec = load("llama-3.1-8b", TINY).spec
    # per layer, 16 tokens: wk 2·16·64·32 = 65,536; wo 2·16·64·64 = 131,072;
    # w3 2·16·64·96 = 196,608; 393,216 a layer, 786,432 for 2 layers
    assert recomputed_flops(spec, Workload(16, 16, 1, "causal"), "op") == 786_432


def test_llama_3_1_8b_reruns_36_5_percent_of_its_layer_matmuls():
    spec = load("llama-3.1-8b").spec
    # one token: 32 layers · 2·4096·(1024 + 4096 + 14336) = 64·4096·19456 = 5,100,273,664;
    # of 32 · 2·4096·(2·4096 + 2·1024 + 3·14336) = 64·4096·53248: 19456/53248 = 36.5%
    assert recomputed_flops(spec, Workload(1, 1, 1, "causal"), "op") == 5_100_273_664
    assert round(100 * 19456 / 53248, 1) == 36.5


def test_a_routed_layers_experts_and_router_always_run_again():
    # grouped GEMMs are not aten.mm and not saved; the router is forced to recompute uncounted
    # (torchtitan b5bcd76, force_recompute_mm_shapes_by_fqns = ["moe.router.gate"]): the
    # count runs q1 k2 v3 o4, shared gate 5, up 6, down 7
    spec = load("llama-4-scout", ["d_model=64", "n_heads=4", "n_kv_heads=2", "n_layers=4",
                                  "vocab_size=100"]).spec
    prof = S.profile(spec, 16)
    gemms = [(g.name, g.role) for g in prof.layers[0].gemms]
    assert names(gemms, routed=True) == {
        "attn.k", "attn.o", "mlp.router", "mlp.experts.gate", "mlp.experts.up",
        "mlp.experts.down", "mlp.shared.up"}


def test_what_the_layer_keeps_tiny_llama():
    layer = load("llama-3.1-8b", TINY).spec.groups()[0].layer
    kept = layer_activations(layer, 64, Setup(seq=16, batch=1, tp=1, flash=True,
                                              recompute="op", dropout=False))
    # input 2·16·64 = 2,048; wq's output 2,048; wv's 2·16·32 = 1,024; w1's 2·16·96 = 3,072;
    # w2's 2,048; SDPA's output 2·16·64 = 2,048 and fp32 log-sum-exp 4·16·4 = 256
    assert {p.name: p.value for p in kept} == {
        "layer_input": 2048, "attn.q.output": 2048, "attn.v.output": 1024,
        "mlp.gate.output": 3072, "mlp.down.output": 2048, "attn.attention_output": 2048,
        "attn.logsumexp": 256}
    assert sum(p.value for p in kept) == 12_544


def test_tensor_and_sequence_parallel_keep_the_local_share():
    layer = load("llama-3.1-8b", TINY).spec.groups()[0].layer
    kept = {p.name: p.value for p in layer_activations(
        layer, 64, Setup(seq=16, batch=1, tp=2, flash=True, recompute="op", dropout=False,
                         sequence_parallel=True))}
    # input 2,048/2; column outputs /2: wq 1,024, wv 512, w1 1,536; w2's partial sum whole
    # (2,048) and its reduce-scatter's half (1,024); SDPA 1,024 and 128
    assert kept == {"layer_input": 1024, "attn.q.output": 1024, "attn.v.output": 512,
                    "mlp.gate.output": 1536, "mlp.down.output": 2048,
                    "mlp.down.reduce_scatter": 1024, "attn.attention_output": 1024,
                    "attn.logsumexp": 128}


ENDS = ("low", "estimate", "high")
MC = S.Machine(matmul_peak=1e15, attention_peak=5e14, hbm=4e12, matmul_share=0.8, sms=100,
               attention_forward=dict(zip(ENDS, (0.7, 0.6, 0.5))),
               attention_backward=dict(zip(ENDS, (0.5, 0.4, 0.3))),
               memory_share=dict(zip(ENDS, (0.9, 0.9, 0.9))),
               net=S.Net(domain=8, up=1e11, out=1e10, base=1e-5, lat_up=1e-6, lat_out=5e-6))


def test_step_reruns_those_matmuls_and_every_memory_bound_kernel_not_attention():
    prof = S.profile(load("llama-3.1-8b").spec, 1024)
    (lp,) = prof.layers
    c = S.layer_compute(lp, prof, S.Layout(flash=True, recompute="op"), MC, "estimate")
    shapes = {g.name: g for g in lp.gemms}
    again = sum(S.gemm_time(1024, shapes[n].n_out, shapes[n].n_in, MC, "estimate")
                for n in ("attn.k", "attn.o", "mlp.up"))
    assert c.recompute == pytest.approx(again + c.mem_f)
    assert c.recompute < c.gemm_f + c.mem_f  # the attention core is not run again


@pytest.mark.behaviour
def test_cli_takes_op_and_refuses_it_with_megatron_modules(cli):
    base = ["step", "llama-3.1-8b", "--accelerator", "h100-sxm", "--seq", "4096",
            "--global-batch", "8", "--dp", "8", "--micro-batch", "1", "--zero", "3"]
    r = cli(*base, "--recompute", "op", "-f", "json")
    assert r.code == 0 and r.json()["layout"]["recompute"] == "op"
    r = cli(*base, "--recompute", "op", "--recompute-modules", "mlp")
    assert r.code == 2 and "torchtitan" in r.err and len(r.err.strip().splitlines()) == 1


def test_mfu_hfu_adds_the_rerun_matmuls_per_token(cli):
    # Llama 3.1 8B: 5,100,273,664 FLOPs per token run again (above), the HFU row's difference
    rows = {}
    for r in ("none", "op"):
        out = cli("mfu", "llama-3.1-8b", "--accelerator", "h100-sxm", "--count", "8", "--seq",
                  "8192", "--tokens-per-second", "60000", "--recompute", r, "-f", "json")
        rows[r] = next(x["flops_per_token"] for x in out.json()["rows"]
                       if x["name"] == "hfu_exact_causal")
    assert rows["op"] - rows["none"] == 5_100_273_664


@pytest.mark.behaviour
def test_memory_keeps_the_hand_counted_bytes_and_says_how(cli):
    # Llama 3.1 8B at 1,024 tokens, one layer: input 8,388,608; wq 8,388,608; wv 2·1024·1024 =
    # 2,097,152; w1 2·1024·14336 = 29,360,128; w2 8,388,608; SDPA 8,388,608 and 4·1024·32 =
    # 131,072: 65,142,784 bytes a layer, against the 32 layers' total
    out = cli("memory", "llama-3.1-8b", "--recompute", "op", "--seq", "1024", "-f",
              "json").json()
    assert any("torchtitan's per-op" in c for c in out["conventions"])
    layers = cli("memory", "llama-3.1-8b", "--recompute", "full", "--seq", "1024", "-f",
                 "json").json()
    # full keeps 2·1024·4096 = 8,388,608 a layer; op keeps 56,754,176 more a layer
    assert out["memory"]["activations"] - layers["memory"]["activations"] == 32 * 56_754_176


@pytest.mark.behaviour
def test_the_host_issues_the_forward_again_as_under_full():
    # the checkpoint re-runs the block's forward function: every operator is dispatched again
    prof = S.profile(load("llama-3.1-8b").spec, 1024)
    none, op, full = (S.host_time(prof, S.Layout(recompute=r), "estimate", 32)
                      for r in ("none", "op", "full"))
    assert op == full and op[1] == pytest.approx(none[1] + none[0]) and op[0] == none[0]
