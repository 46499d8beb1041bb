"""`flopcalc memory` for what plans need, by hand: context parallelism, LoRA and QLoRA, fp8,
optimizer offload, ZeRO-3's gathered layer and the fp32 gradient buffer. Every figure without
these options is unchanged (tests/golden/test_snapshot.py); here each is worked in the comments.

The tiny model of tests/memory/test_memory_by_hand.py: seq s = 4, micro-batch b = 2, d = 8
(sbh = 64), two heads of 4, a GELU MLP of 32, LayerNorm, no biases, rotary, vocabulary 10, tied.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

import flopcalc

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

DENSE = ("n_layers: 2\nd_model: 8\nn_heads: 2\nd_ff: 32\npositions: rotary\nvocab_size: 10\n"
         "max_seq_len: 64\n")
# Per layer: q, k, v, o 4·64 = 256 and up, down 2·8·32 = 512 (the matrices: 768), two
# LayerNorms 2·(8 + 8) = 32; the model adds the tied table 80 and the final norm 16:
# 2·800 + 80 + 16 = 1,696 parameters, 1,536 of them in matrices.


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(DENSE)
    return str(path)


def mem(model, **kw):
    return flopcalc.memory(model, seq=4, batch=2, **kw).to_dict()


def test_plain_report_has_no_extras(model):
    assert "extras" not in mem(model)


def test_grad_fp32_doubles_gradients(model):
    # 1,696 parameters: 2 bytes each of gradients, 4 with the fp32 buffer
    assert mem(model)["memory"]["gradients"] == 2 * 1_696
    d = mem(model, grad_fp32=True)
    assert d["memory"]["gradients"] == 4 * 1_696 and d["extras"]["grad_fp32"]


def test_lora_trains_only_the_adapters(model):
    # rank 4: each (n_in × n_out) matrix gains 4·(n_in + n_out): q, k, v, o 4·16 = 64 each,
    # up and down 4·40 = 160 each: 4·64 + 2·160 = 576 per layer, 1,152 for two.
    # weights: the frozen 1,696 and the adapters, 2 bytes each: 2·(1,696 + 1,152) = 5,696;
    # gradients 2·1,152 = 2,304; AdamW's fp32 master and moments 12·1,152 = 13,824.
    d = mem(model, lora_rank=4)
    assert d["extras"]["trainable_params"] == 1_152
    assert d["memory"]["weights"] == 5_696
    assert d["memory"]["gradients"] == 2_304
    assert d["memory"]["optimizer"] == 13_824
    # each adapted matrix keeps x·A, 2·s·b·r = 2·8·4 = 64 bytes: 6 per layer, 2 layers: 768
    base = mem(model)["memory"]["activations"]
    assert d["memory"]["activations"] == base + 768


def test_qlora_base_is_nf4_with_double_quantised_constants(model):
    # Dettmers et al. 2023: 4 + 8/64 + 32/(64·256) = 4.127 bits per parameter of the matrices:
    # 1,536 · (1/2 + 1/64 + 1/4096) = 792.375 bytes; the other 160 parameters (norms, the
    # table) stay 16-bit: 320; the adapters 2·1,152 = 2,304: ⌈3,416.375⌉ = 3,417.
    d = mem(model, lora_rank=4, qlora=True)
    nf4 = Fraction(1_536) * (Fraction(1, 2) + Fraction(1, 64) + Fraction(1, 4096))
    assert d["memory"]["weights"] == -(-(nf4 + 320 + 2_304) // 1)
    assert d["memory"]["weights"] == 3_417


def test_offload_moves_the_optimizer_to_the_host(model):
    d = mem(model, offload_optimizer=True)
    assert d["memory"]["optimizer"] == 0
    assert d["extras"]["host_optimizer_bytes"] == 12 * 1_696


# What Transformer Engine keeps in 8 bits under fp8: every projection's input. Per layer of
# this model: the attention and MLP inputs (2sbh = 128 bytes each), the output projection's
# input (2sb·d = 128) and, of the plain MLP's two hidden tensors (2·2sbf = 1,024), the one the
# second projection reads (512): 896 bytes a layer, halved: 448; 2 layers: 896 fewer.
FP8_SAVED = 2 * (128 + 128 + 128 + 512) // 2


def test_fp8_copies_and_inputs(model):
    # an fp8 copy of every matrix: 1,536 bytes; the projections' inputs in 8 bits: 896 fewer
    plain, fp8 = mem(model), mem(model, fp8=True)
    assert fp8["extras"]["fp8_weights"] == 1_536
    assert fp8["memory"]["total"] - plain["memory"]["total"] == 1_536 - FP8_SAVED


def test_fp8_keeps_dropout_masks_at_a_byte(model):
    # dropout masks are a byte per element and no projection's input: with dropout, fp8 still
    # saves only the projections' inputs
    plain, fp8 = mem(model, dropout=True), mem(model, dropout=True, fp8=True)
    assert fp8["memory"]["total"] - plain["memory"]["total"] == 1_536 - FP8_SAVED


def test_offload_with_lora_moves_only_the_adapters_state(model):
    # LoRA rank 4 trains the 1,152 adapter parameters (above): AdamW's 12 bytes each,
    # 13,824, go to the host; the device keeps none
    d = mem(model, lora_rank=4, offload_optimizer=True)
    assert d["memory"]["optimizer"] == 0
    assert d["extras"]["host_optimizer_bytes"] == 12 * 1_152


def test_context_parallelism_splits_the_sequence(model):
    # cp = 2 (flash): each device holds s/cp = 2 tokens: every activation halves; ZeRO-1
    # shards the optimizer over dp·cp = 4 devices
    whole = mem(model, flash=True, dp=2, zero=1)
    split = mem(model, flash=True, dp=2, zero=1, cp=2)
    assert split["memory"]["activations"] * 2 == whole["memory"]["activations"]
    assert split["memory"]["optimizer"] == 12 * 1_696 // 4
    assert split["extras"]["devices"] == 4


def test_zero3_gathered_largest_module(model):
    # DeepSpeed: 4 × largest_layer_params (16-bit weights and gradients of the largest
    # module). The largest module here is the MLP's up or down projection: 256 parameters.
    d = mem(model, dp=2, zero=3, zero3_buffer=True)
    assert d["extras"]["zero3_gathered_layer"] == 4 * 256
    without = mem(model, dp=2, zero=3)
    assert d["memory"]["total"] - without["memory"]["total"] == 1_024


def test_zero3_largest_module_leaves_the_last_stages_head_out(tmp_path):
    # The tiny model with a vocabulary of 100, untied, the head with a bias: the token table
    # 100·8 = 800 (a module of its own), the head 800 + 100 = 900, the MLP's 256 each. One
    # stage holds the head: 4 × 900 = 3,600 bytes gathered; with two stages the first holds
    # the table but not the head: 4 × 800 = 3,200.
    path = tmp_path / "untied.yaml"
    path.write_text(DENSE.replace("vocab_size: 10", "vocab_size: 100")
                    + "tie_embeddings: false\nlm_head_bias: 1\n")
    gathered = [mem(str(path), dp=2, pp=pp, zero=3, zero3_buffer=True)["extras"]
                ["zero3_gathered_layer"] for pp in (1, 2)]
    assert gathered == [3_600, 3_200]


def test_lora_8b_adapter_count_matches_peft():
    # Llama 3 8B, rank 16 on every linear of the layers: PEFT prints 41,943,040 trainable
    # parameters (16·(4096 + 4096 + 2·(4096 + 1024) + 4096 + 4096 + 3·(4096 + 14336))·32)
    d = flopcalc.memory("llama-3.1-8b", seq=1024, lora_rank=16, flash=True).to_dict()
    assert d["extras"]["trainable_params"] == 41_943_040


@pytest.mark.parametrize("args, message", [
    (dict(cp=2, flash=False), "--no-flash"),
    (dict(cp=3, flash=True), "must divide --seq"),
    (dict(qlora=True), "--lora-rank"),
])
def test_bad_combinations_are_one_line_errors(model, args, message):
    with pytest.raises(flopcalc.FlopcalcError, match=message):
        mem(model, **args)


def test_cli_options(cli, model):
    r = cli("memory", model, "--seq", "4", "--lora-rank", "4", "--qlora", "--format", "json")
    assert r.code == 0 and r.json()["extras"]["qlora"] is True
    assert cli("memory", model, "--seq", "4", "--lora-rank", "4").code == 0


@pytest.mark.parametrize("options", [
    {}, {"lora_rank": 4}, {"lora_rank": 4, "qlora": True}, {"fp8": True},
    {"zero": 3, "dp": 2, "zero3_buffer": True}, {"offload_optimizer": True}])
def test_every_state_part_is_in_bytes(model, options):
    # the parts say their unit: weights, gradients, optimizer state and the extras are bytes
    from flopcalc.counting.memory import BYTES, Setup, state_parts

    parts = state_parts(flopcalc.load(model).spec, Setup(seq=4, batch=2, **options))
    assert parts and {p.family for p in parts} == {BYTES}


@pytest.mark.parametrize("name", ["deepseek-v3", "gpt2"])
def test_every_activation_part_is_in_bytes(name):
    # the multi-token-prediction module's parts (DeepSeek-V3) as much as the layers'
    from flopcalc.counting.memory import BYTES, Setup, activation_parts

    parts = activation_parts(flopcalc.load(name).spec, Setup(seq=4, batch=2, dropout=True))
    assert any(p.name.startswith("mtp.") for p in parts) == (name == "deepseek-v3")
    assert {p.family for p in parts} == {BYTES}


def test_lora_intermediates_are_in_bytes(model):
    from flopcalc.counting.memory import BYTES, Setup, activation_parts

    parts = activation_parts(flopcalc.load(model).spec, Setup(seq=4, batch=2, lora_rank=4))
    assert "layers.lora.intermediates" in {p.name for p in parts}
    assert {p.family for p in parts} == {BYTES}


def test_mtp_projection_input_is_split_by_sequence_parallelism():
    # DeepSeek-V3's one MTP module: the 2d-wide input of eh_proj, 2 bytes × s 4 × b 2 × 2·7,168
    # = 229,376 bytes, halved over tp 2 with sequence parallelism
    from flopcalc.counting.memory import Setup, output_activation_parts

    spec = flopcalc.load("deepseek-v3").spec
    for tp, sp, want in ((1, False, 229_376), (2, False, 229_376), (2, True, 114_688)):
        parts = output_activation_parts(spec, Setup(seq=4, batch=2, tp=tp,
                                                    sequence_parallel=sp))
        assert {p.name: p.value for p in parts}["mtp.eh_proj_input"] == want


def test_every_cache_part_is_in_bytes():
    # a hybrid's fixed states (Mamba-2's conv and SSM states) as much as its K/V
    from flopcalc.counting.memory import BYTES
    from flopcalc.counting.traffic import kv_cache_parts

    parts = kv_cache_parts(flopcalc.load("nemotron-h-8b").spec, 16, 2, 2)
    assert len(parts) >= 3 and {p.family for p in parts} == {BYTES}


@pytest.mark.parametrize("name", ["t5-base", "gemma-3-27b-vision", "gpt2"])
def test_offload_moves_exactly_the_optimizer_the_device_would_hold(name):
    # over 2 pipeline stages the first stage's optimizer state goes to the host whole. T5's
    # and Gemma's parameter lists put a last-stage tensor (the encoder's final norm; the
    # decoder's, before the vision tower) ahead of others the first stage holds (the decoder's
    # relative bias, the tower), which must still be counted
    on_device = flopcalc.memory(name, seq=64, pp=2).to_dict()["memory"]["optimizer"]
    d = flopcalc.memory(name, seq=64, pp=2, offload_optimizer=True).to_dict()
    assert d["memory"]["optimizer"] == 0
    assert d["extras"]["host_optimizer_bytes"] == on_device > 0
