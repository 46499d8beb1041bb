"""`flopcalc mfu`: every convention from one measured throughput, figures above 100% flagged
with their cause, and the published MFU of the reference runs reproduced under the convention
each publication states."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import flopcalc
from flopcalc.counting.published import palm, shape_of, six_nd

from tests.training_runs import REFERENCE, reference_runs

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]


def rows(report):
    return {r["name"]: r for r in report.to_dict()["rows"]}


def test_conventions_by_hand():
    # Llama 3.1 8B at 8,192 tokens, 3,900 tokens/s per device on 8 H100 (989.5 TFLOP/s):
    # MFU = FLOPs per token × 3,900 / 989.5e12 under every convention
    r = rows(flopcalc.mfu("llama-3.1-8b", tokens_per_second=3900, per_device=True,
                          accelerator="h100", count=8, seq=8192))
    spec = flopcalc.load("llama-3.1-8b").spec
    m = shape_of(spec)
    assert r["six_nd"]["utilisation"] == pytest.approx(float(six_nd(m, 8192)) * 3900 / 989.5e12)
    assert r["palm"]["utilisation"] == pytest.approx(float(palm(m, 8192)) * 3900 / 989.5e12)
    exact = 3 * flopcalc.model("llama-3.1-8b", seq=8192).to_dict()["flops"]["forward"] / 8192
    assert r["exact_full"]["flops_per_token"] == pytest.approx(exact)
    causal = 3 * flopcalc.model("llama-3.1-8b", seq=8192,
                                attention="causal").to_dict()["flops"]["forward"] / 8192
    assert r["exact_causal"]["flops_per_token"] == pytest.approx(causal)
    # Megatron-Core's formula is this tool's full count for a dense GQA block
    assert r["megatron_core"]["flops_per_token"] == pytest.approx(exact)
    assert all(x["possible"] for x in r.values())


def test_megatron_core_on_a_plain_mlp_and_not_on_an_ffn_it_cannot_read():
    from dataclasses import replace

    from flopcalc.counting.utilisation import megatron_core
    from flopcalc.kinds.base import Published
    from flopcalc.kinds.mlp import Mlp

    # GPT-2 (d 768, 12 layers, 12 heads of 64, f 3,072 plain, V 50,257) at s = 1,024:
    # 12·d²·L·[(1 + 12/12 + 1024/768)·768/768 + 3072/768] + 6·d·V
    # = 12·589,824·12·(22/3) + 6·768·50,257 = 622,854,144 + 231,584,256
    spec = flopcalc.load("gpt2").spec
    assert megatron_core(spec, 1024) == 854_438_400

    class Unpublished(Mlp):  # a channel mixer with no published view (ffn = "")
        def published(self, d):
            return Published()

    layer = spec.layers[0]
    odd = replace(layer, ffn=Unpublished(**{f: getattr(layer.ffn, f)
                                            for f in layer.ffn.__dataclass_fields__}))
    assert megatron_core(replace(spec, layers=(odd,) * len(spec.layers)), 1024) is None


def test_step_time_and_total_throughput_agree():
    a = flopcalc.mfu("gpt3", step_time="10", global_batch=1536, accelerator="h100",
                     count=1024).to_dict()
    b = flopcalc.mfu("gpt3", tokens_per_second=Fraction(1536 * 2048, 10), accelerator="h100",
                     count=1024).to_dict()
    assert a["rows"] == b["rows"]


def test_impossible_figures_are_flagged_with_their_cause():
    # Gemma 3 27B at 32k: 5 of every 6 layers slide a 1,024-token window. A throughput at which
    # the full count reads above 100% while the causal count stays below: the full-attention
    # conventions are impossible and say why.
    r = flopcalc.mfu("gemma-3-27b", tokens_per_second=4000, per_device=True,
                     accelerator="h100", count=8, seq="32k")
    got = rows(r)
    assert got["exact_causal"]["possible"]
    assert not got["exact_full"]["possible"] and "window" in got["exact_full"]["cause"]
    assert any("impossible" in w for w in r.warnings)
    # A throughput beyond any count: every row impossible, the cause names the input
    bad = rows(flopcalc.mfu("llama-3.1-8b", tokens_per_second=50_000, per_device=True,
                            accelerator="h100", seq=8192))
    assert not bad["exact_causal"]["possible"] and "--per-device" in bad["exact_causal"]["cause"]


def test_hfu_counts_recomputation():
    r = rows(flopcalc.mfu("llama-3.1-8b", tokens_per_second=3900, per_device=True,
                          accelerator="h100", seq=8192, recompute="full"))
    fwd = r["exact_causal"]["flops_per_token"] / 3
    head = 2 * 4096 * 128256
    assert r["hfu_exact_causal"]["flops_per_token"] == pytest.approx(4 * fwd - head)


def published():
    data = json.loads(REFERENCE.read_text())
    return {c["id"]: c for c in data["cases"]}


@pytest.mark.parametrize("run", reference_runs(), ids=lambda r: r.id)
def test_published_mfu_reproduced(run, tmp_path):
    # From each run's measured step time: Narayanan et al.'s TFLOP/s under their eq. 3
    # (recomputation counted, V = 51,200) and Megatron-Core's under its r0.8.0 formula.
    from tests.training_runs import model_ref

    case = published()[run.id]
    model = model_ref(run.model, tmp_path, run.id)
    step = (run.measured[0] + run.measured[1]) / 2
    gpus = case["hardware"]["num_gpus"]
    r = rows(flopcalc.mfu(model, step_time=str(step), global_batch=run.options["global_batch"],
                          accelerator=run.options["accelerator"], count=gpus,
                          seq=run.options["seq"], dtype=run.options["dtype"]))
    published_tflops = case["measured"]["achieved_tflops_per_gpu"]
    if run.id.startswith("narayanan"):
        got = r["megatron_recompute"]["achieved_flops_per_device"] / 1e12
        # our V is the vocabulary as padded (50,304 to 51,200); theirs is 51,200 throughout
        assert got == pytest.approx(published_tflops, rel=0.01)
        assert round(100 * r["megatron_recompute"]["utilisation"]) == pytest.approx(
            int(case["measured"]["percent_of_peak"].rstrip("%")), abs=1)
    else:
        got = r["megatron_core"]["achieved_flops_per_device"] / 1e12
        assert got == pytest.approx(published_tflops, rel=1e-3)
        # the table's MFU is printed to a whole percent (of 989 or 989.5 TFLOP/s)
        assert 100 * r["megatron_core"]["utilisation"] == pytest.approx(
            int(case["measured"]["mfu"].rstrip("%")), abs=0.6)


@pytest.mark.parametrize("args, fragment", [
    ([], "give the measurement"),
    (["--step-time", "1"], "--global-batch"),
    (["--tokens-per-second", "10", "--global-batch", "8"], "goes with --step-time"),
])
def test_errors(cli, args, fragment):
    r = cli("mfu", "gpt2", "--accelerator", "h100", *args)
    assert r.code == 2 and r.err.count("\n") == 1 and fragment in r.err


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_formats(cli, fmt):
    r = cli("mfu", "gpt2", "--accelerator", "h100", "--tokens-per-second", "1e6", "--format",
            fmt)
    assert r.code == 0 and "exact_causal" in r.out
