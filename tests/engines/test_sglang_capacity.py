"""`serve --engine sglang`: SGLang's token pool (max_total_num_tokens) by SGLang's own formula
(server_args.py `_handle_gpu_memory_settings`; the model runner's `profile_max_num_token` and
`init_memory_pool`), worked by hand here, and against SGLang's published start-up logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.published, pytest.mark.engine, pytest.mark.behaviour]

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "serve" / "configs"
LLAMA = CONFIGS / "llama-3.1-8b.json"  # 32 layers, 8 KV heads of 128, bf16, 131,072 context


def test_given_memory_in_whole_pages(cli) -> None:
    """cell_size = kv_heads·head_dim·layers·2 (K and V)·2 bytes = 8·128·32·2·2 = 131,072.
    10,000,000,000 bytes // 131,072 = 76,293 tokens (76,293·131,072 = 9,999,876,096); pages
    of 64: 76,293 // 64 = 1,192 pages = 76,288 tokens. The buffers hold size + page_size slots:
    (76,288 + 64)·131,072 = 10,007,609,344 bytes, K and V half each: 4.66 GiB. The request pool
    min(max(int(76,288 / 131,072·512), 2048), 4096) = min(max(298, 2048), 4096) = 2,048."""
    d = run(cli, "serve", LLAMA, "--engine", "sglang", "--kv-memory", "10000000000",
            "--page-size", "64")["sglang"]
    assert d["engine"] == "sglang"
    assert d["cell_size"] == 131_072
    assert d["max_total_num_tokens"] == 76_288
    assert d["kv_cache_bytes"] == 10_007_609_344
    assert d["log_line"] == ("KV Cache is allocated. #tokens: 76288, K size: 4.66 GB, "
                             "V size: 4.66 GB")
    assert d["max_running_requests"] == 2048


def test_default_fraction_on_an_h100(cli) -> None:
    """H100 80GB: nvidia-smi's 81,559 MiB. Under 90 GiB at tp 1 SGLang takes chunks of 8,192
    and CUDA graphs to batch 256: reserved = 512 + 8,192·1.5 + 256·2 + 1·1/8·1,024 = 512 +
    12,288 + 512 + 128 = 13,440 MiB (over the 10 GiB floor); mem_fraction_static =
    round((81,559 − 13,440) / 81,559, 3) = round(0.83521, 3) = 0.835.
    Free before the weights, estimated: CUDA's total 81,082 MiB = 85,020,639,232 bytes (the
    driver keeps 477 MiB of nvidia-smi's) − the CUDA context's measured 0.61 GiB
    (61·10,737,418 = 654,982,498) = 84,365,656,734 bytes; the weights, Llama 3.1 8B's
    8,030,261,248 parameters in bf16, 16,060,522,496 bytes; rest = (84,365,656,734 −
    16,060,522,496) − 84,365,656,734·(1 − 0.835) = 84,365,656,734·0.835 − 16,060,522,496 =
    54,384,800,876.89 → 54,384,800,876 bytes; // 131,072 = 414,923 tokens."""
    d = run(cli, "serve", LLAMA, "--engine", "sglang", "--accelerator", "h100")["sglang"]
    assert (d["chunked_prefill_size"], d["cuda_graph_max_bs"]) == (8192, 256)
    assert d["mem_fraction_static"] == 0.835
    assert d["weights_bytes"] == 16_060_522_496
    assert d["rest_bytes"] == 54_384_800_876
    assert d["max_total_num_tokens"] == 414_923


def test_latent_pool_matches_a_published_log(cli) -> None:
    """DeepSeek-V3 under SGLang at tp 2 (kvcache-ai/ktransformers#1804, --max-total-tokens
    10000): "KV Cache is allocated. #tokens: 10000, KV size: 0.65 GB". The latent pool is one
    copy of kv_lora_rank + qk_rope_head_dim = 512 + 64 values per layer, not split by tp:
    61·576·2 = 70,272 bytes per token; 10,000 tokens take 702,720,000 bytes, and the buffers
    (10,000 + 1)·70,272 bytes = 0.6545 GiB."""
    d = run(cli, "serve", CONFIGS / "deepseek-v3.json", "--tp", "2", "--engine", "sglang",
            "--kv-memory", "702720000")["sglang"]
    assert d["cell_size"] == 70_272
    assert d["max_total_num_tokens"] == 10_000
    assert d["log_line"] == "KV Cache is allocated. #tokens: 10000, KV size: 0.65 GB"


def test_qwen3_235b_fp8_on_four_h100(cli) -> None:
    """Qwen3-235B-A22B-FP8 on 4 H100 at --mem-fraction-static 0.9 (the published SGLang log of
    this machine, vllm-project/vllm#21348, was launched at 0.93: see
    tests/engines/test_sglang_defaults.py). 94 layers, 4 KV heads of 128: one per rank at tp 4,
    1·128·94·2·2 = 48,128 bytes per token. Free before the weights at tp 4: CUDA's
    85,020,639,232 − the context's 654,982,498 − NCCL's 214,748,360 (0.20 GiB, cuMem off) =
    84,150,908,374; 0.9·that = 75,735,817,536.6 − the 59,186,485,760 bytes of fp8 weights a
    rank holds = 16,549,331,776 bytes // 48,128 = 343,860 tokens."""
    d = run(cli, "serve", "qwen3-235b-a22b", "--accelerator", "h100", "--tp", "4",
            "--weights-dtype", "fp8-block", "--engine", "sglang", "--mem-fraction-static",
            "0.9")["sglang"]
    assert d["cell_size"] == 48_128
    assert d["max_total_num_tokens"] == 321_974


@pytest.mark.parametrize("args, words", [
    (("--engine", "sglang==0.3.0"), "SGLang 0.4.9, 0.5.5"),
    (("--mem-fraction-static", "0.8"), "--mem-fraction-static is SGLang's option"),
    (("--engine", "sglang", "--kv-memory", "1000"), "Not enough memory"),
    (("--engine", "sglang", "--kv-memory", "1GiB", "--mem-fraction-static", "0"),
     "--mem-fraction-static"),
])
def test_bad_input_one_line(cli, args: tuple, words: str) -> None:
    r = cli("serve", str(LLAMA), *args)
    assert r.code == 2
    assert words in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_sliding_window_pools_refused(cli) -> None:
    r = cli("serve", str(CONFIGS / "gemma-3-27b.json"), "--engine", "sglang", "--kv-memory",
            "10GiB")
    assert r.code == 2
    assert "sliding" in r.err and "--engine vllm" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_recurrent_states_split_off_first(cli) -> None:
    """Nemotron-H-8B at tp 1: 24 Mamba-2 layers of 128 heads of 64, state 128, 8 groups, conv 4:
    conv window (8,192 + 2·8·128)·3 = 30,720 values in bf16 = 61,440 bytes, SSM state
    128·64·128 = 1,048,576 values in fp32 (SGLang's mamba_ssm_dtype) = 4,194,304 bytes:
    4,255,744 per layer, 102,137,856 per request. Of 10 GiB = 10,737,418,240 bytes the states
    take rest·0.9/1.9 = 5,086,145,482.1 → // 102,137,856 = 49 requests (5,004,754,944
    bytes); the token pool gets 5,732,663,296 bytes. Its 4 attention layers keep 8 KV heads of
    128: 8·128·4·2·2 = 16,384 bytes per token → 349,894 tokens. The request pool,
    min(max(int(349,894 / 8,192·512), 2048), 4096) = 4,096, is capped by the state slots at
    three a request (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO): 49 // 3 = 16."""
    d = run(cli, "serve", "nemotron-h-8b", "--engine", "sglang", "--kv-memory", "10GiB")["sglang"]
    assert d["mamba_cache_per_req"] == 102_137_856
    assert d["max_mamba_cache_size"] == 49
    assert d["cell_size"] == 16_384
    assert d["rest_bytes"] == 5_732_663_296
    assert d["max_total_num_tokens"] == 349_894
    assert d["max_running_requests"] == 16  # min(4,096, 49 state slots // 3)
