"""SGLang's memory in use before the weights at tp > 1, taken from one published log and
checked against the two other SGLang logs of real checkpoints that state free memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from flopcalc.engines.overheads import CENTI, SGLANG_STARTUP
from tests.conftest import run

pytestmark = [pytest.mark.published, pytest.mark.engine]

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "serve" / "configs"
GiB = 2**30


def test_the_startup_is_what_the_deepseek_v4_log_leaves():
    """SemiAnalysisAI/InferenceX#2128, an H200 worker at tp 8: "Load weight end. quant=fp8,
    fmt=e4m3, avail mem=12.25 GB, mem usage=125.65 GB" (SGLang's GB are GiB): 137.90 GiB free
    before the weights, of CUDA's 143,156 MiB = 139.8008 GiB: 1.9008 GiB in use, kept to the
    log's hundredths."""
    assert SGLANG_STARTUP == 190 * CENTI
    assert abs(143_156 / 1024 - (12.25 + 125.65) - SGLANG_STARTUP / GiB) < 0.01


def test_deepseek_v3_on_eight_h200_free_after_the_weights(cli):
    """sgl-project/sglang#3416: DeepSeek-V3 (fp8 blocks) at tp 8 on H200 logs "Load weight
    end. ... avail mem=58.12 GB" on TP7. Estimated: 150,109,945,856 − 2,040,109,420 − the
    84,331,833,900 bytes a rank holds = 63,738,002,536 bytes = 59.36 GiB, 2.1% over (the
    context and NCCL alone: 60.45 GiB, 4.0%)."""
    d = run(cli, "serve", CONFIGS / "deepseek-v3.json", "--accelerator", "h200", "--tp", "8",
            "--engine", "sglang")["sglang"]
    free_after = d["total_gpu_memory_bytes"] - d["weights_bytes"]
    assert free_after == 150_109_945_856 - 2_040_109_420 - 84_331_833_900
    assert 0 < free_after / GiB / 58.12 - 1 < 0.03


def test_qwen3_235b_pool_within_five_percent_of_its_log(cli):
    """vllm-project/vllm#21348: Qwen3-235B-A22B-FP8 on 4 H100, SGLang at
    --mem-fraction-static 0.93, "KV Cache is allocated. #tokens: 367404": estimated 373,699
    (worked in test_sglang_defaults.py), +1.7%."""
    d = run(cli, "serve", CONFIGS / "qwen3-235b-a22b-fp8.json", "--accelerator", "h100",
            "--tp", "4", "--engine", "sglang==0.4.9", "--mem-fraction-static", "0.93")["sglang"]
    assert abs(d["max_total_num_tokens"] / 367_404 - 1) < 0.05
