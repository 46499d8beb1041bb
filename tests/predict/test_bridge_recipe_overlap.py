"""The expert all-to-all overlap and the token dispatcher of Megatron-Bridge's published runs
as each release's scripts set them: Qwen3-30B-A3B on 8 GB300 in MXFP8 (tp 1, ep 8,
micro-batch 8, global batch 512) runs without the overlap in 26.02 and 26.04
(scripts/performance/configs/qwen/qwen3_workload_base_configs.py at v0.3.0 and v0.4.0:
QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1 leaves moe_a2a_overlap False) and with it from
26.06 (v0.5.0: moe_a2a_overlap=True, with a full-iteration CUDA graph), where the measured
step falls from 8.3-8.6 s to 5.8-5.9 s on the pages; the dispatcher is flex only where a
config sets moe_flex_dispatcher_backend (tests/bridge_runs.py ALLTOALL)."""

from __future__ import annotations

import pytest

from tests.bridge_runs import options, predict, runs

pytestmark = pytest.mark.published


def _rows(release: str) -> list[dict]:
    return [r for r in runs() if r["release"] == release and r["model"] == "Qwen3_30B_a3B"
            and r["system"] == "DGX-GB300"]


@pytest.mark.parametrize("release,overlap", [("26.02", False), ("26.04", False),
                                             ("26.06", True), ("26.08", True)])
def test_the_release_recipe_decides_the_overlap(release: str, overlap: bool) -> None:
    (row,) = _rows(release)
    assert bool(options(row).get("moe_overlap")) is overlap


def test_the_overlap_reaches_the_estimate() -> None:
    """The same layout, with and without the recipe's overlap: the estimate hides the
    all-to-all (faster); only the overlap hides it at the low end, and the high end hides
    it in neither (the eager 26.04 run's high end adds its host launches)."""
    (before,) = _rows("26.04")
    (after,) = _rows("26.06")
    a, b = predict(before), predict(after)
    assert b["estimate"] < a["estimate"]
    assert b["low"] < a["low"] and b["high"] <= a["high"]


@pytest.mark.parametrize("release,model,system,dispatcher", [
    # QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V2 at v0.4.0 sets no flex backend: the
    # recipe's all-to-all; QWEN3_30B_A3B_..._H100_FP8_CS_V1 sets hybridep
    ("26.04", "Qwen3_235B_a22B", "DGX-H100", "alltoall"),
    ("26.04", "Qwen3_30B_a3B", "DGX-H100", "flex"),
    # GPT_OSS_120B_..._GB200_BF16_V2: none at v0.3.0, hybridep at v0.4.0
    ("26.02", "GPT OSS 120B", "DGX-GB200", "alltoall"),
    ("26.04", "GPT OSS 120B", "DGX-GB200", "flex"),
])
def test_the_release_recipe_decides_the_dispatcher(release, model, system, dispatcher):
    rows = [r for r in runs() if r["release"] == release and r["model"] == model
            and r["system"] == system]
    assert rows and {options(r)["dispatcher"] for r in rows} == {dispatcher}
