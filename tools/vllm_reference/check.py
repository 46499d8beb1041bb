"""Check kvformula.py (pure arithmetic) against vLLM 0.33.0's own planning (reference.py).

    tools/vllm_reference/venv/bin/python tools/vllm_reference/check.py   # all 39 cases

For every case: build the real VllmConfig + specs + groups + KVCacheConfig + capacity with
vLLM, compute the same with kvformula from the raw config.json, and compare block size, the
group list, bytes per block, num_blocks, blocks per request, max concurrency, KV cache tokens
and the exact log line.  Prints a table and "N passed, N failed" (about a minute on the
CPU venv of install.sh); exits 1 if any case fails.

The config.json of each model is `tests/data/serve/configs/<model>.json`; vLLM reads it from a
temporary directory `<model>/config.json` (reference.model_dir).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reference as R  # noqa: E402  (installs the stand-in platform first)
import kvformula as F  # noqa: E402
from vllm.v1.kv_cache_interface import (MambaSpec, MLAAttentionSpec, SlidingWindowSpec,  # noqa: E402
                                        ChunkedLocalAttentionSpec, UniformTypeKVCacheSpecs)

GiB = 1 << 30
HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, os.pardir, os.pardir, "tests", "data", "serve", "configs")


def config_path(model):
    return os.path.normpath(os.path.join(CONFIGS, f"{model}.json"))

# (model, max_model_len, tp, available bytes per GPU, options)
# group tuples compared: (kind, layers, block_size, bytes of one block of the group, blocks/request)
CASES = [
    ("llama-3.1-8b", 8192, 1, 40 * GiB, {}),
    ("llama-3.1-8b", 131072, 1, 40 * GiB, {}),
    ("llama-3.1-8b", 131072, 8, 37_123_456_789, {}),
    ("llama-3.1-8b", 100000, 1, 20 * GiB, {"kv_dtype": "fp8"}),
    ("llama-3.1-8b", 20000, 1, 3_900_000_000, {"block_size": 32}),
    ("gemma-3-27b", 32768, 1, 40 * GiB, {}),
    ("gemma-3-27b", 131072, 8, 50 * GiB, {}),
    ("gemma-3-27b", 131072, 1, 40 * GiB, {"async_scheduling": False}),
    ("gemma-3-27b", 131072, 1, 40 * GiB, {"max_num_batched_tokens": 2048}),
    ("gemma-3-27b", 131072, 1, 40 * GiB, {"hma": False}),  # does not fit: error compared
    ("gemma-3-27b", 131072, 1, 80 * GiB, {"hma": False}),
    ("mistral-7b-v0.1", 32768, 1, 40 * GiB, {}),
    ("mistral-7b-v0.1", 32768, 1, 40 * GiB, {"async_scheduling": False}),
    ("gpt-oss-20b", 131072, 1, 40 * GiB, {}),
    ("gpt-oss-20b", 131072, 8, 60 * GiB, {"max_num_batched_tokens": 16384}),
    ("llama-4-scout", 131072, 8, 40 * GiB, {}),
    ("llama-4-scout", 1048576, 8, 40 * GiB, {}),
    ("llama-4-scout", 131072, 8, 40 * GiB, {"hma": False}),
    ("llama-4-scout", 131072, 1, 40 * GiB, {"async_scheduling": False}),
    ("deepseek-v3", 163840, 8, 40 * GiB, {}),
    ("deepseek-v3", 163840, 8, 40 * GiB, {"kv_dtype": "fp8"}),
    ("deepseek-v3", 32768, 1, 12_345_678_901, {"block_size": 64}),
    ("nemotron-h-8b", 8192, 1, 40 * GiB, {}),
    ("nemotron-h-8b", 8192, 1, 40 * GiB, {"prefix_caching": False}),
    ("nemotron-h-8b", 8192, 8, 20 * GiB, {}),
    ("nemotron-h-8b", 4096, 1, 10 * GiB, {"kv_dtype": "fp8"}),
    ("granite-4.0-h-tiny", 131072, 1, 40 * GiB, {}),
    ("granite-4.0-h-tiny", 131072, 1, 40 * GiB, {"prefix_caching": False}),
    ("granite-4.0-h-tiny", 131072, 4, 20 * GiB, {}),
    ("deepseek-v3", 163840, 8, 40 * GiB, {"mtp": 1}),
    ("deepseek-v3", 163840, 8, 40 * GiB, {"mtp": 3}),
    ("llama-3.1-8b", 131072, 1, 16 * GiB, {}),  # does not fit: error compared
    ("deepseek-v3.2-exp", 163840, 8, 40 * GiB, {"block_size": 64}),
    ("deepseek-v3.2-exp", 163840, 8, 40 * GiB, {"block_size": 64, "kv_dtype": "fp8"}),
    ("qwen3-next-80b-a3b", 262144, 1, 40 * GiB, {}),
    ("qwen3-next-80b-a3b", 262144, 1, 40 * GiB, {"prefix_caching": False}),
    ("qwen3-next-80b-a3b", 262144, 8, 40 * GiB, {}),
    ("qwen3-next-80b-a3b", 262144, 4, 40 * GiB, {"gdn_prefill_backend": "triton"}),
    ("qwen3-next-80b-a3b", 131072, 4, 30 * GiB, {"kv_dtype": "fp8"}),
]


def kind_of(spec):
    if isinstance(spec, UniformTypeKVCacheSpecs):
        spec = next(iter(spec.kv_cache_specs.values()))
    if isinstance(spec, MambaSpec):
        return "mamba"
    if isinstance(spec, MLAAttentionSpec):
        return "mla"
    if isinstance(spec, SlidingWindowSpec):
        return "sliding"
    if isinstance(spec, ChunkedLocalAttentionSpec):
        return "chunked"
    return "full"


def real(model, L, tp, avail, o):
    vc = R.build_vllm_config(
        R.model_dir(config_path(model), model), max_model_len=L, tp=tp,
        block_size=o.get("block_size"), kv_dtype=o.get("kv_dtype", "auto"),
        max_num_batched_tokens=o.get("max_num_batched_tokens"),
        prefix_caching=o.get("prefix_caching"), async_scheduling=o.get("async_scheduling"),
        hma=o.get("hma"),
        speculative_config=({"method": "mtp", "num_speculative_tokens": o["mtp"]}
                            if o.get("mtp") else None))
    specs = R.build_layer_specs(vc, gdn_prefill_backend=o.get("gdn_prefill_backend", "flashinfer"))
    try:
        res = R.run_engine_core_planning(vc, specs, avail)
    except ValueError as e:
        import re
        m = re.search(r"\(([0-9.]+) GiB KV cache is needed.*?memory \(([0-9.]+) GiB\)"
                      r".*?maximum model length is (\d+)", str(e))
        return dict(error=(m.group(1), m.group(2), int(m.group(3))))
    cfg = res["configs"][0]
    groups = sorted(
        (kind_of(g.kv_cache_spec), len(g.layer_names), g.kv_cache_spec.block_size,
         g.kv_cache_spec.page_size_bytes
         if isinstance(g.kv_cache_spec, UniformTypeKVCacheSpecs)
         else g.kv_cache_spec.page_size_bytes * len(g.layer_names),
         -(-g.kv_cache_spec.max_memory_usage_bytes(vc) // g.kv_cache_spec.page_size_bytes))
        for g in cfg.kv_cache_groups)
    bpb = cfg.kv_cache_tensors[0].size // cfg.num_blocks
    per_req = sum(g[4] for g in groups)
    return dict(block_size=max(g[2] for g in groups), groups=groups, bytes_per_block=bpb,
                num_blocks=cfg.num_blocks, blocks_per_request=per_req,
                concurrency=res["concurrency"], tokens=res["tokens"], log=res["log"])


def formula(model, L, tp, avail, o):
    cfg = json.load(open(config_path(model)))
    layers, info = F.layers_from_hf_config(
        cfg, tp=tp, block_size=o.get("block_size", 16), kv_dtype=o.get("kv_dtype", "auto"),
        max_model_len=L, prefix_caching=o.get("prefix_caching", True),
        gdn_checkpoint_alignment=64 if o.get("gdn_prefill_backend", "flashinfer") == "flashinfer"
        else None, hma=o.get("hma"),
        num_draft_layers=cfg.get("num_nextn_predict_layers", 1) if o.get("mtp") else 0)
    p = F.plan(layers, available_memory=avail, max_model_len=L,
               max_num_batched_tokens=o.get("max_num_batched_tokens", 8192),
               async_scheduling=o.get("async_scheduling", True), hma=info["hma"])
    if not p.fits:
        est = F.estimate_max_model_len(layers, available_memory=avail, max_model_len=L,
                                       max_num_batched_tokens=o.get("max_num_batched_tokens", 8192),
                                       async_scheduling=o.get("async_scheduling", True),
                                       hma=info["hma"])
        return dict(error=(F.format_gib(p.needed_bytes), F.format_gib(avail - p.bytes_per_block),
                           est))
    groups = sorted((g.layers[0].kind if g.layers[0].kind != "indexer" else "mla", len(g.layers),
                     g.block_size, g.bytes_per_block(),
                     g.blocks_per_request(L, F.in_flight_tokens(
                         o.get("max_num_batched_tokens", 8192), o.get("async_scheduling", True))))
                    for g in p.groups)
    return dict(block_size=max(g[2] for g in groups), groups=groups,
                bytes_per_block=p.bytes_per_block, num_blocks=p.num_blocks,
                blocks_per_request=p.blocks_per_request, concurrency=p.max_concurrency,
                tokens=p.kv_cache_size_tokens, log=p.log_line)


def main():
    passed = failed = 0
    rows = []
    for case in CASES:
        model, L, tp, avail, o = case
        label = f"{model} L={L} tp={tp} mem={avail} {o or ''}"
        try:
            a = real(*case)
            b = formula(*case)
        except Exception:
            traceback.print_exc()
            failed += 1
            rows.append((label, "ERROR", ""))
            continue
        ok = a == b
        passed += ok
        failed += not ok
        if "error" in a:
            rows.append((label, "OK" if ok else "MISMATCH",
                         f"ValueError: needs {a['error'][0]} GiB > {a['error'][1]} GiB; "
                         f"estimated max model len {a['error'][2]}"))
        else:
            ng = len(a["groups"])
            rows.append((label, "OK" if ok else "MISMATCH",
                         f"bs={a['block_size']} groups={ng} bpb={a['bytes_per_block']} "
                         f"blocks={a['num_blocks']} req={a['blocks_per_request']} | {a['log']}"))
        if not ok:
            for k in a:
                if a[k] != b[k]:
                    rows.append(("", f"  {k}", f"vllm={a[k]}  formula={b[k]}"))
    for r in rows:
        print(f"{r[1]:9s} {r[0]}\n          {r[2]}" if r[0] else f"{r[1]:9s} {r[2]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
