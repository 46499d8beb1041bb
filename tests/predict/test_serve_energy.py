"""Energy per output token under load: board power x its share while serving over the output
tokens/s (predict.energy), by hand, from the presets' datasheet TDP and from --board-watts."""

from __future__ import annotations

import pytest

pytest.importorskip("simpy")

import flopcalc  # noqa: E402
from flopcalc.errors import FlopcalcError  # noqa: E402
from flopcalc.models.accelerators import load_accelerator  # noqa: E402
from flopcalc.predict import energy  # noqa: E402

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]
RUN = dict(accelerator="h100", prompt=64, gen=8, concurrency="1", max_model_len=4096)


def test_joules_per_token_by_hand():
    # 8 boards of 700 W at 0.4 / 0.7 / 0.9 of it; 2,000 / 1,000 / 500 output tokens/s:
    # low 8·700·0.4 / 2,000 = 1.12 J, estimate 8·700·0.7 / 1,000 = 3.92 J,
    # high 8·700·0.9 / 500 = 10.08 J
    assert energy.joules_per_token(700, 8, (500, 1000, 2000)) == pytest.approx(
        (1.12, 3.92, 10.08), rel=1e-12)


def test_board_watts_cite_the_datasheets():
    h200, b200 = load_accelerator("h200").spec, load_accelerator("b200").spec
    assert h200.board_watts == 700 and "H200" in h200.board_watts_source  # up to 700 W
    assert b200.board_watts == 1000  # HGX B200: 1,000 W
    assert load_accelerator("tpu-v5p").spec.board_watts is None  # no published figure


def _check(performance, watts):
    t, j = performance["output_tokens_per_second"], performance["joules_per_output_token"]
    # one board at `watts`: J = watts x share / tokens/s at the opposite end
    assert j["estimate"] == pytest.approx(watts * 0.7 / t["estimate"], rel=1e-9)
    assert j["low"] == pytest.approx(watts * 0.4 / t["high"], rel=1e-9)
    assert j["high"] == pytest.approx(watts * 0.9 / t["low"], rel=1e-9)


def test_energy_from_the_presets_tdp():
    # the H100 SXM's datasheet: up to 700 W
    _check(flopcalc.serve("llama-3.1-8b", **RUN).to_dict()["performance"], 700)


def test_energy_from_board_watts(cli):
    r = cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--prompt", "64", "--gen", "8",
            "--concurrency", "1", "--max-model-len", "4096", "--board-watts", "500", "-f",
            "json")
    assert r.code == 0, r.err
    _check(r.json()["performance"], 500)


def test_bad_board_power():
    with pytest.raises(FlopcalcError, match="--board-watts"):
        flopcalc.serve("llama-3.1-8b", **{**RUN, "board_watts": "-5"})
    with pytest.raises(FlopcalcError, match="under load"):
        flopcalc.serve("llama-3.1-8b", accelerator="h100", board_watts=500)
