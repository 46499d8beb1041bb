"""`flopcalc infer`, `flopcalc train`, `flopcalc accelerators`: every number against a hand-worked
closed form (the small models below are sized so the working fits in a comment), the issues'
golden figures, the JSON/CSV/table outputs, and every error path."""

from __future__ import annotations

import csv
import io
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flopcalc.predict.roofline import decode_time
from flopcalc.models.accelerators import accelerator_names, load_accelerator
from flopcalc.numbers import parse_share

from tests.conftest import ROOT, run

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

# A small GQA model whose counts are easy to write by hand: 3 layers, d 64, 8 heads of 8
# (d_q 64), 2 KV heads (d_kv 16), gated MLP of 96, vocabulary 100, untied.
SMALL = """n_layers: 3
d_model: 64
n_heads: 8
n_kv_heads: 2
d_ff: 96
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 100
tie_embeddings: false
max_seq_len: 4096
"""
L, D, D_Q, D_KV, F, V = 3, 64, 64, 16, 96, 100
# Matmul weights: q, o (d×d_q), k, v (d×d_kv), gate/up/down (d×f) per layer; LM head d×V:
# 3·(2·4096 + 2·1024 + 3·6144) + 6400 = 3·28,672 + 6,400 = 92,416.
MATMUL_WEIGHTS = L * (2 * D * D_Q + 2 * D * D_KV + 3 * D * F) + D * V
assert MATMUL_WEIGHTS == 92_416
# Parameters: matmul weights + token table 6,400 + norms 64·(2·3 + 1) = 448 → 99,264.
PARAMS = MATMUL_WEIGHTS + V * D + D * (2 * L + 1)
KV_PER_TOKEN_PER_LAYER = 2 * D_KV  # K and V of the 2 KV heads: 32 values


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return str(path)


@pytest.fixture
def windowed(tmp_path):
    """The same model with a window of 16 on layers 0 and 1; layer 2 is full (global_every 3)."""
    path = tmp_path / "windowed.yaml"
    path.write_text(SMALL + "sliding_window: 16\nglobal_every: 3\n")
    return str(path)


def step(context: int, batch: int = 1) -> int:
    """One decode step per sequence: 2 × matmul weights + 4·c·d_q per layer (scores and AV at
    2·d_h per head and key), for c keys in every layer."""
    return batch * (2 * MATMUL_WEIGHTS + 4 * context * D_Q * L)


def windowed_step(c: int, batch: int = 1) -> int:
    """Layers 0 and 1 see min(c, 16) keys; layer 2 sees c."""
    return batch * (2 * MATMUL_WEIGHTS + 4 * D_Q * (2 * min(c, 16) + c))


def infer(cli, *args) -> dict:
    return run(cli, "infer", *args)


# ------------------------------------------------------------------------------ decode FLOPs

@pytest.mark.parametrize("prompt, gen, batch", [(1, 1, 1), (10, 7, 1), (100, 64, 3)])
def test_decode_closed_form(cli, small, prompt, gen, batch):
    d = infer(cli, small, "--prompt", prompt, "--gen", gen, "--batch", batch)["decode"]
    assert (d["context_first"], d["context_last"]) == (prompt + 1, prompt + gen)
    assert d["flops_first"] == step(prompt + 1, batch)
    assert d["flops_last"] == step(prompt + gen, batch)
    assert d["flops"] == sum(step(prompt + i, batch) for i in range(1, gen + 1))
    # Σ_{i=1..G} (P + i) = G·P + G(G+1)/2 keys in all.
    keys = gen * prompt + gen * (gen + 1) // 2
    assert d["flops"] == batch * (gen * 2 * MATMUL_WEIGHTS + 4 * D_Q * L * keys)
    assert d["flops"] == d["weights"] + d["attention"] == sum(d["components"].values())
    assert d["weights"] == gen * batch * 2 * MATMUL_WEIGHTS


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=st.integers(1, 60), gen=st.integers(1, 40), batch=st.integers(1, 3))
def test_windowed_decode_step_by_step(tmp_path_factory, capsys, prompt, gen, batch):
    """With a window the keys of a step stop growing at w: every step and the sum against the
    per-step formula, for prompts shorter and longer than the window."""
    from flopcalc.cli import main

    path = tmp_path_factory.mktemp("w") / "windowed.yaml"
    path.write_text(SMALL + "sliding_window: 16\nglobal_every: 3\n")
    capsys.readouterr()
    assert main(["infer", str(path), "--prompt", str(prompt), "--gen", str(gen), "--batch",
                 str(batch), "-f", "json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)["decode"]
    assert d["flops_first"] == windowed_step(prompt + 1, batch)
    assert d["flops_last"] == windowed_step(prompt + gen, batch)
    assert d["flops"] == sum(windowed_step(prompt + i, batch) for i in range(1, gen + 1))


@pytest.mark.parametrize("name, matmul_weights", [
    # GPT-2: 12 layers of 4·768² + 2·768·3072, plus the tied LM head 768·50,257.
    ("gpt2", 12 * (4 * 768**2 + 2 * 768 * 3072) + 768 * 50257),
    # Llama 3.1 8B: every parameter but the 128,256·4096 token table and the 65 norms of 4096.
    ("llama-3.1-8b", 8_030_261_248 - 128_256 * 4096 - 65 * 4096),
])
def test_decode_weight_flops_are_twice_the_matmul_weights(cli, name, matmul_weights):
    d = infer(cli, name, "--prompt", 4, "--gen", 1)["decode"]
    assert d["weights"] == 2 * matmul_weights


@pytest.mark.parametrize("name, d_q, layers", [("llama-3.1-8b", 4096, 32), ("gpt2", 768, 12)])
def test_decode_attention_is_4_c_dq_per_layer_and_ignores_gqa(cli, name, d_q, layers):
    d = infer(cli, name, "--prompt", 999, "--gen", 1, "--batch", 2)["decode"]
    assert d["attention"] == 2 * 4 * 1000 * d_q * layers


@pytest.mark.parametrize("attention", ["full", "causal"])
def test_prefill_by_hand(cli, small, attention):
    # 50 prompt tokens x batch 2: weights 2·T·matmul weights (LM head on every token);
    # attention 4·d_q·pairs per layer: 50² (full) or 50·51/2 (causal).
    doc = infer(cli, small, "--prompt", 50, "--gen", 1, "--batch", 2, "--attention", attention)
    pairs = 50 * 50 if attention == "full" else 50 * 51 // 2
    p = doc["prefill"]
    assert p["weights"] == 2 * 100 * MATMUL_WEIGHTS
    assert p["attention"] == 2 * 4 * D_Q * pairs * L
    assert p["flops"] == p["weights"] + p["attention"]


def test_windowed_prefill_counts_the_mask_under_causal(cli, windowed):
    # 40 tokens: window layers Σ min(i, 16) = 136 + 24·16 = 520 pairs; the full layer 820.
    doc = infer(cli, windowed, "--prompt", 40, "--gen", 1, "--attention", "causal")
    assert doc["prefill"]["attention"] == 4 * D_Q * (2 * 520 + 820)
    full = infer(cli, windowed, "--prompt", 40, "--gen", 1, "--attention", "full")
    assert full["prefill"]["attention"] == 4 * D_Q * 3 * 1600  # every pair, as FlopCounterMode


def test_one_attention_default_everywhere(cli):
    # infer predicts times: it counts the pairs the kernels compute unless told otherwise, and
    # its roofline takes the same count
    doc = infer(cli, "gpt2", "--prompt", 512, "--gen", 64, "--accelerator", "h100")
    assert doc["settings"]["attention"] == "causal" == doc["roofline"]["attention"]
    assert doc["roofline"]["prefill_flops"] == doc["prefill"]["flops"]


def test_gen_zero_counts_the_prompt_only(cli, small):
    doc = infer(cli, small, "--prompt", 30, "--gen", 0)
    assert doc["decode"] is None
    assert doc["kv_cache"]["tokens"] == 30
    assert doc["kv_cache"]["bytes"] == 30 * L * KV_PER_TOKEN_PER_LAYER * 2
    assert doc["total_flops"] == doc["prefill"]["flops"]


# ----------------------------------------------------------------------------------- bytes

def test_llama_8b_kv_cache_at_131072_tokens(cli):
    """The issue's figure: bf16, 131,072 cached tokens → 131,072 B per token, 17,179,869,184 B."""
    doc = infer(cli, "llama-3.1-8b", "--prompt", "124k", "--gen", "4k", "--kv-dtype", "bf16")
    kv = doc["kv_cache"]
    assert kv["tokens"] == 131_072
    assert kv["bytes_per_token"] == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv["bytes"] == 17_179_869_184
    assert kv["mha_bytes"] == 68_719_476_736 and kv["factor"] == 4.0 and kv["kind"] == "gqa"
    assert doc["weights"]["bytes"] == 2 * 8_030_261_248


def test_mistral_window_keeps_4096_tokens(cli):
    """The issue's figure: Mistral 7B v0.1 at 30k + 2k holds 32 × 4,096 × 4,096 B in bf16."""
    from tests.conftest import DATA

    doc = infer(cli, DATA / "hf" / "mistral-7b-v0.1.json", "--prompt", "30k", "--gen", "2k")
    kv = doc["kv_cache"]
    assert kv["bytes_per_token"] == 32 * 2 * 8 * 128 * 2 == 131_072
    assert kv["bytes"] == 32 * 4096 * 4096 == 536_870_912  # not 4 GiB
    assert kv["layers"] == {"decoder.window_4096": 536_870_912}


def test_windowed_cache_per_kind_of_layer(cli, windowed):
    # 40 tokens: window layers keep 16, the full layer 40; 32 values of 2 bytes each.
    kv = infer(cli, windowed, "--prompt", 30, "--gen", 10)["kv_cache"]
    assert kv["layers"] == {"decoder.window_16": 2 * 16 * 32 * 2, "decoder.full": 40 * 32 * 2}
    assert kv["bytes"] == sum(kv["layers"].values())


@pytest.mark.parametrize("name, factor", [("llama-3.1-8b", 4), ("llama-3.1-70b", 8),
                                          ("llama-3.1-405b", 16), ("gpt2", 1), ("gpt3", 1)])
def test_gqa_saving_is_heads_over_kv_heads(cli, name, factor):
    kv = infer(cli, name, "--prompt", 100, "--gen", 28, "--batch", 3)["kv_cache"]
    assert kv["mha_bytes"] == factor * kv["bytes"] and kv["factor"] == factor
    assert kv["saving_bytes"] == kv["mha_bytes"] - kv["bytes"]
    assert kv["tokens"] == 3 * 128


@pytest.mark.parametrize("dtype, bits", [("fp32", 32), ("bf16", 16), ("fp16", 16), ("fp8", 8),
                                         ("int8", 8), ("int4", 4)])
def test_weight_dtype_sizes(cli, dtype, bits):
    doc = infer(cli, "gpt2", "--prompt", 10, "--gen", 6, "--weights-dtype", dtype)
    assert doc["weights"]["bytes"] == 124_439_808 * bits // 8


@pytest.mark.parametrize("dtype, nbytes", [("fp32", 4), ("bf16", 2), ("fp8", 1), ("int8", 1)])
def test_kv_dtype_sizes(cli, dtype, nbytes):
    doc = infer(cli, "gpt2", "--prompt", 10, "--gen", 6, "--kv-dtype", dtype)
    assert doc["kv_cache"]["bytes_per_token"] == 2 * 12 * 768 * nbytes


def test_decode_bytes_follow_the_stated_convention(cli, small):
    d = infer(cli, small, "--prompt", 50, "--gen", 8, "--batch", 2, "--kv-dtype", "fp8")
    # The untied 100×64 token table is a lookup: a step reads only the 2 rows its tokens use.
    weights = (PARAMS - (V - 2) * D) * 2  # bf16
    kv = L * KV_PER_TOKEN_PER_LAYER * 1  # fp8: 96 bytes per token
    assert d["kv_cache"]["bytes_per_token"] == kv
    dec = d["decode"]
    # every weight once + the K/V of the c keys read + the new K/V written, per sequence
    assert dec["bytes_first"] == weights + 2 * 51 * kv + 2 * kv
    assert dec["bytes_last"] == weights + 2 * 58 * kv + 2 * kv
    assert dec["bytes"] == sum(weights + 2 * ctx * kv + 2 * kv for ctx in range(51, 59))
    assert dec["bytes"] == sum(dec["bytes_components"].values())
    assert dec["arithmetic_intensity_first"] == dec["flops_first"] / dec["bytes_first"]
    # 100 prompt tokens read all 100 rows; the prompt's K/V is written.
    assert d["prefill"]["bytes"] == PARAMS * 2 + 2 * 50 * kv


def test_windowed_decode_reads_only_the_window(cli, windowed):
    dec = infer(cli, windowed, "--prompt", 100, "--gen", 1)["decode"]
    weights = (PARAMS - (V - 1) * D) * 2
    per_layer = KV_PER_TOKEN_PER_LAYER * 2  # bf16: 64 bytes per token and layer
    # Step at c = 101: window layers read 16 tokens' K/V each, the full layer 101; each writes 1.
    assert dec["bytes_first"] == weights + per_layer * (2 * 16 + 101) + 3 * per_layer


def test_tied_tables_are_read_in_full_and_positions_by_row(cli):
    # GPT-2 tied: the LM head reads the whole token table; 4 of 1,024 position rows are read.
    d = infer(cli, "gpt2", "--prompt", 10, "--gen", 1, "--batch", 4, "--kv-dtype", "fp8",
              "--weights-dtype", "int8")["decode"]
    assert d["bytes_components"]["weights.read"] == 124_439_808 - (1024 - 4) * 768


# -------------------------------------------------------------------------------- roofline

@settings(max_examples=200, deadline=None, derandomize=True)
@given(a=st.fractions(-50, 50), b=st.fractions(0, 100), p=st.fractions(-50, 50),
       q=st.fractions(0, 100), lo=st.integers(0, 40), n=st.integers(1, 40),
       cut=st.integers(0, 39))
def test_decode_time_is_the_sum_of_step_maxima(a, b, p, q, lo, n, cut):
    hi = lo + n - 1
    compute, memory = (lambda x: a * x + b), (lambda x: p * x + q)
    pieces = [(lo, min(hi, lo + cut)), (min(hi, lo + cut) + 1, hi)]
    t = decode_time(compute, memory, [x for x in pieces if x[0] <= x[1]])
    steps = range(lo, hi + 1)
    assert t.seconds == sum(max(compute(x), memory(x)) for x in steps)
    assert t.compute_bound_steps == sum(compute(x) >= memory(x) for x in steps)
    assert t.compute_bound_steps + t.memory_bound_steps == n


# Llama 3.1 8B by hand: matmul weights 7,504,658,432 (see above), so a decode step costs
# 2·7,504,658,432 + 4·c·4096·32 FLOPs per sequence. bf16 bytes read per step for B sequences:
# every parameter but the token table's unused rows, 2·(8,030,261,248 − (128,256 − B)·4096),
# plus B·c·131,072 of K/V read and B·131,072 written.
LLAMA_MATMUL = 8_030_261_248 - 128_256 * 4096 - 65 * 4096


def llama_step(c: int, batch: int) -> tuple[Fraction, Fraction]:
    flops = batch * (2 * LLAMA_MATMUL + 4 * c * 4096 * 32)
    nbytes = 2 * (8_030_261_248 - (128_256 - batch) * 4096) + batch * (c + 1) * 131_072
    return Fraction(flops, 989_500 * 10**9), Fraction(nbytes, 3_350 * 10**9)


def test_roofline_llama_8b_on_h100_is_memory_bound_at_batch_1(cli):
    doc = infer(cli, "llama-3.1-8b", "--prompt", 2048, "--gen", 256, "--accelerator", "h100")
    a, rf = doc["accelerator"], doc["roofline"]
    assert a["name"] == "h100-sxm"  # the short name
    assert a["peak_flops"] == 989_500_000_000_000 and a["bandwidth"] == 3_350_000_000_000
    assert rf["prefill"]["binds"] == "compute"
    assert rf["decode"]["binds"] == "memory" and rf["decode"]["compute_bound_steps"] == 0
    times = [llama_step(c, 1) for c in range(2049, 2305)]
    assert rf["decode"]["first"]["seconds"] == pytest.approx(float(times[0][1]), rel=1e-12)
    assert rf["decode"]["seconds"] == pytest.approx(float(sum(max(t) for t in times)), rel=1e-12)
    assert rf["decode"]["tokens_per_s"] == pytest.approx(256 / rf["decode"]["seconds"])
    assert rf["memory"]["fits"] is True


def test_roofline_prefill_counts_causal_attention_and_rates_name_their_scope(cli):
    """The prefill bound is taken on the FLOPs the report counts, one convention for counts and
    times (causal by default): Llama 3.1 8B at prompt 2048, batch 3, by hand. Matmuls
    2·7,504,658,432 per token; scores and values 4·4096·32 per visible pair, 2048·2049/2 pairs
    per sequence causal, 2048² full, 32 layers. Decode rates: 3·256 tokens in all, 256 per
    sequence, over the same seconds."""
    tokens = 3 * 2048
    pairs = {"causal": 3 * 2048 * 2049 // 2, "full": 3 * 2048 * 2048}
    for attention in ("full", "causal"):
        counted = tokens * 2 * LLAMA_MATMUL + pairs[attention] * 4 * 4096 * 32
        doc = infer(cli, "llama-3.1-8b", "--prompt", 2048, "--gen", 256, "--batch", 3,
                    "--accelerator", "h100", "--attention", attention)
        rf = doc["roofline"]
        assert rf["prefill_flops"] == counted == doc["prefill"]["flops"]
        assert rf["attention"] == attention
        assert rf["prefill"]["compute_s"] == pytest.approx(counted / 989.5e12, rel=1e-12)
        rd = rf["decode"]
        assert rd["tokens_per_s_aggregate"] == pytest.approx(768 / rd["seconds"], rel=1e-12)
        assert rd["tokens_per_s_per_sequence"] == pytest.approx(256 / rd["seconds"], rel=1e-12)
        assert rd["seconds_per_step"] == pytest.approx(rd["seconds"] / 256, rel=1e-12)
        assert any(f"the prefill's bound on the FLOPs above (attention {attention}" in line
                   for line in doc["conventions"])


def test_roofline_switches_from_compute_to_memory_as_the_cache_grows(cli):
    """At batch 1024 a short context is compute-bound; the growing cache reads make the later
    steps memory-bound. The total is the sum of per-step maxima, checked step by step."""
    doc = infer(cli, "llama-3.1-8b", "--prompt", 100, "--gen", 900, "--batch", 1024,
                "--accelerator", "h100-sxm")
    rd = doc["roofline"]["decode"]
    assert rd["first"]["binds"] == "compute" and rd["last"]["binds"] == "memory"
    assert rd["binds"] == "compute, then memory"
    times = [llama_step(c, 1024) for c in range(101, 1001)]
    assert rd["seconds"] == pytest.approx(float(sum(max(t) for t in times)), rel=1e-12)
    assert rd["compute_bound_steps"] == sum(comp >= mem for comp, mem in times)
    assert 0 < rd["compute_bound_steps"] < 900


def test_count_multiplies_peak_and_bandwidth(cli):
    one = infer(cli, "llama-3.1-70b", "--prompt", 1000, "--gen", 100, "--accelerator", "h200")
    eight = infer(cli, "llama-3.1-70b", "--prompt", 1000, "--gen", 100, "--accelerator", "h200",
                  "--count", 8)
    assert eight["accelerator"]["total_peak_flops"] == 8 * one["accelerator"]["peak_flops"]
    assert eight["accelerator"]["total_bandwidth"] == 8 * one["accelerator"]["bandwidth"]
    assert eight["roofline"]["decode"]["seconds"] == pytest.approx(
        one["roofline"]["decode"]["seconds"] / 8)
    # 141.1 GB of weights fit the 143,771 MiB = 150,755,065,856 bytes an H200's driver
    # reports, though not its nominal 141 GB; with a 90% share (135.7 GB) they do not.
    assert one["accelerator"]["memory_bytes"] == 143_771 * 2**20
    assert one["roofline"]["memory"]["fits"] is True
    tight = infer(cli, "llama-3.1-70b", "--prompt", 1000, "--gen", 100, "--accelerator", "h200",
                  "--memory-fraction", "90%")
    assert tight["accelerator"]["memory_bytes"] == 143_771 * 2**20 * 9 // 10
    assert tight["roofline"]["memory"]["fits"] is False
    assert eight["roofline"]["memory"]["fits"] is True


def test_max_batch_is_the_largest_that_fits(cli, small):
    # On a custom 1 MB device: weights 99,264·2 = 198,528 B; a sequence of 110 tokens caches
    # 110·3·32·2 = 21,120 B; (1,000,000 − 198,528) // 21,120 = 37.
    path = small.replace("small.yaml", "chip.yaml")
    with open(path, "w") as fh:
        fh.write("title: Tiny\nvendor: me\nsource: test\nmemory_bytes: 1MB\n"
                 "memory_bandwidth: 1GB\npeak_flops: {bf16: 1T}\n")
    doc = infer(cli, small, "--prompt", 100, "--gen", 10, "--accelerator", path)
    assert doc["roofline"]["memory"]["max_batch"] == 37
    assert doc["accelerator"]["memory_bytes"] == 10**6


def test_peak_and_bandwidth_override(cli):
    doc = infer(cli, "gpt2", "--prompt", 100, "--gen", 10, "--accelerator", "a100-sxm-80gb",
                "--peak", "100T", "--bandwidth", "1.5TB")
    a = doc["accelerator"]
    assert (a["peak_flops"], a["bandwidth"]) == (10**14, 1_500_000_000_000)
    assert a["peak_overridden"] and a["bandwidth_overridden"]
    custom = infer(cli, "gpt2", "--prompt", 100, "--gen", 10, "--peak", "1P",
                   "--bandwidth", "3.35e12", "--count", 2)
    assert custom["accelerator"]["name"] == "custom"
    assert custom["accelerator"]["total_peak_flops"] == 2 * 10**15


def test_compute_dtype_picks_the_peak_and_weights_dtype_the_bytes(cli):
    # An A100 serves int8 weights with bf16 compute.
    doc = infer(cli, "gpt2", "--prompt", 100, "--gen", 10, "--accelerator", "a100",
                "--weights-dtype", "int8")
    assert doc["accelerator"]["dtype"] == "bf16"
    assert doc["accelerator"]["peak_flops"] == 312 * 10**12
    assert doc["weights"]["bytes"] == 124_439_808
    fp8 = infer(cli, "gpt2", "--prompt", 100, "--gen", 10, "--accelerator", "h100-sxm",
                "--compute-dtype", "fp8")
    assert fp8["accelerator"]["peak_flops"] == 1_979_000_000_000_000


def test_memory_warning_goes_to_stderr(cli):
    r = cli("infer", "llama-3.1-405b", "--prompt", 1000, "--gen", 10, "--accelerator",
            "h100-sxm", "-f", "json")
    assert r.code == 0 and "need" in r.err and "the times assume they fit" in r.err
    assert r.json()["roofline"]["memory"]["fits"] is False


def test_context_warning(cli):
    r = cli("infer", "gpt2", "--prompt", 1000, "--gen", 100, "-f", "json")
    assert r.code == 0 and "exceeds gpt2's context of 1,024" in r.err
    assert r.json()["warnings"]


# ----------------------------------------------------------------------------------- train

def train(cli, *args) -> dict:
    return run(cli, "train", *args)


def test_gpt3_on_1024_h100_at_40_pct_mfu(cli):
    """The issue's figure, worked by hand: N = 174,604,259,328 − 50,257·12,288 − 2,048·12,288
    = 173,961,535,488; 6ND = 6·N·3e11 = 3.131e23 FLOPs; the cluster sustains
    1,024 × 989.5e12 × 0.4 = 4.053e17 FLOP/s; 3.131e23 / 4.053e17 = 772,591 s = 8.94 days,
    × 1,024 / 3,600 = 219,759 H100-hours."""
    doc = train(cli, "gpt3", "--tokens", "300B", "--accelerator", "h100-sxm", "--count", 1024,
                "--mfu", "40%", "--attention", "full")
    n = 174_604_259_328 - 50_257 * 12_288 - 2_048 * 12_288
    six_nd = 6 * n * 300 * 10**9
    sustained = Fraction(1024 * 989_500 * 10**9 * 2, 5)
    assert doc["training"]["six_nd"] == six_nd
    assert doc["achieved_flops"] == float(sustained)
    assert doc["days"]["six_nd"] == pytest.approx(float(six_nd / sustained / 86_400), rel=1e-12)
    assert round(doc["days"]["six_nd"], 2) == 8.94
    assert round(doc["accelerator_hours"]["six_nd"]) == 219_759
    # Exact: 3 × 358,791,143,424 FLOPs per token (presets/test_published_figures) × 3e11.
    assert doc["training"]["exact"] == 3 * 358_791_143_424 * 300 * 10**9
    assert doc["training"]["passes"] == 3 and doc["cost"] is None


def test_recompute_full_is_four_passes(cli):
    doc = train(cli, "gpt3", "--tokens", "300B", "--accelerator", "h100", "--count", 1024,
                "--mfu", "40%", "--recompute", "full", "--attention", "full")
    assert doc["training"]["exact"] == 4 * 358_791_143_424 * 300 * 10**9
    assert doc["training"]["passes"] == 4 and doc["settings"]["recompute"] == "full"


def test_price_gives_the_cost(cli):
    doc = train(cli, "gpt3", "--tokens", "300B", "--accelerator", "h100", "--count", 1024,
                "--mfu", "40%", "--price", "2.50")
    assert doc["cost"]["six_nd"] == pytest.approx(doc["accelerator_hours"]["six_nd"] * 2.5,
                                                  rel=1e-12)
    assert doc["settings"]["price"] == 2.5


def test_days_give_the_devices_needed(cli):
    # 6ND-exact GPT-3 needs 3.22912e23 FLOPs; in 30 days at 40% of 989.5T each device does
    # 30·86,400·395.8e12 = 1.0259e21, so ⌈3.22912e23 / 1.0259e21⌉ = ⌈314.76⌉ = 315 devices.
    doc = train(cli, "gpt3", "--tokens", "300B", "--accelerator", "h100", "--days", 30,
                "--mfu", "40%", "--attention", "full")
    need = Fraction(3 * 358_791_143_424 * 300 * 10**9) / (30 * 86_400 * Fraction(3958, 10) * 10**12)
    assert doc["accelerator"]["count"] == -(-need.numerator // need.denominator) == 315
    assert doc["days"]["exact"] <= 30 < doc["days"]["exact"] * 315 / 314


@pytest.mark.parametrize("mfu", ["0.4", "40%", ".4"])
def test_mfu_spellings(cli, mfu):
    assert train(cli, "gpt2", "--accelerator", "a100-sxm-80gb", "--mfu", mfu)["settings"][
        "mfu"] == 0.4


def test_train_works_for_encoder_decoder_and_peak_only(cli):
    doc = train(cli, "transformer-base", "--peak", "312T", "--mfu", 0.5, "--tokens", "1e9")
    assert doc["accelerator"]["name"] == "custom"


def test_train_defaults_say_where_they_come_from(cli):
    doc = train(cli, "gpt3", "--accelerator", "b200", "--mfu", "0.5")
    assert doc["settings"]["tokens"] == 300 * 10**9
    assert doc["settings"]["tokens_source"].startswith("published")
    llama = train(cli, "llama-3.1-70b", "--accelerator", "h100", "--count", 16384, "--mfu", "0.4")
    assert llama["settings"]["seq"] == 8192  # the pre-training length, not the 131,072 context


# ---------------------------------------------------------------------- outputs and contract

def dig(doc, dotted):
    for key in dotted.split("."):
        doc = doc[key]
    return doc


def test_infer_json_keys_and_exact_ints(cli):
    doc = infer(cli, "llama-3.1-8b", "--prompt", "8k", "--gen", 512, "--accelerator", "mi300x")
    for key in ("schema_version", "settings.prompt", "settings.gen", "settings.batch",
                "settings.attention", "settings.kv_dtype", "settings.weights_dtype",
                "settings.compute_dtype", "prefill.flops", "decode.flops_first",
                "decode.flops_last", "decode.flops", "decode.flops_per_token",
                "decode.arithmetic_intensity", "kv_cache.bytes_per_token", "kv_cache.bytes",
                "kv_cache.mha_bytes", "weights.bytes", "accelerator.peak_flops",
                "roofline.prefill.seconds", "roofline.decode.seconds",
                "roofline.decode.tokens_per_s", "roofline.decode.binds",
                "roofline.memory.max_batch", "conventions"):
        dig(doc, key)
    for key in ("prefill.flops", "decode.flops", "decode.bytes", "kv_cache.bytes",
                "weights.bytes", "accelerator.peak_flops"):
        assert isinstance(dig(doc, key), int)
    assert doc["prefill"]["flops"] == sum(doc["prefill"]["components"].values())
    assert doc["total_flops"] == doc["prefill"]["flops"] + doc["decode"]["flops"]


def test_infer_without_accelerator_has_no_roofline(cli):
    doc = infer(cli, "gpt2", "--prompt", 10, "--gen", 5)
    assert doc["accelerator"] is None and doc["roofline"] is None
    assert not any("roofline" in line for line in doc["conventions"])


@pytest.mark.parametrize("width", ["60", "80", "120"])
@pytest.mark.parametrize("args", [
    ["infer", "llama-3.1-8b", "--prompt", "32k", "--gen", "1k", "--accelerator", "h100-sxm",
     "--count", "2"],
    ["infer", "gpt2", "--prompt", "100", "--gen", "100"],
    ["train", "gpt3", "--accelerator", "h100-sxm", "--count", "1024", "--mfu", "40%"],
    ["accelerators"],
])
def test_tables_fit_and_state_conventions(cli, monkeypatch, width, args):
    monkeypatch.setenv("COLUMNS", width)
    r = cli(*args)
    assert r.code == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= int(width)
    assert "\x1b[" not in r.out
    if args[0] != "accelerators":
        assert "How this was counted" in r.out


def test_infer_table_shows_the_issue_figures(cli):
    out = cli("infer", "llama-3.1-8b", "--prompt", "124k", "--gen", "4k").out
    assert "131,072 (131.1 KB / 128 KiB)" in out
    assert "17,179,869,184 (17.18 GB / 16 GiB)" in out
    assert "saved (4x smaller)" in out


def test_train_table_states_mfu_and_days(cli):
    out = cli("train", "gpt3", "--tokens", "300B", "--accelerator", "h100-sxm", "--count", 1024,
              "--mfu", "40%", "--attention", "full").out
    assert "40% MFU" in out and "9.221 days" in out and "8.942 days" in out
    assert "219,759" in out


@pytest.mark.parametrize("command, args", [
    ("infer", ["--prompt", "1000", "--gen", "24", "--accelerator", "b200"]),
    ("train", ["--accelerator", "tpu-v5p", "--mfu", "0.5"]),
])
def test_csv_starts_with_the_model_and_carries_units(cli, command, args):
    r = cli(command, "llama-3.1-8b", *args, "--format", "csv")
    assert r.code == 0
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert list(rows[0])[0] == "model" and list(rows[0])[-4:] == ["section", "name", "value",
                                                                  "unit"]
    assert all(row["model"] == "llama-3.1-8b" and row["section"] for row in rows)
    values = {(row["section"], row["name"]): row for row in rows}
    assert all(row["value"] not in ("True", "False") for row in rows)
    if command == "infer":
        assert values[("decode", "flops")]["unit"] == "FLOPs"
        assert values[("kv_cache", "bytes")]["unit"] == "bytes"
        assert ("decode.components", "decoder.attn.scores") in values
    else:
        assert int(values[("accelerator", "peak_flops")]["value"]) == 459 * 10**12
        assert values[("accelerator", "perfect_scaling")]["value"] == "true"


def test_two_runs_concatenate_into_one_sheet(cli):
    a = cli("infer", "gpt2", "--prompt", "10", "--gen", "5", "-f", "csv").out.splitlines()
    b = cli("infer", "gpt2", "--prompt", "20", "--gen", "5", "-f", "csv").out.splitlines()
    assert a[0] == b[0]
    rows = list(csv.DictReader(io.StringIO("\n".join(a + b[1:]))))
    assert {row["prompt"] for row in rows} == {"10", "20"}


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_accelerators_in_every_format(cli, fmt):
    r = cli("accelerators", "--format", fmt)
    assert r.code == 0
    for name in ("a100-sxm-80gb", "h100-sxm", "h200", "b200", "mi300x"):
        assert name in r.out
    if fmt == "json":
        doc = r.json()
        rows = {row["name"]: row for row in doc["accelerators"]}
        assert rows["h100-sxm"]["peak_flops"]["bf16"] == 989_500_000_000_000
        assert all(row["source"] for row in rows.values())
        assert doc["short_names"]["h100"] == "h100-sxm"


def test_brief_lines(cli):
    r = cli("infer", "llama-3.1-8b", "--prompt", "1000", "--gen", "100", "--accelerator", "h100",
            "--brief")
    assert r.code == 0 and len(r.out.splitlines()) <= 12
    assert "KV cache" in r.out and "tokens/s" in r.out
    t = cli("train", "gpt3", "--accelerator", "h100", "--count", "1024", "--mfu", "0.4",
            "--brief")
    assert t.code == 0 and "8.942 6ND" in t.out and len(t.out.splitlines()) <= 10
    assert cli("infer", "gpt2", "--prompt", "1", "--gen", "1", "--brief", "-f", "json").code == 2


# ----------------------------------------------------------------------------- the presets

REQUIRED_ACCELERATORS = {"a100-sxm-80gb", "h100-sxm", "h200", "b200", "mi300x"}


def test_compute_dtype_choices_are_the_schema_dtypes():
    from flopcalc.commands import COMMANDS
    from flopcalc.models.accelerators import DTYPES

    assert COMMANDS["infer"].option("compute_dtype").choices == DTYPES
    assert COMMANDS["train"].option("dtype").choices == DTYPES


def test_required_accelerators_ship_with_sources():
    assert REQUIRED_ACCELERATORS <= set(accelerator_names())
    for name in accelerator_names():
        spec = load_accelerator(name).spec
        assert spec.source and "bf16" in spec.peak_flops
        assert spec.peak_flops.get("fp16", spec.peak_flops["bf16"]) == spec.peak_flops["bf16"]


@pytest.mark.parametrize("name, bf16, bandwidth", [
    ("a100-sxm-80gb", 312 * 10**12, 2_039 * 10**9), ("h100-sxm", 989_500 * 10**9, 3_350 * 10**9),
    ("h200", 989_500 * 10**9, 4_800 * 10**9), ("b200", 2_250 * 10**12, 7_700 * 10**9),
    ("mi300x", 1_307_400 * 10**9, 5_300 * 10**9)])
def test_datasheet_figures(name, bf16, bandwidth):
    spec = load_accelerator(name).spec
    assert (spec.peak_flops["bf16"], spec.memory_bandwidth) == (bf16, bandwidth)


@pytest.mark.parametrize("ref", ["H100", "h100", "H100-SXM"])
def test_accelerator_names_ignore_case_and_take_short_names(ref):
    assert load_accelerator(ref).name == "h100-sxm"


# ------------------------------------------------------------------------------------ errors

def one_line_error(r, *fragments):
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("flopcalc: error: ") and r.err.count("\n") == 1, r.err
    for fragment in fragments:
        assert fragment in r.err
    assert "Traceback" not in r.err


def test_infer_refuses_encoder_decoder(cli):
    one_line_error(cli("infer", "transformer-base", "--prompt", 10, "--gen", 10),
                   "infer supports decoder-only models", "transformer-base is encoder-decoder")


def test_refusal_suggests_commands_that_run(cli, tmp_path):
    # a file is named by its path in the commands the message suggests, not by its stem
    (tmp_path / "my enc.yaml").write_text((ROOT / "presets" / "bert-base.yaml").read_text())
    path = str(tmp_path / "my enc.yaml")
    one_line_error(cli("infer", path, "--prompt", 10, "--gen", 10),
                   "my enc is encoder-only", f"flopcalc model '{path}' counts",
                   f"flopcalc train '{path}' its training")
    one_line_error(cli("serve", path, "--accelerator", "h100"),
                   "serve supports decoder-only models", f"flopcalc model '{path}'")


def test_unknown_accelerator_suggests_and_lists(cli):
    r = cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "h100-sx")
    one_line_error(r, "unknown accelerator 'h100-sx'", "did you mean", "'h100-sxm'", "mi300x")
    r = cli("train", "gpt2", "--accelerator", "tpu", "--mfu", 0.4)
    one_line_error(r, "unknown accelerator 'tpu'", "available: a10, a100-pcie-40gb", "h100 = h100-sxm")


@pytest.mark.parametrize("mfu", ["0", "1.5", "150%", "-0.1", "abc", "nan", "inf", "1e-20"])
def test_bad_mfu(cli, mfu):
    one_line_error(cli("train", "gpt2", "--accelerator", "h100-sxm", "--mfu", mfu), "--mfu")


def test_missing_dtype_peak(cli):
    r = cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "a100-sxm-80gb",
            "--compute-dtype", "fp8")
    one_line_error(r, "a100-sxm-80gb has no fp8 peak", "bf16", "--peak")
    one_line_error(cli("train", "gpt2", "--accelerator", "tpu-v5p", "--dtype", "fp8", "--mfu",
                       0.4), "tpu-v5p has no fp8 peak")


@pytest.mark.parametrize("args, fragment", [
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--peak", "1e15"], "--bandwidth is needed"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--bandwidth", "1e12"], "--peak is needed"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--count", 8], "--count multiplies"),
    (["train", "gpt2", "--mfu", 0.4], "train needs --accelerator"),
    (["train", "gpt2", "--mfu", 0.4, "--accelerator", "h100", "--days", 3, "--count", 2],
     "not both"),
    (["infer", "gpt2", "--prompt", 0, "--gen", 10], "--prompt"),
    (["infer", "gpt2", "--prompt", 10, "--gen", "1.5"], "--gen"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--batch", "x"], "--batch"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "h100-sxm", "--peak",
      "fast"], "--peak"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--bandwidth", "80B", "--peak", "1"],
     "ambiguous"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "h100-sxm", "--count",
      "0"], "--count"),
    (["infer", "gtp2", "--prompt", 10, "--gen", 10], "did you mean 'gpt2'"),
])
def test_bad_input_exits_2_in_one_line(cli, args, fragment):
    one_line_error(cli(*map(str, args)), fragment)


@pytest.mark.parametrize("args, fragment", [
    (["infer", "gpt2", "--gen", "10"], "Missing option '--prompt'"),
    (["infer", "gpt2", "--prompt", "10", "--gen", "10", "--kv-dtype", "fp7"], "--kv-dtype"),
    (["train", "gpt2", "--accelerator", "h100-sxm"], "Missing option '--mfu'"),
    (["memory", "gpt3", "--zero", "4"], "'4' is not one of '0', '1', '2', '3'"),
    (["model", "gpt2", "--attention", "sparse"], "'sparse' is not one of 'full', 'causal'"),
    (["model"], "Missing argument 'MODEL'. (see flopcalc model --help)"),
    (["model", "gpt2", "--bogus"], "No such option '--bogus'"),
    (["nosuch"], "No such command 'nosuch'. (see flopcalc --help)"),
    (["--bogus", "model", "gpt2"], "No such option '--bogus'"),
])
def test_usage_errors_are_one_line_too(cli, args, fragment):
    # Click's own usage errors, shown in one line like every other error.
    one_line_error(cli(*args), fragment)
    assert "Usage:" not in cli(*args).err


@pytest.mark.parametrize("text, fragments", [
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 1\n"
     "peak_flops: {bf16: 1}\ncolour: red\n", ["unknown key 'colour'"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 3.35e12x\n"
     "peak_flops: {bf16: 1}\n", ["memory_bandwidth", "is not a number"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 1.5\n"
     "peak_flops: {bf16: 1}\n", ["memory_bandwidth", "not a whole number"]),
    ("title: x\nvendor: y\nmemory_bytes: 1\nmemory_bandwidth: 1\npeak_flops: {bf16: 1}\n",
     ["missing key 'source'"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 1\n"
     "peak_flops: {bf17: 1}\n", ["peak_flops.bf17"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 0\nmemory_bandwidth: 1\n"
     "peak_flops: {bf16: 1}\n", ["memory_bytes", "must be a positive whole number"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 1\npeak_flops: {}\n",
     ["peak_flops"]),
    ("- just\n- a list\n", ["the top level is a list"]),
    ("title: [unclosed\n", ["invalid YAML"]),
])
def test_bad_accelerator_file(cli, tmp_path, text, fragments):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    r = cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", str(path))
    one_line_error(r, str(path), *fragments)


def test_accelerator_file_takes_the_number_syntax(cli, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("title: My chip\nvendor: me\nsource: my datasheet\nmemory_bytes: 64GiB\n"
                    "memory_bandwidth: 2e12\npeak_flops:\n  bf16: 500T\n")
    doc = infer(cli, "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", str(path))
    a = doc["accelerator"]
    assert a["name"] == "mine" and a["title"] == "My chip"
    assert (a["memory_bytes"], a["bandwidth"], a["peak_flops"]) == (64 * 2**30, 2 * 10**12,
                                                                     5 * 10**14)
    one_line_error(cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator",
                       str(tmp_path / "absent.yaml")), "no such accelerator file")


@pytest.mark.parametrize("text, value", [("0.4", Fraction(2, 5)), ("40%", Fraction(2, 5)),
                                         ("100%", 1), ("1", 1), ("0.385", Fraction(77, 200))])
def test_parse_share(text, value):
    assert parse_share(text, "--mfu") == value


def test_validated_accelerators_are_remembered_and_rechecked(cli, tmp_path, monkeypatch):
    """A mapping that passed validation skips pydantic next time; a planted digest of an
    invalid file lets nothing through."""
    import json

    from flopcalc.models import cache, validation

    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "chip.yaml"
    good = ("title: Chip\nvendor: me\nsource: sheet\nmemory_bytes: 1000\n"
            "memory_bandwidth: 1000\npeak_flops: {bf16: 1000}\n")
    path.write_text(good)
    first = load_accelerator(str(path)).spec
    store = tmp_path / "cache" / "accelerators.json"
    assert store.is_file()
    with monkeypatch.context() as m:
        m.setattr(validation, "validate_declared", lambda *a: pytest.fail("validated again"))
        assert load_accelerator(str(path)).spec == first
    bad = good.replace("bf16: 1000", "bf16: -5")
    path.write_text(bad)
    data = json.loads(store.read_text())
    data["validated"].append(cache.key({**{k: v for k, v in first.__dict__.items()},
                                        "peak_flops": {"bf16": -5}}))
    store.write_text(json.dumps(data))
    one_line_error(cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", str(path)),
                   "peak_flops")

@pytest.mark.parametrize("name, mib", [("h100-sxm", 81_559), ("h200", 143_771),
                                       ("b200", 183_359), ("a100-sxm-80gb", 81_920),
                                       ("a100-pcie-40gb", 40_960)])
def test_usable_memory_is_what_the_driver_reports(cli, name, mib):
    """nvidia-smi's totals in MiB, as the cited logs print them."""
    rows = {r["name"]: r for r in cli("accelerators", "-f", "json").json()["accelerators"]}
    assert rows[name]["usable_memory_bytes"] == mib * 2**20
    assert f"{mib:,} MiB" in rows[name]["usable_memory_source"]
