"""The Mamba-2 presets and their published configs: each total is the model transformers builds
on the meta device from the stored config.json (tests/pytorch/test_mamba2_hybrids.py builds
them; the figures are written here so that this file runs without torch), and each preset
counts what its config.json counts."""

from __future__ import annotations

import pytest

from tests.conftest import DATA, run

pytestmark = [pytest.mark.recorded, pytest.mark.invariant]

HYBRIDS = DATA / "hf" / "mamba2_hybrids"

# preset: (total, active), the meta-device counts (SOURCES.md in tests/data/hf/mamba2_hybrids).
TOTALS = {
    "mamba2-2.7b": (2_702_599_680, 2_702_599_680),  # the figure
    "nemotron-h-8b": (8_100_852_736, 8_100_852_736),
    # 72 experts top-10: active = total − 40 layers x 62 x 9,437,184 (IBM: "9B active")
    "granite-4.0-h-small": (32_207_337_984, 8_803_121_664),
    "falcon-h1-7b": (7_585_654_880, 7_585_654_880),
}
CONFIGS = {"nemotron-h-8b": "nemotron-h-8b-base-8k.json",
           "granite-4.0-h-small": "granite-4.0-h-small.json",
           "falcon-h1-7b": "falcon-h1-7b.json"}


@pytest.mark.parametrize("name", sorted(TOTALS))
def test_preset_totals(cli, name):
    p = run(cli, "model", name)["params"]
    assert (p["total"], p["active"]) == TOTALS[name]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_preset_counts_what_its_config_counts(cli, name):
    path = HYBRIDS / CONFIGS[name]
    for args in (("--seq", 4097), ("--seq", 300, "--batch", 2, "--elementwise")):
        a, b = run(cli, "model", name, *args), run(cli, "model", path, *args)
        assert a["params"]["components"] == b["params"]["components"]
        assert a["flops"]["components"] == b["flops"]["components"]


def test_mamba2_by_hand(cli):
    c = run(cli, "model", "mamba2-2.7b")["params"]["components"]
    # E = 2·2,560 = 5,120 in 80 heads of 64; in_proj 2,560 x (2·5,120 + 2·128 + 80) =
    # 2,560 x 10,576; the conv over 5,120 + 256 = 5,376 channels, 4 taps and a bias.
    assert c["decoder.mamba.in_proj.weight"] == 64 * 2560 * 10576
    assert c["decoder.mamba.conv.weight"] == 64 * 5376 * 4
    assert c["embed.tokens"] == 50288 * 2560 and "lm_head.weight" not in c


def test_state_and_cache_bytes(cli):
    # Nemotron-H 8B: K and V of 4 layers x 8 heads x 128 in bf16, 16,384 bytes per token; per
    # sequence 24 x (conv 10,240 x 4 in bf16 + the 128 x 64 x 128 state in fp32) = 24 x
    # (81,920 + 4,194,304) = 102,629,376.
    kv = run(cli, "infer", "nemotron-h-8b", "--prompt", 1000, "--gen", 1)["kv_cache"]
    assert (kv["bytes_per_token"], kv["state_bytes_per_sequence"]) == (16_384, 102_629_376)
    # Falcon-H1 7B: every one of the 44 layers keeps K and V, 2 x 2 x 128 x 2 bytes: 45,056.
    kv = run(cli, "infer", "falcon-h1-7b", "--prompt", 1000, "--gen", 1)["kv_cache"]
    assert kv["bytes_per_token"] == 45_056
