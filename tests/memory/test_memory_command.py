"""`flopcalc memory`: ZeRO's Figure 1, Korthikanti et al.'s Table 2, hand-worked layouts, and
every bad option."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

# A model of exactly Ψ = 7.5e9 parameters: one layer of 4·d² attention and 2·d·f MLP with
# d = 5,000 and f = 739,999 (1e8 + 7,399,990,000), plus a 2 x 5,000 token table, no norms:
# 1e8 + 7,399,990,000 + 10,000 = 7,500,000,000.
PSI = """n_layers: 1
d_model: 5000
n_heads: 50
d_ff: 739999
norm: none
final_norm: false
positions: rotary
vocab_size: 2
"""


@pytest.fixture
def psi(tmp_path):
    path = tmp_path / "psi.yaml"
    path.write_text(PSI)
    return str(path)


def memory(cli, *args) -> dict:
    return run(cli, "memory", *args)


@pytest.mark.parametrize("zero, gb", [(0, "120"), (1, "31.4"), (2, "16.6"), (3, "1.9")])
def test_zero_figure_1(cli, psi, zero, gb):
    """Rajbhandari et al. 2020, Figure 1: Ψ = 7.5B, N_d = 64, K = 12 (mixed-precision Adam):
    (2 + 2 + K)Ψ = 120 GB; 2Ψ + 2Ψ + KΨ/N_d = 31.4; 2Ψ + (2 + K)Ψ/N_d = 16.6;
    (2 + 2 + K)Ψ/N_d = 1.9 (GB = 10^9 bytes)."""
    doc = memory(cli, psi, "--dp", 64, "--zero", zero, "--seq", 1)
    assert doc["params"]["total"] == 7_500_000_000
    m = doc["memory"]
    state = m["weights"] + m["gradients"] + m["optimizer"]
    exact = {0: 16 * 7_500_000_000, 1: 4 * 7_500_000_000 + 12 * 7_500_000_000 // 64,
             2: 2 * 7_500_000_000 + 14 * 7_500_000_000 // 64, 3: 16 * 7_500_000_000 // 64}
    assert state == exact[zero]
    assert f"{state / 1e9:.{len(gb.split('.')[-1]) if '.' in gb else 0}f}" == gb


# Korthikanti et al. 2022, Table 2, for GPT-3 175B (s = 2,048, h = 12,288, a = 96) with b = 1,
# t = 8 and dropout (their setting): sbh = 25,165,824 and 5as/h = 80.
SBH = 2048 * 12288


@pytest.mark.parametrize("args, factor", [
    ([], 34 + 80),  # no parallelism: sbh(34 + 5as/h)
    (["--tp", 8], 10 + 24 / 8 + 80 / 8),  # tensor parallel: sbh(10 + 24/t + 5as/(ht))
    (["--tp", 8, "--sequence-parallel"], 34 / 8 + 80 / 8),  # sbh(34/t + 5as/(ht))
    (["--tp", 8, "--recompute", "selective"], 10 + 24 / 8),  # sbh(10 + 24/t)
    (["--tp", 8, "--sequence-parallel", "--recompute", "selective"], 34 / 8),  # sbh(34/t)
    (["--tp", 8, "--recompute", "full"], 2),  # sbh(2)
])
def test_korthikanti_table_2(cli, args, factor):
    doc = memory(cli, "gpt3", "--seq", 2048, "--dropout", "on", "--no-flash", *args)  # the paper's
    # eager attention
    assert doc["activations"]["per_layer"] == int(SBH * factor)


def test_without_dropout_the_masks_go(cli):
    # No dropout: the two sbh masks and the 2as²b dropout output and as²b mask go: 32sbh + 2as²b.
    doc = memory(cli, "gpt3", "--seq", 2048, "--no-flash")
    assert doc["activations"]["per_layer"] == SBH * 32 + 2 * 96 * 2048 * 2048


def test_flash_keeps_no_s_squared(cli):
    # FlashAttention, the default: 32sbh + the row log-sum-exp 4·a·s·b.
    for kernel in ((), ("--flash",)):
        doc = memory(cli, "gpt3", "--seq", 2048, *kernel)
        assert doc["activations"]["per_layer"] == SBH * 32 + 4 * 96 * 2048


def test_gqa_and_gated_mlp_change_the_right_tensors(cli):
    # Llama 3.1 8B at s = 1,024, no dropout, flash: per layer
    # norms 2·2sbh + input 2sbh + Q,K 2sb(4096 + 1024) + V 2sb·1024 + o input 2sb·4096
    # + MLP input 2sbh + 3 hidden tensors 2sb·14336 (the fused SwiGLU's gate-and-up input and
    # its output) + the log-sum-exp 4·32·s.
    s, d = 1024, 4096
    expected = (2 * 2 * s * d + 2 * s * d + 2 * s * (4096 + 1024) + 2 * s * 1024
                + 2 * s * 4096 + 2 * s * d + 3 * 2 * s * 14336 + 4 * 32 * s)
    doc = memory(cli, "llama-3.1-8b", "--seq", s, "--flash")
    layer = doc["activations"]["layers"][0]
    assert layer["bytes"] == doc["activations"]["per_layer"] == expected
    assert layer["tensors"]["attn.qk"] == 2 * s * (4096 + 1024)
    assert layer["tensors"]["mlp.hidden"] == 6 * s * 14336


def test_whole_model_activations_with_one_stage(cli):
    # GPT-2, s = 512, no dropout, flash: 12 layers + final norm input 2sbh + LM head input 2sbh
    # + fp32 logits 4·s·V.
    s, d, V = 512, 768, 50257
    layer = 2 * 2 * s * d + 2 * s * d + 2 * s * 2 * d + 2 * s * d + 2 * s * d + 2 * s * d \
        + 2 * 2 * s * 4 * d + 4 * 12 * s
    doc = memory(cli, "gpt2", "--seq", s, "--flash")
    assert doc["activations"]["per_layer"] == layer
    assert doc["memory"]["activations"] == 12 * layer + 2 * s * d + 2 * s * d + 4 * s * V


def test_tensor_and_pipeline_parallel_state(cli):
    # Llama 3.1 8B, tp 2, pp 4: the first stage holds 8 of 32 layers (every matrix halved, the
    # 2 norms per layer whole) and the token table halved; the LM head and final norm are on
    # the last stage. Layer: 218,112,000 − 8,192 norms = 218,103,808 matrix parameters.
    per_layer = 218_103_808 // 2 + 2 * 4096
    device = 8 * per_layer + 128_256 * 4096 // 2
    doc = memory(cli, "llama-3.1-8b", "--tp", 2, "--pp", 4, "--seq", 128)
    assert doc["params"]["device"] == device
    # Counts stay integers (8,000,000,000.0 would read as a rounded figure).
    assert all(type(v) is int for v in [*doc["params"].values(), *doc["memory"].values()])
    assert doc["memory"]["weights"] == 2 * device and doc["memory"]["optimizer"] == 12 * device
    # Pipeline: 4 micro-batches in flight of 8 layers: 32 layers' worth of activations.
    one_stage = memory(cli, "llama-3.1-8b", "--tp", 2, "--seq", 128)
    assert doc["activations"]["per_layer"] == one_stage["activations"]["per_layer"]


def test_fits_headroom_and_largest_micro_batch(cli, psi):
    # Ψ = 7.5e9 in pure bf16 with SGD: 2 + 2 + 4 = 8 bytes per parameter = 60e9 on an H100
    # whose driver reports 81,559 MiB = 85,520,809,984 bytes (nominal 80 GB).
    doc = memory(cli, psi, "--seq", 1, "--precision", "bf16", "--optimizer", "sgd",
                 "--accelerator", "h100")
    m = doc["memory"]
    assert m["weights"] + m["gradients"] + m["optimizer"] == 60_000_000_000
    assert doc["accelerator"]["memory_bytes"] == 81_559 * 2**20 == 85_520_809_984
    assert doc["accelerator"]["nominal_memory_bytes"] == 80_000_000_000
    assert doc["headroom_bytes"] == 85_520_809_984 - m["total"] and doc["fits"] is True
    b = doc["max_micro_batch"]
    assert b > 1
    at_b = memory(cli, psi, "--seq", 1, "--precision", "bf16", "--optimizer", "sgd",
                  "--batch", b, "--accelerator", "h100")
    past = memory(cli, psi, "--seq", 1, "--precision", "bf16", "--optimizer", "sgd",
                  "--batch", b + 1, "--accelerator", "h100")
    assert at_b["fits"] is True and past["fits"] is False
    nothing = memory(cli, "llama-3.1-405b", "--accelerator", "h100")
    assert nothing["fits"] is False and nothing["max_micro_batch"] == 0
    assert memory(cli, "gpt2")["fits"] is None


def test_count_derives_dp(cli):
    doc = memory(cli, "llama-3.1-70b", "--count", 64, "--tp", 8, "--zero", 3)
    assert (doc["settings"]["dp"], doc["settings"]["devices"]) == (8, 64)


@pytest.mark.parametrize("args, fragment", [
    (["--tp", 5], "--tp 5 must divide the 12 attention heads"),
    (["--pp", 13], "--pp 13 is more than the 12 layers"),
    (["--batch", 0], "'--batch': '0' must be a positive whole number"),
    (["--ep", 2], "--ep applies to mixtures of experts"),
    (["--sequence-parallel"], "give --tp > 1"),
    (["--count", 7, "--tp", 2], "--count 7 must be dp x tp x pp"),
])
def test_bad_layouts_are_one_line(cli, args, fragment):
    r = cli("memory", "gpt2", *map(str, args))
    assert r.code == 2 and r.out == "" and fragment in r.err and r.err.count("\n") == 1, r.err


def test_zero_4_is_a_usage_error(cli):
    r = cli("memory", "gpt2", "--zero", "4")
    assert r.code == 2 and "'4' is not one of '0', '1', '2', '3'" in r.err


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_every_format(cli, fmt):
    r = cli("memory", "llama-3.1-70b", "--count", "64", "--tp", "8", "--zero", "3",
            "--recompute", "selective", "--sequence-parallel", "--flash", "--accelerator",
            "h100", "--format", fmt)
    assert r.code == 0, r.err
    if fmt == "csv":
        assert r.out.startswith("model,seq,batch,dp,tp,pp,zero,section,name,value,unit")
    if fmt == "table":
        assert "Memory per device" in r.out and "largest micro-batch that fits" in r.out


@pytest.mark.parametrize("command", ["memory", "infer"])
def test_memory_fraction_and_reserve_size_the_device(cli, command):
    # 81,559 MiB x 0.9 − 2 GiB = 85,520,809,984·9/10 − 2,147,483,648 = 74,821,245,337.6,
    # whole bytes rounded down; the conventions say each step.
    args = (["memory", "gpt2"] if command == "memory"
            else ["infer", "gpt2", "--prompt", "8", "--gen", "1"])
    r = cli(*args, "--accelerator", "h100", "--memory-fraction", "0.9", "--reserve", "2GiB",
            "-f", "json")
    doc = r.json()
    assert doc["accelerator"]["memory_bytes"] == 74_821_245_337
    assert (doc["accelerator"]["memory_fraction"], doc["accelerator"]["reserve_bytes"]) == (
        0.9, 2**31)
    line = next(c for c in doc["conventions"] if c.startswith("device memory:"))
    assert "85,520,809,984 bytes usable (81,559 MiB as nvidia-smi reports" in line
    assert line.endswith("x 0.9 (--memory-fraction) - 2,147,483,648 (--reserve) = "
                         "74,821,245,337 a run may fill")
    too_much = cli(*args, "--accelerator", "h100", "--reserve", "100GB")
    assert too_much.code == 2 and "leaves nothing" in too_much.err
    alone = cli(*args, "--reserve", "1GB")
    assert alone.code == 2 and "give --accelerator" in alone.err


def test_a_device_without_a_driver_figure_says_it_uses_the_nominal_size(cli):
    doc = cli("memory", "gpt2", "--accelerator", "mi300x", "-f", "json").json()
    assert doc["accelerator"]["memory_bytes"] == 192_000_000_000
    assert any("the nominal size: no driver-reported capacity" in c for c in doc["conventions"])
