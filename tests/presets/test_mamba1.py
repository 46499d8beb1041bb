"""The Mamba-1 presets: their totals (transformers' models on the meta device, measured in
tests/pytorch/test_mamba1.py and recorded in tests/data/hf/mamba1/SOURCES.md), the published
figures they reconcile with, and that the published config.json imports to the same model."""

from __future__ import annotations

import pytest

import flopcalc

from tests.conftest import DATA

pytestmark = [pytest.mark.published, pytest.mark.recorded, pytest.mark.invariant]

TOTALS = {"jamba-1.5-mini": 51_570_323_328, "falcon-mamba-7b": 7_272_665_088}
CONFIGS = {"jamba-1.5-mini": DATA / "hf" / "mamba1" / "jamba-1.5-mini.json",
           "falcon-mamba-7b": DATA / "hf" / "mamba1" / "falcon-mamba-7b.json"}


@pytest.mark.parametrize("name", sorted(TOTALS))
def test_totals(name):
    assert flopcalc.model(name).params.total == TOTALS[name]


def test_jamba_active_is_the_cards_12b():
    # 16 MoE layers (odd i) of 16 experts, top-2: 14 unused experts of 3·4096·14336 =
    # 176,160,768 each: 51,570,323,328 − 14·16·176,160,768 = 12,110,311,296 ("12B active").
    assert flopcalc.model("jamba-1.5-mini").params.active == 12_110_311_296


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seq", [1, 5, 4096])
def test_the_published_config_imports_to_the_preset(name, seq):
    preset, imported = flopcalc.model(name, seq=seq), flopcalc.model(str(CONFIGS[name]), seq=seq)
    assert preset.params.total == imported.params.total
    assert preset.params.active == imported.params.active
    assert preset.flops.forward == imported.flops.forward


def test_jamba_layers():
    # Attention at i % 8 == 4 (4 layers), Mamba-1 elsewhere; MoE at odd i: 2 attention + 14
    # Mamba-1 layers each dense and routed.
    spec = flopcalc.load("jamba-1.5-mini").spec
    kinds = [(type(x.mixers[0]).__name__, x.routed) for x in spec.layers]
    assert [i for i, (k, _) in enumerate(kinds) if k != "Mamba1"] == [4, 12, 20, 28]
    assert [i for i, (_, r) in enumerate(kinds) if r] == list(range(1, 32, 2))
