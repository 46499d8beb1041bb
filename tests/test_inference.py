"""`flopcalc infer`, `flopcalc train`, `flopcalc accelerators`: the numbers (closed forms, the
issue's golden figures, invariants), the JSON/CSV/table outputs, and every error path."""

from __future__ import annotations

import csv
import io
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flopcalc import counting as c
from flopcalc import inference as inf
from flopcalc.accelerators import Accelerator, accelerator_names, load_accelerator
from flopcalc.config import ModelConfig
from flopcalc.errors import FlopcalcError
from flopcalc.numbers import parse_fraction
from flopcalc.registry import LoadedModel, load_model

# A small GQA model whose counts are easy to write by hand: d 64, 8 heads of 8, 2 KV heads.
SMALL = ModelConfig(n_layers=3, d_model=64, n_heads=8, n_kv_heads=2, d_ff=96, mlp="gated",
                    activation="silu", norm="rmsnorm", positions="rotary", vocab_size=100,
                    tie_embeddings=False, max_seq_len=4096).resolve()
L, D, D_Q, D_KV, F, V = 3, 64, 64, 16, 96, 100
# Matmul weights: q, o (d×d_q), k, v (d×d_kv), gate/up/down (d×f) per layer; LM head d×V.
MATMUL_WEIGHTS = L * (2 * D * D_Q + 2 * D * D_KV + 3 * D * F) + D * V


def small(name: str = "small") -> LoadedModel:
    return LoadedModel(name, "test", SMALL, raw={}, label=name)


def step(context: int, batch: int = 1) -> int:
    """The issue's decode formula: 2 × matmul weights + 4·c·d_q per layer, per sequence."""
    return batch * (2 * MATMUL_WEIGHTS + 4 * context * D_Q * L)


# ------------------------------------------------------------------------------ decode FLOPs

@pytest.mark.parametrize("prompt, gen, batch", [(1, 1, 1), (10, 7, 1), (100, 64, 3)])
def test_decode_closed_form(prompt, gen, batch):
    r = inf.build_infer_report(small(), prompt, gen, batch)
    d = r.decode
    assert (d.context_first, d.context_last) == (prompt + 1, prompt + gen)
    assert d.flops_first == step(prompt + 1, batch)
    assert d.flops_last == step(prompt + gen, batch)
    assert d.flops == sum(step(prompt + i, batch) for i in range(1, gen + 1))
    # Σ_{i=1..G} (P + i) = G·P + G(G+1)/2 keys in all.
    keys = gen * prompt + gen * (gen + 1) // 2
    assert d.flops == batch * (gen * 2 * MATMUL_WEIGHTS + 4 * D_Q * L * keys)
    assert d.flops == d.weights + d.attention == sum(d.components.values())
    assert d.weights == gen * batch * 2 * MATMUL_WEIGHTS
    assert d.flops_per_token == Fraction(d.flops, batch * gen)
    assert d.flops_per_token_first == d.flops_first // batch


@settings(max_examples=60, deadline=None)
@given(prompt=st.integers(1, 300), gen=st.integers(1, 60), batch=st.integers(1, 4))
def test_decode_parts_are_the_sum_of_the_steps(prompt, gen, batch):
    """decode_parts sums each part over the steps in closed form; check it step by step."""
    whole = {p.name: p.value for p in inf.decode_parts(SMALL, prompt, gen, batch)}
    summed: dict[str, int] = {}
    for i in range(1, gen + 1):
        for p in inf.decode_step_parts(SMALL, prompt + i, batch):
            summed[p.name] = summed.get(p.name, 0) + p.value
    assert whole == summed


@pytest.mark.parametrize("name", ["gpt2", "llama-3.1-8b", "gpt3-13b"])
def test_decode_weight_flops_are_twice_the_matmul_weights(name):
    """2 × (every 2-D weight in the layers + the LM head, tied or not): biases and norms add no
    matmul FLOPs; GPT-3 13B's d_q ≠ d_model included."""
    cfg = load_model(name).config
    matrices = sum(p.value for p in c.model_params(cfg) if p.kind == c.LAYERS and len(p.shape) == 2)
    weights = c.total(inf.decode_step_parts(cfg, 5, 1), c.WEIGHTS)
    assert weights == 2 * (matrices + cfg.d_model * cfg.vocab_size)


def test_decode_attention_is_4_c_dq_per_layer_and_ignores_gqa():
    for name in ("llama-3.1-8b", "gpt2"):
        cfg = load_model(name).config
        attention = c.total(inf.decode_step_parts(cfg, 1000, 2), c.ATTENTION)
        assert attention == 2 * 4 * 1000 * cfg.d_q * cfg.n_layers


@pytest.mark.parametrize("attention", ["full", "causal"])
@pytest.mark.parametrize("name, prompt, batch", [("gpt2", 1000, 1), ("llama-3.1-8b", 8192, 2),
                                                  ("gpt3-13b", 333, 3)])
def test_prefill_equals_model_forward(cli, name, prompt, batch, attention):
    infer = cli("infer", name, "--prompt", prompt, "--gen", 10, "--batch", batch,
                "--attention", attention, "-f", "json").json()
    model = cli("model", name, "--seq", prompt, "--batch", batch, "--attention", attention,
                "-f", "json").json()
    assert infer["prefill"]["flops"] == model["flops"]["forward"]
    assert infer["prefill"]["components"] == model["flops"]["components"]
    assert infer["settings"]["attention"] == attention


def test_attention_convention_changes_the_prefill_only(cli):
    full = cli("infer", "gpt2", "--prompt", 512, "--gen", 64, "--attention", "full", "-f", "json")
    causal = cli("infer", "gpt2", "--prompt", 512, "--gen", 64, "-f", "json")  # the default
    assert causal.json()["settings"]["attention"] == "causal"
    assert full.json()["decode"] == causal.json()["decode"]
    assert full.json()["prefill"]["flops"] > causal.json()["prefill"]["flops"]


# ----------------------------------------------------------------------------------- bytes

def test_llama_8b_kv_cache_at_131072_tokens(cli):
    """The issue's figure: bf16, 131,072 cached tokens → 131,072 B per token, 17,179,869,184 B."""
    doc = cli("infer", "llama-3.1-8b", "--prompt", "124k", "--gen", "4k", "--kv-dtype", "bf16",
              "-f", "json").json()
    kv = doc["kv_cache"]
    assert kv["tokens"] == 131_072
    assert kv["bytes_per_token"] == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv["bytes"] == 17_179_869_184
    assert kv["mha_bytes"] == 4 * kv["bytes"] and kv["gqa_factor"] == 4.0
    assert doc["weights"]["bytes"] == 2 * 8_030_261_248


@pytest.mark.parametrize("name, factor", [("llama-3.1-8b", 4), ("llama-3.1-70b", 8),
                                          ("llama-3.1-405b", 16), ("gpt2", 1), ("gpt3", 1)])
def test_gqa_saving_is_heads_over_kv_heads(cli, name, factor):
    kv = cli("infer", name, "--prompt", 100, "--gen", 28, "--batch", 3, "-f", "json").json()[
        "kv_cache"]
    cfg = load_model(name).config
    assert cfg.n_heads // cfg.kv_heads == factor
    assert kv["mha_bytes"] == factor * kv["bytes"] and kv["gqa_factor"] == factor
    assert kv["gqa_saving_bytes"] == kv["mha_bytes"] - kv["bytes"]
    assert kv["tokens"] == 3 * 128


@pytest.mark.parametrize("dtype, nbytes", [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1),
                                           ("int8", 1)])
def test_dtype_sizes(cli, dtype, nbytes):
    doc = cli("infer", "gpt2", "--prompt", 10, "--gen", 6, "--kv-dtype", dtype,
              "--weights-dtype", dtype, "-f", "json").json()
    assert doc["kv_cache"]["bytes_per_token"] == 2 * 12 * 768 * nbytes
    assert doc["weights"]["bytes"] == 124_439_808 * nbytes


def test_decode_bytes_follow_the_stated_convention():
    r = inf.build_infer_report(small(), 50, 8, batch=2, kv_dtype="fp8", weights_dtype="bf16")
    # The untied V×d token table is a lookup: a step reads only the 2 rows its 2 tokens use.
    weights, kv = r.weights.bytes - (V - 2) * D * 2, 2 * L * D_KV * 1
    assert r.kv_cache.bytes_per_token == kv
    # all weights once + the K/V of the c keys read + the new K/V written, per sequence
    assert r.decode.bytes_first == weights + 2 * 51 * kv + 2 * kv
    assert r.decode.bytes_last == weights + 2 * 58 * kv + 2 * kv
    assert r.decode.bytes == sum(weights + 2 * ctx * kv + 2 * kv for ctx in range(51, 59))
    assert r.decode.bytes == sum(r.decode.bytes_components.values())
    assert r.decode.arithmetic_intensity_first == r.decode.flops_first / r.decode.bytes_first
    assert r.prefill.bytes == r.weights.bytes + 2 * 50 * kv  # 100 tokens read all 100 rows


def test_tied_tables_are_read_in_full_and_positions_by_row():
    gpt2 = load_model("gpt2").config
    # Tied: the LM head reads the whole token table; only B of 1024 position rows are read.
    assert inf.params_read(gpt2, 4) == 124_439_808 - (1024 - 4) * 768
    llama = load_model("llama-3.1-8b").config
    assert inf.params_read(llama, 1) == 8_030_261_248 - (128_256 - 1) * 4096


# -------------------------------------------------------------------------------- roofline

@settings(max_examples=200, deadline=None)
@given(a=st.fractions(-50, 50), b=st.fractions(0, 100), p=st.fractions(-50, 50),
       q=st.fractions(0, 100), lo=st.integers(0, 40), n=st.integers(1, 40))
def test_decode_time_is_the_sum_of_step_maxima(a, b, p, q, lo, n):
    hi = lo + n - 1
    compute, memory = (lambda x: a * x + b), (lambda x: p * x + q)
    t = inf.decode_time(compute, memory, lo, hi)
    steps = range(lo, hi + 1)
    assert t.seconds == sum(max(compute(x), memory(x)) for x in steps)
    assert t.compute_bound_steps == sum(compute(x) >= memory(x) for x in steps)
    assert t.compute_bound_steps + t.memory_bound_steps == n


def test_roofline_llama_8b_on_h100_is_memory_bound_at_batch_1(cli):
    doc = cli("infer", "llama-3.1-8b", "--prompt", 2048, "--gen", 256, "--accelerator",
              "h100-sxm", "-f", "json").json()
    a, rf, d = doc["accelerator"], doc["roofline"], doc["decode"]
    assert a["peak_flops"] == 989_500_000_000_000 and a["bandwidth"] == 3_350_000_000_000
    assert a["perfect_scaling"] is True
    assert rf["prefill"]["binds"] == "compute"
    assert rf["prefill"]["seconds"] == pytest.approx(doc["prefill"]["flops"] / 989.5e12)
    assert rf["decode"]["binds"] == "memory" and rf["decode"]["compute_bound_steps"] == 0
    first = rf["decode"]["first"]
    assert first["seconds"] == pytest.approx(d["bytes_first"] / 3.35e12)
    assert first["compute_s"] == pytest.approx(d["flops_first"] / 989.5e12)
    assert rf["decode"]["seconds"] == pytest.approx(d["bytes"] / 3.35e12)
    assert rf["decode"]["tokens_per_s"] == pytest.approx(256 / rf["decode"]["seconds"])
    assert rf["memory"]["fits"] is True


def test_roofline_switches_from_compute_to_memory_as_the_cache_grows(cli):
    """At batch 1024 a short context is compute-bound; the growing cache reads make the later
    steps memory-bound. The total is the sum of per-step maxima, checked step by step."""
    doc = cli("infer", "llama-3.1-8b", "--prompt", 100, "--gen", 900, "--batch", 1024,
              "--accelerator", "h100-sxm", "-f", "json").json()
    rd = doc["roofline"]["decode"]
    assert rd["first"]["binds"] == "compute" and rd["last"]["binds"] == "memory"
    assert rd["binds"] == "compute, then memory"
    assert rd["compute_bound_steps"] + rd["memory_bound_steps"] == 900
    cfg = load_model("llama-3.1-8b").config
    batch = 1024
    kv, weights = doc["kv_cache"]["bytes_per_token"], inf.params_read(cfg, batch) * 2  # bf16

    def step_time(ctx: int) -> tuple[Fraction, Fraction]:
        return (Fraction(c.total(inf.decode_step_parts(cfg, ctx, batch)), 989_500 * 10**9),
                Fraction(weights + batch * (ctx + 1) * kv, 3_350 * 10**9))

    times = [step_time(ctx) for ctx in range(101, 1001)]
    assert rd["seconds"] == pytest.approx(float(sum(max(t) for t in times)), rel=1e-12)
    assert rd["compute_bound_steps"] == sum(comp >= mem for comp, mem in times)
    assert 0 < rd["compute_bound_steps"] < 900


def test_count_multiplies_peak_and_bandwidth(cli):
    one = cli("infer", "llama-3.1-70b", "--prompt", 1000, "--gen", 100, "--accelerator", "h200",
              "-f", "json").json()
    eight = cli("infer", "llama-3.1-70b", "--prompt", 1000, "--gen", 100, "--accelerator",
                "h200", "--count", 8, "-f", "json").json()
    assert eight["accelerator"]["total_peak_flops"] == 8 * one["accelerator"]["peak_flops"]
    assert eight["accelerator"]["total_bandwidth"] == 8 * one["accelerator"]["bandwidth"]
    assert eight["roofline"]["decode"]["seconds"] == pytest.approx(
        one["roofline"]["decode"]["seconds"] / 8)
    assert one["roofline"]["memory"]["fits"] is False  # 141 GB weights on one 141 GB H200
    assert eight["roofline"]["memory"]["fits"] is True


def test_peak_and_bandwidth_override(cli):
    doc = cli("infer", "gpt2", "--prompt", 100, "--gen", 10, "--accelerator", "a100-sxm-80gb",
              "--peak", "100T", "--bandwidth", "1.5e12", "-f", "json").json()
    a = doc["accelerator"]
    assert (a["peak_flops"], a["bandwidth"]) == (10**14, 1_500_000_000_000)
    assert a["peak_overridden"] and a["bandwidth_overridden"]
    custom = cli("infer", "gpt2", "--prompt", 100, "--gen", 10, "--peak", "989.5T",
                 "--bandwidth", "3.35e12", "--count", 2, "-f", "json").json()
    assert custom["accelerator"]["name"] == "custom"
    assert custom["accelerator"]["total_peak_flops"] == 2 * 989_500_000_000_000


def test_weights_dtype_picks_the_peak(cli):
    doc = cli("infer", "gpt2", "--prompt", 100, "--gen", 10, "--accelerator", "h100-sxm",
              "--weights-dtype", "fp8", "-f", "json").json()
    assert doc["accelerator"]["peak_flops"] == 1_979_000_000_000_000
    assert doc["accelerator"]["dtype"] == "fp8"


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

def test_gpt3_on_1024_h100_at_40_pct_mfu(cli):
    """The issue's figure, worked by hand: N = 174,604,259,328 − 50,257·12,288 − 2,048·12,288
    = 173,961,535,488; 6ND = 6·N·3e11 = 3.131e23 FLOPs; the cluster sustains
    1,024 × 989.5e12 × 0.4 = 4.053e17 FLOP/s; 3.131e23 / 4.053e17 = 772,591 s = 8.94 days,
    × 1,024 / 3,600 = 219,759 H100-hours."""
    r = cli("train", "gpt3", "--tokens", "300B", "--accelerator", "h100-sxm", "--count", 1024,
            "--mfu", "40%", "-f", "json")
    assert r.code == 0, r.err
    doc = r.json()
    n = 174_604_259_328 - 50_257 * 12_288 - 2_048 * 12_288
    six_nd = 6 * n * 300 * 10**9
    sustained = 1024 * 989.5e12 * 0.4
    assert doc["training"]["six_nd"] == six_nd
    assert doc["accelerator"]["peak_flops"] == 989_500_000_000_000
    assert doc["achieved_flops"] == pytest.approx(sustained)
    assert doc["days"]["six_nd"] == pytest.approx(six_nd / sustained / 86_400)
    assert round(doc["days"]["six_nd"], 2) == 8.94
    assert round(doc["accelerator_hours"]["six_nd"]) == 219_759
    model = cli("model", "gpt3", "--tokens", "300B", "-f", "json").json()
    assert doc["training"]["exact"] == model["training"]["exact"]
    assert doc["days"]["exact"] == pytest.approx(doc["training"]["exact"] / sustained / 86_400)
    assert doc["accelerator_hours"]["exact"] == pytest.approx(
        doc["seconds"]["exact"] * 1024 / 3600)


@pytest.mark.parametrize("mfu", ["0.4", "40%", "40 %", ".4"])
def test_mfu_spellings(cli, mfu):
    doc = cli("train", "gpt2", "--accelerator", "a100-sxm-80gb", "--mfu", mfu, "-f",
              "json").json()
    assert doc["settings"]["mfu"] == 0.4


def test_train_works_for_encoder_decoder_and_peak_only(cli):
    r = cli("train", "transformer-base", "--peak", "312T", "--mfu", 0.5, "--tokens", "1e9",
            "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["accelerator"]["name"] == "custom"


def test_train_default_tokens_say_where_from(cli):
    doc = cli("train", "gpt3", "--accelerator", "b200", "--mfu", "0.5", "-f", "json").json()
    assert doc["settings"]["tokens"] == 300 * 10**9
    assert doc["settings"]["tokens_source"].startswith("published")


# ---------------------------------------------------------------------- outputs and contract

INFER_KEYS = ["schema_version", "settings.prompt", "settings.gen", "settings.batch",
              "settings.attention", "settings.kv_dtype", "settings.weights_dtype",
              "prefill.flops", "decode.flops_first", "decode.flops_last", "decode.flops",
              "decode.flops_per_token", "decode.arithmetic_intensity", "kv_cache.bytes_per_token",
              "kv_cache.bytes", "kv_cache.mha_bytes", "weights.bytes", "accelerator.peak_flops",
              "roofline.prefill.seconds", "roofline.decode.seconds",
              "roofline.decode.tokens_per_s", "roofline.decode.binds", "conventions"]
TRAIN_KEYS = ["schema_version", "accelerator.peak_flops", "days.exact", "days.six_nd",
              "accelerator_hours.exact", "accelerator_hours.six_nd", "training.exact",
              "training.six_nd", "settings.mfu", "conventions"]


def dig(doc, dotted):
    for key in dotted.split("."):
        doc = doc[key]
    return doc


def test_infer_json_keys_and_exact_ints(cli):
    r = cli("infer", "llama-3.1-8b", "--prompt", "8k", "--gen", 512, "--accelerator", "mi300x",
            "-f", "json")
    assert r.code == 0 and r.err == ""
    doc = r.json()
    for key in INFER_KEYS:
        dig(doc, key)
    for key in ("prefill.flops", "decode.flops", "decode.bytes", "kv_cache.bytes", "weights.bytes",
                "accelerator.peak_flops"):
        assert isinstance(dig(doc, key), int)
    assert doc["prefill"]["flops"] == sum(doc["prefill"]["components"].values())
    assert doc["total_flops"] == doc["prefill"]["flops"] + doc["decode"]["flops"]


def test_infer_without_accelerator_has_no_roofline(cli):
    doc = cli("infer", "gpt2", "--prompt", 10, "--gen", 5, "-f", "json").json()
    assert doc["accelerator"] is None and doc["roofline"] is None
    assert not any("roofline" in line for line in doc["conventions"])


def test_train_json_keys(cli):
    doc = cli("train", "llama-3.1-8b", "--tokens", "15T", "--accelerator", "h100-sxm",
              "--count", 512, "--mfu", 0.38, "-f", "json").json()
    for key in TRAIN_KEYS:
        dig(doc, key)
    assert isinstance(doc["training"]["exact"], int)


@pytest.mark.parametrize("args", [
    ["infer", "llama-3.1-8b", "--prompt", "32k", "--gen", "1k", "--accelerator", "h100-sxm",
     "--count", 2],
    ["infer", "gpt2", "--prompt", 100, "--gen", 100],
    ["train", "gpt3", "--accelerator", "h100-sxm", "--count", 1024, "--mfu", "40%"],
    ["accelerators"],
])
def test_tables_fit_80_columns_and_state_conventions(cli, args):
    r = cli(*args)
    assert r.code == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= 80
    assert "\x1b[" not in r.out
    if args[0] != "accelerators":
        assert "How this was counted" in r.out
    if args[0] == "infer":
        assert "prefill attention causal" in r.out and "c = P + i" in r.out
    if "--accelerator" in args:
        assert "perfect scaling" in r.out or "1 device" in r.out


def test_infer_table_shows_the_issue_figures(cli):
    out = cli("infer", "llama-3.1-8b", "--prompt", "124k", "--gen", "4k").out
    assert "131,072 (131.1 KB)" in out and "17,179,869,184 (17.18 GB)" in out
    assert "GQA saves (4x smaller)" in out


def test_train_table_states_mfu_and_days(cli):
    out = cli("train", "gpt3", "--tokens", "300B", "--accelerator", "h100-sxm", "--count", 1024,
              "--mfu", "40%").out
    assert "40% MFU" in out and "8.942" in out and "219,759" in out


@pytest.mark.parametrize("args", [
    ["infer", "llama-3.1-8b", "--prompt", 1000, "--gen", 24, "--accelerator", "b200"],
    ["train", "gpt2", "--accelerator", "tpu-v5p", "--mfu", 0.5],
])
def test_csv_has_header_and_numbers(cli, args):
    r = cli(*args, "--format", "csv")
    assert r.code == 0
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert list(rows[0]) == ["section", "name", "value", "unit"]
    values = {(row["section"], row["name"]): row for row in rows}
    if args[0] == "infer":
        assert int(values[("decode", "flops")]["value"]) > 0
        assert values[("decode", "flops")]["unit"] == "FLOPs"
        assert values[("kv_cache", "bytes")]["unit"] == "bytes"
        assert float(values[("roofline.decode", "seconds")]["value"]) > 0
        assert ("decode.components", "decoder.attn.scores") in values
    else:
        assert float(values[("days", "exact")]["value"]) > 0
        assert int(values[("accelerator", "peak_flops")]["value"]) == 459 * 10**12


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_accelerators_in_every_format(cli, fmt):
    r = cli("accelerators", "--format", fmt)
    assert r.code == 0
    for name in ("a100-sxm-80gb", "h100-sxm", "h200", "b200", "mi300x"):
        assert name in r.out
    if fmt == "json":
        rows = {row["name"]: row for row in r.json()["accelerators"]}
        assert rows["h100-sxm"]["peak_flops"]["bf16"] == 989_500_000_000_000
        assert all(row["source"] for row in rows.values())


# ----------------------------------------------------------------------------- the presets

REQUIRED_ACCELERATORS = {"a100-sxm-80gb", "h100-sxm", "h200", "b200", "mi300x"}


def test_train_dtype_choices_are_the_schema_dtypes():
    from flopcalc.accelerators import DTYPES
    from flopcalc.cli_inference import ComputeDtype

    assert tuple(d.value for d in ComputeDtype) == DTYPES


def test_required_accelerators_ship_with_sources():
    assert REQUIRED_ACCELERATORS <= set(accelerator_names())
    for name in accelerator_names():
        spec = load_accelerator(name).spec
        assert spec.source and "bf16" in spec.peak_flops
        # Dense tensor peaks: bf16 and fp16 agree wherever both are listed.
        assert spec.peak_flops.get("fp16", spec.peak_flops["bf16"]) == spec.peak_flops["bf16"]


@pytest.mark.parametrize("name, bf16, bandwidth", [
    ("a100-sxm-80gb", 312 * 10**12, 2_039 * 10**9), ("h100-sxm", 989_500 * 10**9, 3_350 * 10**9),
    ("h200", 989_500 * 10**9, 4_800 * 10**9), ("b200", 2_250 * 10**12, 7_700 * 10**9),
    ("mi300x", 1_307_400 * 10**9, 5_300 * 10**9)])
def test_datasheet_figures(name, bf16, bandwidth):
    spec = load_accelerator(name).spec
    assert (spec.peak_flops["bf16"], spec.memory_bandwidth) == (bf16, bandwidth)


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


def test_unknown_accelerator_suggests_and_lists(cli):
    r = cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "h100")
    one_line_error(r, "unknown accelerator 'h100'", "did you mean", "'h100-sxm'", "mi300x")
    r = cli("train", "gpt2", "--accelerator", "tpu", "--mfu", 0.4)
    one_line_error(r, "unknown accelerator 'tpu'", "available: a100-pcie-40gb")


@pytest.mark.parametrize("mfu", ["0", "1.5", "150%", "-0.1", "abc", "nan", "inf", "1e-20"])
def test_bad_mfu(cli, mfu):
    one_line_error(cli("train", "gpt2", "--accelerator", "h100-sxm", "--mfu", mfu), "--mfu")


def test_missing_dtype_peak(cli):
    r = cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "a100-sxm-80gb",
            "--weights-dtype", "fp8")
    one_line_error(r, "a100-sxm-80gb has no fp8 peak", "bf16", "--peak")
    one_line_error(cli("train", "gpt2", "--accelerator", "tpu-v5p", "--dtype", "fp8", "--mfu",
                       0.4), "tpu-v5p has no fp8 peak")


@pytest.mark.parametrize("args, fragment", [
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--peak", "1e15"], "--bandwidth is needed"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--bandwidth", "1e12"], "--peak is needed"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--count", 8], "--count multiplies"),
    (["train", "gpt2", "--mfu", 0.4], "train needs --accelerator"),
    (["infer", "gpt2", "--prompt", 0, "--gen", 10], "--prompt"),
    (["infer", "gpt2", "--prompt", 10, "--gen", "1.5"], "--gen"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--batch", "x"], "--batch"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "h100-sxm", "--peak",
      "fast"], "--peak"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", "h100-sxm", "--count",
      "0"], "--count"),
    (["infer", "gpt2", "--gen", 10], "--prompt"),
    (["infer", "gpt2", "--prompt", 10], "--gen"),
    (["infer", "gpt2", "--prompt", 10, "--gen", 10, "--kv-dtype", "fp7"], "--kv-dtype"),
    (["train", "gpt2", "--accelerator", "h100-sxm"], "--mfu"),
    (["infer", "gtp2", "--prompt", 10, "--gen", 10], "did you mean 'gpt2'"),
])
def test_usage_errors_exit_2(cli, args, fragment):
    one_line_error(cli(*args), fragment)


@pytest.mark.parametrize("text, fragments", [
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 1\n"
     "peak_flops: {bf16: 1}\ncolour: red\n", ["unknown key 'colour'"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 3.35e12\n"
     "peak_flops: {bf16: 1}\n", ["memory_bandwidth must be a whole number"]),
    ("title: x\nvendor: y\nmemory_bytes: 1\nmemory_bandwidth: 1\npeak_flops: {bf16: 1}\n",
     ["missing key 'source'"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 1\nmemory_bandwidth: 1\n"
     "peak_flops: {bf17: 1}\n", ["peak_flops.bf17"]),
    ("title: x\nvendor: y\nsource: z\nmemory_bytes: 0\nmemory_bandwidth: 1\n"
     "peak_flops: {bf16: 1}\n", ["memory_bytes must be a positive integer"]),
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


def test_accelerator_file_works(cli, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("title: My chip\nvendor: me\nsource: my datasheet\nmemory_bytes: 64000000000\n"
                    "memory_bandwidth: 2000000000000\npeak_flops:\n  bf16: 500000000000000\n")
    doc = cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", str(path), "-f",
              "json").json()
    assert doc["accelerator"]["name"] == "mine" and doc["accelerator"]["title"] == "My chip"
    one_line_error(cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator",
                       str(tmp_path / "absent.yaml")), "no such accelerator file")


def test_accelerator_model_is_strict():
    with pytest.raises(Exception):
        Accelerator(title="x", vendor="y", source="z", memory_bytes=True, memory_bandwidth=1,
                    peak_flops={"bf16": 1})


@pytest.mark.parametrize("text, value", [("0.4", Fraction(2, 5)), ("40%", Fraction(2, 5)),
                                         ("100%", 1), ("1", 1), ("0.385", Fraction(77, 200))])
def test_parse_fraction(text, value):
    assert parse_fraction(text, "--mfu") == value


def test_unknown_dtype_in_library_call():
    with pytest.raises(FlopcalcError, match="unknown dtype 'fp7'"):
        inf.dtype_bytes("fp7")


def test_validated_accelerators_are_remembered_by_content(cli, tmp_path, monkeypatch):
    """A mapping that passed validation skips pydantic next time; any edit meets it again."""
    from flopcalc import accelerators

    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "chip.yaml"
    good = ("title: Chip\nvendor: me\nsource: sheet\nmemory_bytes: 1000\n"
            "memory_bandwidth: 1000\npeak_flops: {bf16: 1000}\n")
    path.write_text(good)
    first = load_accelerator(str(path)).spec
    assert (tmp_path / "cache" / "accelerators.json").is_file()
    monkeypatch.setattr(accelerators, "accelerator_schema", lambda: pytest.fail("validated again"))
    assert load_accelerator(str(path)).spec == first
    monkeypatch.undo()
    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(tmp_path / "cache"))
    path.write_text(good.replace("1000}", "1000.5}"))
    one_line_error(cli("infer", "gpt2", "--prompt", 10, "--gen", 10, "--accelerator", str(path)),
                   "peak_flops.bf16 must be a whole number")
    monkeypatch.setenv("FLOPCALC_NO_CACHE", "1")
    path.write_text(good)
    assert load_accelerator(str(path)).spec == first
