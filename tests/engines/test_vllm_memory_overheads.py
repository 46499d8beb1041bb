"""What vLLM subtracts for the cache beyond the weights and the sampler's tensors
(`engines.overheads`): CUDA's device total, PyTorch's cuBLAS workspace, the non-torch memory
each release's snapshot counts; worked by hand, then each term and the memory left for the cache
against published breakdowns and engines' start-up logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc import api
from flopcalc.engines.overheads import (CUBLAS_HOPPER, CUBLAS_OTHER, cublas_workspace,
                                        device_total, non_torch)
from flopcalc.errors import FlopcalcError

pytestmark = [pytest.mark.hand, pytest.mark.published]

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
LOGS = Path("/work/shared/reference/checkpoint-logs.json")
GiB = 1 << 30
CENTI = 10_737_418  # ⌊2^30 / 100⌋: the published figures are hundredths of a GiB


def stage(model: str, **options) -> dict:
    return api.serve(model, **options).to_dict()["capacity"]["memory"]["stages"][-1]


@pytest.mark.hand
def test_cublas_workspace_by_hand() -> None:
    # CublasHandlePool.cpp: ":4096:2:16:8 default, 32MiB for Hopper": 4096 KiB × 8 on sm_90;
    # elsewhere 4096 KiB × 2 + 16 KiB × 8 = 8,388,608 + 131,072
    assert CUBLAS_HOPPER == cublas_workspace("hopper") == 33_554_432
    assert CUBLAS_OTHER == cublas_workspace("blackwell") == cublas_workspace(None) == 8_519_680


@pytest.mark.hand
def test_non_torch_by_release() -> None:
    # tp 1: V1 0.13 GiB = 13 × 10,737,418 = 139,586,434; V0 0.16 GiB = 171,798,688
    assert non_torch("0.11", 1, "h100-sxm").bytes == 139_586_434
    assert non_torch("0.10", 1, "h100-sxm").bytes == 139_586_434
    assert non_torch("0.6", 1, "h100-sxm").bytes == 171_798_688
    # tp > 1, NCCL's cuMem on (0.11+): the growth after the snapshot, 0.55 GiB = 590,557,990
    assert non_torch("0.33", 2, "h100-sxm").bytes == 590_557_990
    assert non_torch(None, 8, "h100-sxm").bytes == 590_557_990  # tp > 2 as tp 2
    # tp > 1, NCCL_CUMEM_ENABLE=0 and the snapshot before start-up (0.6-0.10): 0.20 GiB =
    # 214,748,360, measured per RTX 3090 worker
    assert non_torch("0.10", 4, "h100-sxm").bytes == 214_748_360
    assert non_torch("0.6", 2, "h100-sxm").bytes == 214_748_360
    assert "unverified on h100-sxm" in non_torch("0.10", 4, "h100-sxm").how[0]
    # 0.8 counts all device memory torch has not allocated: + the context, 0.61 GiB
    assert non_torch("0.8", 1, "h100-sxm").bytes == (13 + 61) * CENTI == 794_568_932
    assert non_torch("0.8", 2, "h100-sxm").bytes == (20 + 61) * CENTI == 869_730_858
    assert "unverified on b200" in non_torch("0.11", 1, "b200").how[0]
    assert "unverified" not in non_torch("0.11", 1, "h100-sxm").how[0]


@pytest.mark.hand
def test_device_total() -> None:
    # 81,082 MiB × 1,048,576 = 85,020,639,232, in place of nvidia-smi's 81,559 MiB
    assert device_total("h100-sxm", 85_520_809_984, 85_520_809_984)[0] == 85_020_639_232
    # narrowed by --reserve or --memory-fraction, or another device: the memory given
    assert device_total("h100-sxm", 80_000_000_000, 85_520_809_984) == (80_000_000_000, None)
    assert device_total("b200", 150_000_000_000, 150_000_000_000)[1] is None
    # H200: 143,156 MiB × 1,048,576 = 150,109,945,856 bytes (nvidia-smi: 143,771 MiB)
    assert device_total("h200", 150_754_820_096, 150_754_820_096)[0] == 150_109_945_856


@pytest.mark.hand
def test_llama_8b_on_h100_by_hand() -> None:
    # vLLM 0.11, H100, utilisation 0.9, 8,192 tokens, 1,024 sequences:
    # requested ceil(85,020,639,232 × 0.9) = ceil(76,518,575,308.8) = 76,518,575,309
    # activation: 1,024 × 128,256 logits × 38 = 4,990,697,472 + hidden (8,192 + 2 · 1,024) ·
    # 4,096 · 2 = 83,886,080 + cuBLAS 33,554,432 = 5,108,137,984; non-torch 139,586,434
    st = stage("llama-3.1-8b", accelerator="h100", engine="vllm==0.11", max_model_len=16000)
    assert st["requested_bytes"] == 76_518_575_309
    assert st["activation_bytes"] == 5_108_137_984
    assert st["non_torch_bytes"] == 139_586_434
    assert st["available_bytes"] == (76_518_575_309 - st["weights_bytes"] - 5_108_137_984
                                     - 139_586_434)
    # the low end of the interval (FlashInfer's path, 14 bytes per logit) subtracts the same
    assert st["available_high_bytes"] == st["available_bytes"] + 1_024 * 128_256 * (38 - 14)


# llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md (commit 2593348):
# vllm/vllm-openai:v0.11.0 on an H100 ("Free memory on device (78.57/79.18 GiB)"), max-model-len
# 16,000, block 128, prefix caching; "Desired GPU utilization: 0.9 (71.26 GiB)". gpt-oss-120b's
# row states 0.9 but its figures add up at 0.95: 79.18 × 0.95 − 64.38 − 7.38 − 0.13 = 3.33.
LLM_D = [
    # model, options, peak activation GiB, available GiB
    ("qwen3-0.6b", {}, 5.56, 64.45),
    ("llama-3.1-8b", {}, 4.76, 51.38),
    ("qwen3-32b", {}, 5.64, 4.45),
    ("qwen3-32b", {"tp": 2}, 5.64, 34.49),
    ("gpt-oss-20b", {}, 7.38, 50.28),
    ("gpt-oss-120b", {"gpu_memory_utilization": "0.95"}, 7.38, 3.33),
]


@pytest.mark.published
@pytest.mark.parametrize("model,options,activation,available", LLM_D,
                         ids=[f"{m}-tp{o.get('tp', 1)}" for m, o, _, _ in LLM_D])
def test_each_term_against_the_llm_d_breakdowns(model, options, activation, available) -> None:
    # Before: the device's 81,559 MiB × 0.9 = 71.68 GiB requested, activation 0.03-0.04 GiB low
    # (no cuBLAS workspace), no non-torch memory: the cache +0.60 to +1.08 GiB. After: each
    # term within the log's rounding, the cache within 0.1 GiB.
    st = stage(model, accelerator="h100", engine="vllm==0.11", max_model_len=16000, **options)
    util = float(options.get("gpu_memory_utilization", "0.9"))
    assert round(st["requested_bytes"] / GiB, 2) == round(79.18 * util, 2)
    assert abs(st["activation_bytes"] / GiB - activation) <= 0.01
    assert st["non_torch_bytes"] == (55 if "tp" in options else 13) * CENTI
    assert abs(st["available_bytes"] / GiB - available) < 0.1


def case(case_id: str) -> dict:
    return next(c for c in json.loads(LOGS.read_text())["cases"] if c["id"] == case_id)


@pytest.mark.published
@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
def test_gpt_oss_120b_as_logged() -> None:
    # vllm-project/vllm#27508 (0.11's time): util 0.95, 1,024 tokens, H100: 1.71 GiB.
    # Before 2.46 (+44%); after 1.86 (+8.8%: the weights, 65.90 GiB against Marlin's 65.97
    # logged in #23278, are the rest)
    logged = case("vllm_i27508_gptoss120b_1xh100_util095")["measured"]["available_kv_cache_gib"]
    st = stage(str(DATA / "moe" / "gpt-oss-120b.json"), accelerator="h100",
               mxfp4_backend="marlin", gpu_memory_utilization="0.95",
               max_num_batched_tokens=1024, engine="vllm==0.11")
    assert abs(st["available_bytes"] / GiB - logged) / logged < 0.10
    # vllm-project/vllm#23278 (0.10's defaults: 0.9, 8,192 tokens): "-2.14 GiB", fails.
    # At 0.99 the engine starts; the same estimate at 0.9 takes the difference of the requests
    # back: ceil(85,020,639,232 × 0.99) − ceil(85,020,639,232 × 0.9) = 84,170,432,840 −
    # 76,518,575,309 = 7,651,857,531. By hand: 76,518,575,309 − weights 70,756,592,256 −
    # (205,914,112 × 38 + 58,982,400 + 33,554,432 = 7,917,273,088) − 139,586,434 =
    # −2,294,876,469 = −2.137 GiB (before: −1.56)
    logged = case("vllm_i23278_gptoss120b_1xh100")["measured"]["available_kv_cache_gib"]
    options = dict(accelerator="h100", mxfp4_backend="marlin", engine="vllm==0.10")
    path = str(DATA / "moe" / "gpt-oss-120b.json")
    with pytest.raises(FlopcalcError, match="leave no memory for the cache"):
        stage(path, **options)
    st = stage(path, gpu_memory_utilization="0.99", **options)
    at_09 = st["available_bytes"] - 7_651_857_531
    assert at_09 == -2_294_876_469
    assert round(at_09 / GiB, 2) == logged


@pytest.mark.published
def test_qwen3_235b_fp8_tp4_left_over() -> None:
    # vllm-project/vllm#21348 (0.9.2-0.10, NCCL_CUMEM_ENABLE=0, LMCache connector): 8.11 GiB on
    # 4 H100. Before 10.98 (+35%); after 10.33 (+2.22 GiB, +27%): the device total −0.42, the
    # cuBLAS workspace −0.03 and 0.20 GiB of non-torch memory explain 0.65 of the 2.87 GiB; the
    # rest is not accounted for (the LMCache connector is the setting not modelled)
    st = stage(str(DATA / "quant" / "qwen3-235b-a22b-fp8.json"), accelerator="h100", tp=4,
               engine="vllm==0.10")
    assert st["non_torch_bytes"] == 214_748_360
    assert 2.0 < st["available_bytes"] / GiB - 8.11 < 2.5
