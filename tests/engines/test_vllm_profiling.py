"""The memory vLLM's profiling run takes (`engines.profiling`): bytes per logit of each release's
sampler warm-up worked by hand from the tensors live at its peak, and the memory left for the
cache against engines' published start-up logs, with the error before (the largest layer's
training activations + 8 bytes per logit) and after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc.commands import COMMANDS
from flopcalc.engines.profiling import RUNS, bytes_per_logit, profile_peak
from flopcalc.errors import FlopcalcError

pytestmark = [pytest.mark.hand, pytest.mark.published]

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
LOGS = Path("/work/shared/reference/checkpoint-logs.json")
GiB = 1 << 30


def per_logit(version: str) -> list[int]:
    return [bytes_per_logit(p, 2) for p in RUNS[version].paths]


@pytest.mark.hand
def test_bytes_per_logit_by_release() -> None:
    # PyTorch-native (0.8, 0.10, 0.11), the peak while torch.sort runs on R×V fp32 logits:
    # bf16 logits 2 (held by _dummy_sampler_run) + fp32 copy 4 (Sampler.forward) + sorted
    # values 4 + int64 indices 8 + SortStable.cu's int64 reverse indices 8 + CUB SortPairs'
    # alternate keys 4 and values 8 = 38 (later: top-k mask 1, probs 4, top-p mask 1, scatter
    # 4 replace the sort's 20 bytes of scratch: 28)
    # FlashInfer (0.10, 0.11): 2 + 4 + top-k-masked logits 4 + softmax 4 = 14
    assert per_logit("0.10") == [38, 14]
    assert per_logit("0.11") == [38, 14]
    # 0.8: native 38; FlashInfer < 0.2.3: 2 + 4 + probabilities 4 = 10
    assert per_logit("0.8") == [38, 10]
    # V0 0.6 at _apply_top_k_top_p's final gather: 2 + 4 + sorted 4 + indices 8 + top-k mask 1
    # + probs_sort 4 + probs_sum (cumsum without out=) 4 + top-p mask 1 + inverse indices 8 +
    # gathered logits 4 = 40
    assert per_logit("0.6") == [40]
    # 0.33: FlashInfer 14, then the Triton pass in place: 2 + 4 + probs 4 + noise 4 = 14
    assert per_logit("0.33") == [14]
    # an fp32 model: .to(torch.float32) copies nothing: 4 + 32
    assert bytes_per_logit(RUNS["0.11"].paths[0], 4) == 36


@pytest.mark.hand
def test_gpt_oss_120b_profiling_peak_by_hand() -> None:
    # vLLM 0.11, max_num_batched_tokens 1024, max_num_seqs 1024: R = 1024 rows of V = 201,088:
    # 205,914,112 logits. Native: × 38 = 7,824,736,256; FlashInfer: × 14 = 2,882,797,568.
    # Hidden states kept: T·d + R·d indexed + R·d rand_like = (1024 + 2048)·2880·2 = 17,694,720
    peak = profile_peak("0.11", 137_625_600, 1024, 1024, 201_088, 2880)
    assert peak.rows == 1024
    assert peak.hidden == 17_694_720
    assert [s for _, _, s in peak.sampler] == [7_824_736_256, 2_882_797_568]
    assert (peak.point, peak.low, peak.high) == (7_842_430_976, 2_900_492_288, 7_842_430_976)
    # a forward larger than hidden + sampler is the peak (activations freed before sampling)
    big = profile_peak("0.11", 9 * GiB, 1024, 1024, 201_088, 2880)
    assert (big.point, big.low, big.high) == (9 * GiB,) * 3


@pytest.mark.hand
def test_v0_samples_max_num_seqs_rows() -> None:
    # vLLM 0.6 (V0): 256 sequences of a 2,048-token batch, V = 128,256: 32,833,536 logits × 40 =
    # 1,313,341,440; hidden (2048 + 256)·4096·2 = 18,874,368 → 1,332,215,808
    peak = profile_peak("0.6", 0, 2048, 256, 128_256, 4096)
    assert peak.rows == 256
    assert peak.point == peak.low == peak.high == 1_332_215_808


def serve(model: str, **options) -> dict:
    return COMMANDS["serve"](model, **options).to_dict()


def stage(d: dict) -> dict:
    return d["capacity"]["memory"]["stages"][-1]


@pytest.mark.published
@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
def test_gpt_oss_120b_util_095_as_logged() -> None:
    # vllm-project/vllm#27508 (2025-10, V1, vLLM 0.11's time; `pip install`-style: no FlashInfer
    # named): `vllm serve openai/gpt-oss-120b --gpu-memory-utilization 0.95
    # --max-num-batched-tokens 1024` on an H100 80GB HBM3 logs "Available KV cache memory: 1.71
    # GiB". Before: 8.11 GiB (+6.40 GiB). With the sampler: 2.46 (+0.75); with CUDA's device
    # total, the cuBLAS workspace and non-torch memory (engines.overheads): 1.86 (+0.15, the
    # weights 0.07 GiB low); FlashInfer's path would leave 6.46.
    case = next(c for c in json.loads(LOGS.read_text())["cases"]
                if c["id"] == "vllm_i27508_gptoss120b_1xh100_util095")
    logged = case["measured"]["available_kv_cache_gib"]
    d = serve(str(DATA / "moe" / "gpt-oss-120b.json"), accelerator="h100",
              mxfp4_backend="marlin", gpu_memory_utilization="0.95",
              max_num_batched_tokens=1024, engine="vllm==0.11")
    st = stage(d)
    got = st["available_bytes"] / GiB
    print(f"gpt-oss-120b 0.95: {got:.2f} GiB [{st['available_low_bytes'] / GiB:.2f}, "
          f"{st['available_high_bytes'] / GiB:.2f}] against {logged}: {got - logged:+.2f} GiB")
    assert 0 < got - logged < 1.0
    assert st["available_low_bytes"] <= st["available_bytes"] <= st["available_high_bytes"]
    assert st["activation_low_bytes"] < st["activation_high_bytes"] == st["activation_bytes"]


@pytest.mark.published
@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
def test_gpt_oss_120b_default_refuses_as_logged() -> None:
    # vllm-project/vllm#23278 (2025-08-20, vLLM 0.10.1's time, defaults: utilisation 0.9,
    # 8192 tokens, 1024 sequences on an H100): "Available KV cache memory: -2.14 GiB",
    # "EngineCore failed to start". Before, flopcalc left 3.22 GiB and started; the native
    # path's peak (7.84 GB + the forward) left ceil(85,520,809,984 × 0.9) −
    # 70,756,592,256 − 7,883,718,656 < 0 and it refuses as the engine did.
    with pytest.raises(FlopcalcError, match="leave no memory for the cache"):
        serve(str(DATA / "moe" / "gpt-oss-120b.json"), accelerator="h100",
              mxfp4_backend="marlin", engine="vllm==0.10")


@pytest.mark.published
def test_qwen3_235b_fp8_on_four_h100() -> None:
    # vllm-project/vllm#21348 (2025-07-22, between vLLM 0.9.2 and 0.10.0, so 0.10's code and
    # defaults): Qwen3-235B-A22B-FP8, --tensor-parallel-size 4 on 4 H100, "Available KV cache
    # memory: 8.11 GiB". Its config.json with the published quantization_config (fp8, 128×128
    # blocks). Before: 14.41 GiB (+6.30, +78%); with the sampler 10.98 (+2.87, +35%); with
    # engines.overheads 10.33 (+2.22, +27%): 0.20 GiB of non-torch memory (NCCL's cuMem off)
    # and the LMCacheConnectorV1 the launch names (--kv-transfer-config) not counted.
    d = serve(str(DATA / "quant" / "qwen3-235b-a22b-fp8.json"), accelerator="h100", tp=4,
              engine="vllm==0.10")
    st = stage(d)
    got = st["available_bytes"] / GiB
    print(f"Qwen3-235B-A22B-FP8 tp 4: {got:.2f} GiB against 8.11: {got - 8.11:+.2f} GiB")
    assert st["weights_bytes"] == 59_186_485_760  # as SGLang's pool reproduces (+0.6%)
    assert 0 < got - 8.11 < 3.0


@pytest.mark.hand
def test_only_the_last_stage_samples() -> None:
    # Llama-3.1-8B at pp 2 on H100s, vLLM 0.33 (8192 tokens, 1024 sequences): stage 0 keeps no
    # logits; stage 1 adds R·V·14 = 1024·128,256·14 = 1,838,678,016 bytes over the hidden
    # states (8192 + 2·1024)·4096·2 = 83,886,080; both stages hold PyTorch's 32 MiB cuBLAS
    # workspace (Hopper: 4096 KiB × 8 = 33,554,432) and 0.33's CUDA-graph point (the middle
    # published estimate, 0.36 GiB = 36 × 10,737,418 = 386,547,048) besides
    d = serve("llama-3.1-8b", accelerator="h100", pp=2)
    first, last = d["capacity"]["memory"]["stages"]
    ws = 33_554_432 + 386_547_048
    assert last["activation_bytes"] == max(first["activation_bytes"] - ws,
                                           83_886_080 + 1_838_678_016) + ws
    assert first["activation_bytes"] < last["activation_bytes"]
