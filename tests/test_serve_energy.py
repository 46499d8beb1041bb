"""Energy per output token under load: board power x its share while serving over the output
tokens/s (predict.energy), by hand, and through serve's JSON."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("simpy")

import flopcalc  # noqa: E402
from flopcalc import commands  # noqa: E402
from flopcalc.errors import FlopcalcError  # noqa: E402
from flopcalc.predict import energy  # noqa: E402


def test_joules_per_token_by_hand():
    # 8 boards of 700 W at 0.4 / 0.7 / 0.9 of it; 2,000 / 1,000 / 500 output tokens/s:
    # low 8·700·0.4 / 2,000 = 1.12 J, estimate 8·700·0.7 / 1,000 = 3.92 J,
    # high 8·700·0.9 / 500 = 10.08 J
    assert energy.joules_per_token(700, 8, (500, 1000, 2000)) == pytest.approx(
        (1.12, 3.92, 10.08), rel=1e-12)


def test_board_watts_cite_the_datasheets():
    assert energy.board_watts("h200")[0] == 700  # H200 SXM datasheet: up to 700 W
    assert energy.board_watts("b200")[0] == 1000  # HGX B200: 1,000 W
    assert energy.board_watts("tpu-v5p") is None  # no published figure: not reported


def _with_watts(monkeypatch, watts):
    made = commands._load_options

    def patched(*a, **k):
        opts = made(*a, **k)
        if opts is not None:
            opts.board_watts, opts.board_watts_source = watts, "test"
        return opts

    monkeypatch.setattr(commands, "_load_options", patched)


def test_energy_in_the_json(monkeypatch):
    _with_watts(monkeypatch, 700.0)
    r = flopcalc.serve("llama-3.1-8b", accelerator="h100", prompt=64, gen=8,
                       concurrency="1", max_model_len=4096)
    p = json.loads(json.dumps(r.to_dict()))["performance"]
    t, j = p["output_tokens_per_second"], p["joules_per_output_token"]
    # one board at 700 W: J = 700 x share / tokens/s at the opposite end
    assert j["estimate"] == pytest.approx(700 * 0.7 / t["estimate"], rel=1e-9)
    assert j["low"] == pytest.approx(700 * 0.4 / t["high"], rel=1e-9)
    assert j["high"] == pytest.approx(700 * 0.9 / t["low"], rel=1e-9)


def test_bad_board_power(monkeypatch):
    _with_watts(monkeypatch, -5.0)
    with pytest.raises(FlopcalcError, match="more than 0"):
        flopcalc.serve("llama-3.1-8b", accelerator="h100", prompt=64, gen=8,
                       concurrency="1", max_model_len=4096)
