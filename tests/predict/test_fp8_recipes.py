"""fp8 recipes (`--fp8-recipe`): what quantising each matmul's operands moves, per recipe, as
torchao's float8 roofline counts it (unfused casts: tensorwise 6 bytes per element of an input
or output gradient, rowwise 8, MXFP8 6; a weight 8, 10 and 6 once a step), worked by hand on
tests/data/serve/tiny.yaml at 16 tokens; and the combinations a device cannot run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flopcalc.predict import steptime as S

from tests.predict.test_steptime import MC, TINY, load

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

FP8 = replace(MC, matmul_bytes=1)
BW = 4e12 * 0.8  # the estimate's memory share


@pytest.fixture(scope="module")
def layer():
    prof = S.profile(load(TINY).spec, 16)
    return prof, prof.layers[0]


@pytest.mark.parametrize("recipe, per_input, per_grad", [
    ("tensorwise", 6, 6), ("rowwise", 8, 8), ("mxfp8", 6, 6), ("delayed", 4, 4)])
def test_casts_of_one_layer(layer, recipe, per_input, per_grad):
    # M = 16 tokens. Inputs (M × K) of q, k, v, o, up, down: K = 8 + 8 + 8 + 8 + 8 + 16 = 56;
    # output gradients (M × N): N = 8 + 4 + 4 + 8 + 16 + 8 = 48.
    prof, lp = layer
    base = S.layer_compute(lp, prof, S.Layout(), FP8, "estimate")
    cast = S.layer_compute(lp, prof, S.Layout(fp8_recipe=recipe), FP8, "estimate")
    assert cast.mem_f - base.mem_f == pytest.approx(per_input * 16 * 56 / BW, rel=1e-12)
    assert cast.mem_b - base.mem_b == pytest.approx(per_grad * 16 * 48 / BW, rel=1e-12)
    # 16-bit matmuls quantise nothing, whatever the recipe says
    plain = S.layer_compute(lp, prof, S.Layout(fp8_recipe=recipe), MC, "estimate")
    assert plain.mem_f == S.layer_compute(lp, prof, S.Layout(), MC, "estimate").mem_f


def test_the_recipe_is_said_and_defaults_to_tensorwise(cli):
    base = ["step", "llama-3.1-8b", "--accelerator", "h100", "--count", 8, "--global-batch", 8,
            "--micro-batch", 1, "--recompute", "selective", "--dropout", "off", "-f", "json"]
    d = cli(*base, "--dtype", "fp8").json()
    assert d["layout"]["fp8_recipe"] == "tensorwise"
    assert any("fp8 matmuls scaled tensorwise (the default" in c for c in d["conventions"])
    rowwise = cli(*base, "--dtype", "fp8", "--fp8-recipe", "rowwise").json()
    # rowwise moves more per operand: a slower step
    assert rowwise["time"]["step_seconds"]["estimate"] > d["time"]["step_seconds"]["estimate"]


@pytest.mark.parametrize("args, message", [
    (["--accelerator", "h100", "--dtype", "fp8", "--fp8-recipe", "mxfp8"],
     "needs a device with microscaling formats"),
    (["--accelerator", "h100", "--fp8-recipe", "rowwise"], "give --dtype fp8 too"),
])
def test_a_recipe_the_run_cannot_use_is_one_line(cli, args, message):
    r = cli("step", "llama-3.1-8b", "--count", 8, "--global-batch", 8, *args)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and message in r.err


def test_mxfp8_runs_on_blackwell(cli):
    r = cli("step", "llama-3.1-8b", "--accelerator", "b200", "--count", 8, "--global-batch", 8,
            "--dtype", "fp8", "--fp8-recipe", "mxfp8", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["layout"]["fp8_recipe"] == "mxfp8"
