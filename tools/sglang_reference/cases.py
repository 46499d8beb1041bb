"""The cases SGLang's own code is run on (reference.py) and flopcalc is held to
(tests/engines/test_sglang_reference.py reads the recorded results).

gpu_mem_mib: the device's memory as SGLang reads it (nvidia-smi memory.total: H100 80GB 81,559,
H200 143,771, A100 40GB 40,960, L40S 46,068, RTX 4090 24,564); weights_bytes: one rank's
weights (free memory after loading = the device's − these). Omitted options take SGLang's
defaults; `versions` limits a case to the releases that have the model.
"""

H100, H200, A100_40, L40S, RTX4090 = 81559, 143771, 40960, 46068, 24564
ALL = ("0.4.9", "0.5.5", "0.5.23")
BEFORE_HOOKS = ("0.4.9", "0.5.5")  # settings in ServerArgs, pools sized in the model runner
HOOKS = ("0.5.23",)  # settings resolved in hooks, pools sized by configurators

CASES = [
    # MHA: Llama 2 7B, 32 KV heads of 128
    dict(model="llama-2-7b", tp=1, gpu_mem_mib=H100, weights_bytes=13_476_839_424),
    dict(model="llama-2-7b", tp=4, gpu_mem_mib=L40S, weights_bytes=3_369_209_856),
    dict(model="llama-2-7b", tp=1, gpu_mem_mib=RTX4090, weights_bytes=13_476_839_424,
         page_size=16),
    # GQA: Llama 3.1 8B (8 KV heads), Qwen3 14B (8 KV heads, head_dim 128 given)
    dict(model="llama-3.1-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_060_522_496),
    dict(model="llama-3.1-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_060_522_496,
         page_size=64),
    dict(model="llama-3.1-8b", tp=2, gpu_mem_mib=A100_40, weights_bytes=8_030_261_248,
         mem_fraction_static=0.8, kv_cache_dtype="fp8_e4m3"),
    dict(model="llama-3.1-8b", tp=1, gpu_mem_mib=RTX4090, weights_bytes=16_060_522_496),
    dict(model="llama-3.1-8b", tp=8, gpu_mem_mib=H100, weights_bytes=2_007_565_312,
         context_length=32768, max_running_requests=64),
    dict(model="llama-3.1-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_060_522_496,
         max_total_tokens=100_000, page_size=16),
    dict(model="llama-3.1-8b", tp=1, gpu_mem_mib=RTX4090, weights_bytes=23_000_000_000),
    dict(model="qwen3-14b", tp=2, gpu_mem_mib=H200, weights_bytes=14_766_000_000),
    # Qwen3-235B-A22B-FP8's published config.json on 4 H100 (4 KV heads: one a rank); the
    # 59,186,485,760 bytes of fp8 weights a rank holds (flopcalc's figure), defaults and 0.9
    dict(model="qwen3-235b-a22b-fp8", tp=4, gpu_mem_mib=H100, weights_bytes=59_186_485_760),
    dict(model="qwen3-235b-a22b-fp8", tp=4, gpu_mem_mib=H100, weights_bytes=59_186_485_760,
         mem_fraction_static=0.9),
    # 0.5.23's request pool (at most half the tokens) and decode graphs capped by a given
    # --max-running-requests; an RTX 4090 at tp 4 (its 160-graph band), an unknown-size case
    dict(model="llama-3.1-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_060_522_496,
         max_running_requests=48, max_total_tokens=60),
    dict(model="llama-3.1-8b", tp=4, gpu_mem_mib=RTX4090, weights_bytes=4_015_130_624),
    dict(model="llama-2-7b", tp=2, gpu_mem_mib=H200, weights_bytes=6_738_419_712,
         max_running_requests=1000),
    # MLA: DeepSeek-V3, 61 layers of kv_lora_rank 512 + rope 64, not split by tp
    dict(model="deepseek-v3", tp=8, gpu_mem_mib=H200, weights_bytes=85_000_000_000),
    dict(model="deepseek-v3", tp=8, gpu_mem_mib=H200, weights_bytes=85_000_000_000,
         page_size=64, kv_cache_dtype="fp8_e4m3"),
    dict(model="deepseek-v3", tp=2, gpu_mem_mib=49140, weights_bytes=14_023_000_000,
         mem_fraction_static=0.9, max_total_tokens=10_000, max_running_requests=10),
    # hybrid: Qwen3-Next (gated delta net), Nemotron-H (Mamba-2); SGLang 0.4.9 has neither
    dict(model="qwen3-next-80b-a3b", tp=4, gpu_mem_mib=H100, weights_bytes=40_000_000_000,
         versions=BEFORE_HOOKS),
    dict(model="qwen3-next-80b-a3b", tp=2, gpu_mem_mib=H200, weights_bytes=80_000_000_000,
         page_size=64, versions=BEFORE_HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_200_000_000,
         versions=BEFORE_HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_200_000_000,
         mem_fraction_static=0.9, context_length=8192, page_size=16, versions=BEFORE_HOOKS),
    # the same four under 0.5.23 (recorded apart, so the records above stay as they were)
    dict(model="qwen3-next-80b-a3b", tp=4, gpu_mem_mib=H100, weights_bytes=40_000_000_000,
         versions=HOOKS),
    dict(model="qwen3-next-80b-a3b", tp=2, gpu_mem_mib=H200, weights_bytes=80_000_000_000,
         page_size=64, versions=HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_200_000_000,
         versions=HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_200_000_000,
         mem_fraction_static=0.9, context_length=8192, page_size=16, versions=HOOKS),
    # 0.5.23's state pool (its padding slot, five state slots a request with the extra
    # buffer): Granite-4.0-H (Mamba-2, one group, replicated at tp 2), given requests and
    # token caps, small devices where the state pool caps the requests, and the refusals
    # (no memory for the states; a page size that does not divide the track interval)
    dict(model="granite-4.0-h-tiny", tp=1, gpu_mem_mib=H100, weights_bytes=13_900_000_000,
         versions=HOOKS),
    dict(model="granite-4.0-h-tiny", tp=2, gpu_mem_mib=L40S, weights_bytes=6_950_000_000,
         page_size=16, kv_cache_dtype="fp8_e4m3", versions=HOOKS),
    dict(model="granite-4.0-h-tiny", tp=1, gpu_mem_mib=RTX4090, weights_bytes=13_900_000_000,
         context_length=32768, versions=HOOKS),
    dict(model="nemotron-h-8b", tp=2, gpu_mem_mib=H200, weights_bytes=8_100_000_000,
         max_running_requests=64, versions=HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=RTX4090, weights_bytes=16_200_000_000,
         versions=HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=RTX4090, weights_bytes=23_000_000_000,
         versions=HOOKS),
    dict(model="nemotron-h-8b", tp=1, gpu_mem_mib=H100, weights_bytes=16_200_000_000,
         page_size=48, versions=HOOKS),
    dict(model="qwen3-next-80b-a3b", tp=4, gpu_mem_mib=H100, weights_bytes=40_000_000_000,
         mem_fraction_static=0.85, max_total_tokens=200_000, versions=HOOKS),
    dict(model="qwen3-next-80b-a3b", tp=8, gpu_mem_mib=A100_40, weights_bytes=20_000_000_000,
         context_length=65536, versions=HOOKS),
]
for _c in CASES:
    _c.setdefault("versions", ALL)
