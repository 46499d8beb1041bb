"""`flopcalc serve` on consumer GPUs against engines' own start-up logs
(`../shared/reference/checkpoint-logs.json`, each case cited by its test).

vLLM prints memory as round(bytes / 2³⁰, 2) GiB, so a logged "5.98 GiB" is any byte count
within ±0.005 GiB of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc import api
from flopcalc.commands import COMMANDS
from flopcalc.engines.overheads import DEVICE_TOTALS

pytestmark = pytest.mark.published

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = Path("/work/shared/reference/checkpoint-logs.json")
GiB, MiB = 1 << 30, 1 << 20

QWEN36_NVFP4 = DATA / "hf" / "quant" / "qwen3.6-35b-a3b-nvfp4.json"
# noonghunna/club-3090#612 (vLLM v0.24.0, RTX 5090, tp 1): its non-default arguments
RUN_612 = dict(accelerator="rtx-5090", engine="vllm==0.33", max_model_len=131072,
               kv_dtype="fp8", max_num_seqs=1, max_num_batched_tokens=8192,
               gdn_prefill_backend="triton")
# Qwen3.6-35B-A3B's vision tower (27 blocks of 1152, patch 16 x 16 x 2 frames, 2304 positions,
# the merger to 2048), which vLLM loads when images are allowed (the log's
# limit_mm_per_prompt: image 2) and flopcalc counts for qwen3_5_moe: per block 2 x
# LayerNorm 2·1152 + qkv 1152·3456 + 3456 + proj 1152² + 1152 + fc1 1152·4304 + 4304 + fc2
# 4304·1152 + 1152 = 15,239,504; x 27 = 411,466,608; patch conv 3·2·16·16·1152 + 1152 =
# 1,770,624; positions 2304·1152 = 2,654,208; merger LayerNorm 2·1152 + 4608² + 4608 +
# 4608·2048 + 2048 = 30,679,808; in all 446,571,248 parameters (transformers 5.24's
# Qwen3_5MoeVisionModel on the meta device counts the same), 893,142,496 bytes in bf16.
VISION_TOWER_BYTES = 2 * 446_571_248
# the language model's weights: experts and attention NVFP4, the rest bf16
TEXT_WEIGHT_BYTES = 22_443_567_696


def logged(case: str) -> dict:
    return next(c for c in json.loads(LOGS.read_text())["cases"] if c["id"] == case)


def serve(model: Path, **options) -> dict:
    return COMMANDS["serve"](str(model), **options).to_dict()


def test_rtx_5090_device_total_prints_as_the_log():
    """noonghunna/club-3090#1087 (2 x RTX 5090): "Free memory on device (30.27/31.4 GiB) on
    startup. Desired GPU memory utilization is (0.92, 28.88 GiB)": CUDA's total must print as
    31.4 GiB and 0.92 of it as 28.88 GiB, as vLLM rounds (round(x, 2))."""
    total = DEVICE_TOTALS["rtx-5090"].bytes
    assert round(total / GiB, 2) == 31.40
    assert round(0.92 * total / GiB, 2) == 28.88
    assert total < 32_607 * MiB  # below nvidia-smi's: the driver keeps some


def test_rtx_4090_device_total_prints_as_pytorch():
    """PyTorch's "GPU 0 has a total capacity of 23.64 GiB" on RTX 4090s
    (3DTopia/Phidias-Diffusion#8, ali-vilab/VGen#104), below nvidia-smi's 24,564 MiB."""
    total = DEVICE_TOTALS["rtx-4090"].bytes
    assert f"{total / GiB:.2f}" == "23.64" and total < 24_564 * MiB


def test_qwen3_6_nvfp4_rtx_5090_cache_from_the_logged_memory():
    """club-3090#612: "Available KV cache memory: 5.98 GiB", "GPU KV cache size: 567,978 tokens",
    "Maximum concurrency for 131,072 tokens per request: 4.33x". 10 attention layers of 2 KV
    heads x 256 in fp8 (1,024 bytes per token each), 30 Gated DeltaNet layers of 2,146,304-byte
    states (fp32 recurrent state: the config's mamba_ssm_dtype): block 2,096 tokens (no GDN
    prefill checkpoint in v0.24, as 0.33 with Triton's GDN prefill), 4 groups of 10 layers,
    21,463,040 bytes per block. 5.98 ± 0.005 GiB holds 298 or 299 blocks
    (6,415,607,399 // 21,463,040 = 298, 6,426,344,816 // 21,463,040 = 299); a request of
    131,072 tokens takes 63 + 3 x 2 = 69, so 299 blocks print 299 / 69 = 4.33x and
    int(299 / 69 x 131,072) = 567,978 tokens."""
    lo = int((5.98 - 0.005) * GiB) + 1
    hi = int((5.98 + 0.005) * GiB)
    counts = [serve(QWEN36_NVFP4, kv_memory=str(m), **RUN_612)["capacity"]["num_blocks"]
              for m in (lo, hi)]
    assert counts == [298, 299]
    c = serve(QWEN36_NVFP4, kv_memory=str(hi), **RUN_612)["capacity"]
    assert c["bytes_per_block"] == 21_463_040 and c["blocks_per_request"] == 69
    assert c["log_line"] == ("GPU KV cache size: 567,978 tokens, Maximum concurrency for "
                             "131,072 tokens per request: 4.33x")


@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
def test_qwen3_6_nvfp4_rtx_5090_estimated_memory_against_the_log():
    """club-3090#612 again, the memory estimated from the config.json alone (ModelOpt NVFP4:
    tests/data/hf/quant/SOURCES.md), as vLLM 0.33 profiles it with v0.24's settings and 0.33's
    default utilisation 0.92 (0.25's CacheConfig has it too; the log does not state it):

        CUDA's total 32,149 MiB = 33,710,669,824 x 0.92 → 31,013,816,239
        − weights 23,336,710,192 (the language model 22,443,567,696: experts and attention
          NVFP4, the rest bf16; the vision tower 893,142,496 in bf16, which vLLM loads since
          the run allows images)
        − activation peak 1,608,793,448 (8,192 tokens; CUDA graphs' point 386,547,048 in it)
        − non-torch 139,586,434 − persistent buffers 33,903,616
        = 5,894,822,549 bytes = 5.49 GiB against 5.98 logged: −8.2%.

    The log has no "Model loading took" line, so the weights are not checked against it.
    Without the tower (as `--language-model-only` would load it) the estimate is 6.32 GiB,
    +5.7%; both lie within 10% of the log."""
    measured = logged("vllm_club3090_i612_qwen36_35b_a3b_nvfp4_rtx5090")["measured"]
    assert measured["available_kv_cache_gib"] == 5.98
    r = serve(QWEN36_NVFP4, **RUN_612)
    stage = r["capacity"]["memory"]["stages"][0]
    assert stage["device_bytes"] == 32_149 * MiB  # CUDA's total, not nvidia-smi's 32,607 MiB
    assert r["weights"]["device_bytes"] == [TEXT_WEIGHT_BYTES + VISION_TOWER_BYTES]
    ours = stage["available_bytes"] / GiB
    print(f"estimated {ours:.2f} GiB ({(ours - 5.98) / 5.98:+.1%}), without the vision tower "
          f"{ours + VISION_TOWER_BYTES / GiB:.2f} GiB, against 5.98 GiB logged")
    assert abs(ours - 5.98) / 5.98 < 0.10
    assert abs(ours + VISION_TOWER_BYTES / GiB - 5.98) / 5.98 < 0.10


@pytest.mark.xfail(strict=True, reason="with the vision tower counted the log (5.98 GiB) lies "
                   "above the estimate's interval (1.47-5.85 GiB)")
def test_qwen3_6_nvfp4_rtx_5090_log_within_the_estimates_interval():
    """club-3090#612: the estimate's interval (activation low to high, CUDA graphs from 1 MiB to
    the largest published estimate) held the log while the vision tower was left out (2.30-6.68
    GiB); with the tower's 893,142,496 bytes loaded it is 1.47-5.85 GiB and the log lies 0.13 GiB
    above it. What the weights and the profile leave unexplained (+0.49 GiB against the log) is
    most likely the CUDA-graph point (0.36 GiB, a middle published estimate; one sequence at
    most captures the smallest graphs) and the activation peak (training's attention tensors,
    more than inference keeps), which the log prints neither of; or a checkpoint whose tower is
    quantised too (vLLM's ModelOpt rule quantises every linear layer its exclude_modules do not
    name, the tower's included, where flopcalc keeps towers in the checkpoint's dtype)."""
    stage = serve(QWEN36_NVFP4, **RUN_612)["capacity"]["memory"]["stages"][0]
    assert stage["available_low_bytes"] <= 5.98 * GiB <= stage["available_high_bytes"]


@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
def test_deepseek_v3_fp8_on_rtx_4090s_weights():
    """deepseek-ai/DeepSeek-V3#205 (vLLM 0.6.6, 4 nodes of 8 RTX 4090, tp 8 x pp 4): "Loading
    model weights took 16.9583 GB" on the driver's rank (V0's "GB" is GiB), pipeline stage 0:
    the fp8 128 x 128-block checkpoint from its config.json, the same on the 4090 preset as
    without one (tests/hf/test_quant_config.py checks it without): 16.5379 GiB, −2.5%. The
    issue reports an out-of-memory failure at max_model_len 128 and utilisation 0.98 without
    saying where; flopcalc finds every stage fits (the fullest, stage 2, with 1.07 GiB of the
    4090's 23.64 GiB left for the cache), so that failure is not reproduced here."""
    gib = logged("deepseek_i205_dsv3_fp8_32x4090_tp8pp4")["measured"]["weights_gb_per_rank"][0]
    r = api.serve(str(DATA / "hf" / "moe" / "deepseek-v3.json"), kv_memory="1GiB", tp=8, pp=4,
                  accelerator="rtx-4090", engine="vllm==0.6")
    ours = r.weights.device_bytes[0] / GiB
    assert abs(ours - gib) / gib < 0.03
