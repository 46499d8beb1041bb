"""Mamba-1 by hand: a mixer small enough that every count is worked in the comment beside it.

d 4, E = 6 inner channels, a state of N = 2 per channel, a conv of K = 3 taps, dt rank R = 2;
one layer (an RMSNorm and the mixer, no MLP), a final RMSNorm, a tied vocabulary of 8. x_proj's
width R + 2N = 6. A second mixer adds Jamba's weighted dt/B/C norms and the in/out biases
without the conv bias; a third has Falcon-Mamba's weightless norms.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MAMBA1 = """n_layers: 1
d_model: 4
norm: rmsnorm
positions: none
vocab_size: 8
tie_embeddings: true
layer_types: [mamba1]
mamba1: {{d_inner: 6, d_state: 2, d_conv: 3, dt_rank: 2{extra}}}
"""


def write(tmp_path, name: str, extra: str = "") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(MAMBA1.format(extra=extra))
    return str(path)


@pytest.fixture
def model(tmp_path):
    return write(tmp_path, "mamba1")


@pytest.fixture
def jamba_mixer(tmp_path):
    return write(tmp_path, "jamba_mixer", ", dt_norms: weighted, bias: true, conv_bias: false")


@pytest.fixture
def falcon_mixer(tmp_path):
    return write(tmp_path, "falcon_mixer", ", dt_norms: weightless")


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # in_proj 4·12 = 48; conv 6·3 = 18 and its bias 6; x_proj 6·6 = 36; dt_proj 2·6 = 12 and its
    # bias 6; A_log 6·2 = 12; D 6; out_proj 6·4 = 24: 168. The layer's RMSNorm 4, the final one
    # 4, the table 8·4 = 32.
    assert c == {"embed.tokens": 32, "decoder.mamba_norm.weight": 4,
                 "decoder.mamba.in_proj.weight": 48, "decoder.mamba.conv.weight": 18,
                 "decoder.mamba.conv.bias": 6, "decoder.mamba.x_proj.weight": 36,
                 "decoder.mamba.dt_proj.weight": 12, "decoder.mamba.dt_proj.bias": 6,
                 "decoder.mamba.A_log": 12, "decoder.mamba.D": 6,
                 "decoder.mamba.out_proj.weight": 24, "decoder.final_norm.weight": 4}
    assert sum(c.values()) == 208


def test_params_with_jamba_norms_and_biases(cli, jamba_mixer, falcon_mixer):
    c = run(cli, "model", jamba_mixer)["params"]["components"]
    # in_proj's bias 12, out_proj's 4, no conv bias (−6), the gains of the dt (2), B (2) and C
    # (2) norms: 208 + 12 + 4 − 6 + 6 = 224.
    assert (c["decoder.mamba.in_proj.bias"], c["decoder.mamba.out_proj.bias"]) == (12, 4)
    assert (c["decoder.mamba.dt_norm.weight"], c["decoder.mamba.b_norm.weight"],
            c["decoder.mamba.c_norm.weight"]) == (2, 2, 2)
    assert "decoder.mamba.conv.bias" not in c and sum(c.values()) == 224
    # Falcon-Mamba's norms have no weights: the plain 208.
    assert run(cli, "model", falcon_mixer)["params"]["total"] == 208


def test_forward_five_tokens(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    # T = 5. in_proj 2·5·4·12 = 480; the conv over 5 + 2 columns 2·6·3·7 = 252; x_proj
    # 2·5·6·6 = 360; dt_proj 2·5·2·6 = 120; the read-out, one (1,6,2)·(1,2,1) bmm per token,
    # 2·5·6·2 = 120; out_proj 2·5·6·4 = 240; the LM head 2·5·4·8 = 320.
    assert f["components"] == {
        "decoder.mamba.in_proj": 480, "decoder.mamba.conv": 252, "decoder.mamba.x_proj": 360,
        "decoder.mamba.dt_proj": 120, "decoder.mamba.scan.readout": 120,
        "decoder.mamba.out_proj": 240, "lm_head": 320}
    assert f["families"] == {"weights": 480 + 252 + 360 + 120 + 240 + 320, "scan": 120}
    assert (f["attention"], f["forward"]) == (0, 1892)


def test_one_token_still_pays_the_padded_conv(cli, model):
    c = run(cli, "model", model, "--seq", 1)["flops"]["components"]
    # L = 1: the conv computes 1 + 2 columns, 2·6·3·3 = 108; the read-out 2·6·2 = 24.
    assert (c["decoder.mamba.conv"], c["decoder.mamba.scan.readout"]) == (108, 24)


def test_no_crossover_and_the_conventions_say_how(cli, model):
    doc = run(cli, "model", model, "--seq", 5)
    assert doc["crossover"]["seq"] is None and "no layer has attention" in doc["crossover"]["note"]
    assert any(line.startswith("Mamba-1: as the Hugging Face PyTorch path") for line in
               doc["conventions"])


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # SiLU after the conv 4·6·5 = 120 and its bias on all 7 columns 6·7 = 42: 162. A = −exp(A_log)
    # 2·12 = 24; dt + bias and softplus 4·5·6 = 120; dt·A, exp, dt·B, ·x 4·5·12 = 240: 384. The
    # recurrence h·dA + dBx 2·5·12 = 120. The D skip (2) and the gate y·SiLU(z) (5) 7·5·6 = 210.
    assert (c["decoder.mamba.elementwise.conv"], c["decoder.mamba.elementwise.discretize"],
            c["decoder.mamba.elementwise.recurrence"],
            c["decoder.mamba.elementwise.output"]) == (162, 384, 120, 210)
    # The layer's RMSNorm 4·5·4 = 80, its residual add 5·4 = 20, the final norm 80.
    assert (c["decoder.mamba.elementwise.norm"], c["decoder.mamba.elementwise.residual"],
            c["decoder.final_norm.elementwise"]) == (80, 20, 80)
    assert "decoder.mamba.elementwise.dt_norms" not in c


def test_elementwise_of_the_norms_and_biases(cli, jamba_mixer, falcon_mixer):
    c = run(cli, "model", jamba_mixer, "--seq", 5, "--elementwise")["flops"]["components"]
    # No conv bias: SiLU only, 120. The weighted norms over dt (2), B (2), C (2): square, mean,
    # scale, gain 4·5·6 = 120, and eps and rsqrt per row 2·3·5 = 30: 150. The biases of in_proj
    # 5·12 = 60 and out_proj 5·4 = 20: 80.
    assert (c["decoder.mamba.elementwise.conv"], c["decoder.mamba.elementwise.dt_norms"],
            c["decoder.mamba.elementwise.bias"]) == (120, 150, 80)
    # Falcon-Mamba's weightless norms: 3·5·6 + 30 = 120.
    c = run(cli, "model", falcon_mixer, "--seq", 5, "--elementwise")["flops"]["components"]
    assert c["decoder.mamba.elementwise.dt_norms"] == 120


def test_decode_and_state(cli, model):
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    d, kv = doc["decode"], doc["kv_cache"]
    # A step: in_proj 2·4·12 = 96, conv 2·6·3 = 36, x_proj 2·6·6 = 72, dt_proj 2·2·6 = 24, the
    # decay exp(dt·A) 2·12 = 24, the update h·dA + (dt·x)·B 3·12 = 36, the read-out 2·12 = 24,
    # out_proj 2·6·4 = 48, the LM head 2·4·8 = 64: 424, whatever the position.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (424, 424, 3 * 424)
    c = d["components"]
    assert (c["decoder.mamba.scan.decay"], c["decoder.mamba.scan.update"],
            c["decoder.mamba.scan.readout"]) == (3 * 24, 3 * 36, 3 * 24)
    # Kept per sequence: the conv window 6 x 3 = 18 values in bf16 (36 bytes) and the state 12
    # values in fp32 (48 bytes); no per-token cache.
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"], kv["bytes"]) == (0, 84, 84)
    assert kv["layers"] == {"decoder.mamba1.conv_state": 36, "decoder.mamba1.ssm_state": 48}
    # Bytes of a step: the weights once 208·2 = 416, the states read and written 84 each.
    assert d["bytes_first"] == d["bytes_last"] == 416 + 168
    # --state-dtype bf16 halves the SSM state: 36 + 24.
    doc = run(cli, "infer", model, "--prompt", 5, "--gen", 3, "--state-dtype", "bf16")
    assert doc["kv_cache"]["state_bytes_per_sequence"] == 60


def test_memory_keeps_what_the_fused_kernel_keeps(cli, model):
    t = run(cli, "memory", model, "--seq", 5)["activations"]["layers"][0]["tensors"]
    # s = 5, b = 1: the RMSNorm's input 2·5·4 = 40, the mixer's input 40; MambaInnerFn's xz
    # 2·5·12 = 120, x_dbl 2·5·6 = 60, B and C 2·5·4 = 40, the scan output 2·5·6 = 60 and its fp32
    # states at one 2,048-token chunk 4·1·6·1·(2·2) = 96.
    assert t == {"norm_inputs": 40, "mamba.input": 40, "mamba.in_proj_output": 120,
                 "mamba.x_proj_output": 60, "mamba.scan_b_c": 40, "mamba.scan_output": 60,
                 "mamba.scan_states": 96}
    # 2,049 tokens need two chunks: 4·6·2·4 = 192.
    t = run(cli, "memory", model, "--seq", 2049)["activations"]["layers"][0]["tensors"]
    assert t["mamba.scan_states"] == 192


def test_tensor_parallelism_splits_the_channels(cli, model):
    t = run(cli, "memory", model, "--seq", 5, "--tp", 3)["activations"]["layers"][0]["tensors"]
    # Over 3 devices: xz 120/3 = 40, the scan output 20, the states 32; x_dbl, B and C are
    # all-reduced and whole on each device.
    assert (t["mamba.in_proj_output"], t["mamba.scan_output"], t["mamba.scan_states"],
            t["mamba.x_proj_output"], t["mamba.scan_b_c"]) == (40, 20, 32, 60, 40)
    r = cli("memory", model, "--tp", "4")
    assert r.code == 2 and "--tp 4 must divide the 6" in r.err


def test_no_megatron_term():
    from flopcalc.kinds.mamba1 import Mamba1

    # Megatron-LM's mamba_layer_flops describes its Mamba-2 layer only.
    assert Mamba1(inner=6, state=2, conv=3, dt_rank=2).formula("megatron_lm", 4, 5, local=True) is None


def test_bad_norms_and_defaults(cli, tmp_path):
    path = write(tmp_path, "bad", ", dt_norms: jamba")
    r = cli("model", path)
    assert r.code == 2 and "dt_norms" in r.err and "\n" not in r.err.strip()
    # Without d_inner and dt_rank: E = 2·4 = 8, R = ⌈4/16⌉ = 1; in_proj 4·16 = 64.
    path = tmp_path / "defaults.yaml"
    path.write_text(MAMBA1.format(extra="").replace("d_inner: 6, d_state: 2, d_conv: 3, "
                                                     "dt_rank: 2", "d_state: 2"))
    c = run(cli, "model", str(path))["params"]["components"]
    assert (c["decoder.mamba.in_proj.weight"], c["decoder.mamba.dt_proj.weight"]) == (64, 8)


def test_engine_cache_is_vllms_mamba1_state():
    from flopcalc.kinds.base import EngineCache, EngineState
    from flopcalc.kinds.mamba1 import Mamba1

    kind = Mamba1(inner=6, state=2, conv=3, dt_rank=2)
    # vLLM's mamba1_state_shape: conv (K − 1, E/tp) = (2, 6), SSM (E/tp, N) = (6, 2); no growth
    # per speculative token, no prefill checkpoint block.
    assert kind.engine_cache() == (EngineCache("state", states=(
        EngineState("conv", 12, "conv"), EngineState("ssm", 12, "state"))),)
    # Over 3 ranks: (2, 2) and (2, 2).
    assert [s.values for s in kind.engine_cache(3)[0].states] == [4, 4]
    with pytest.raises(ValueError, match="must divide the 6 Mamba-1 channels"):
        kind.engine_cache(4)
