"""`flopcalc serve` against vLLM 0.33.0's own start-up arithmetic.

`tests/data/serve/vllm_0_33.json` holds what vLLM 0.33.0's planning code computed (its
`VllmConfig`, layer specs, `get_kv_cache_groups`, `get_kv_cache_configs` and
`update_kv_cache_capacity`, run on CPU by tools/vllm_reference/reference.py and dumped by
tools/vllm_reference/dump.py) for 39 cases: dense, all-sliding and interleaved windows,
chunked local attention, latent attention in bf16 and fp8, DeepSeek-V3.2's sparse MLA with its
indexer keys, MTP drafter layers, hybrid Mamba-2 and Gated DeltaNet models, tensor parallelism
1 to 8, prefix caching and async scheduling on and off, the hybrid manager off, and two
configurations that do not fit. vLLM itself is not needed here (its CUDA wheels are GBs); every
figure must equal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc.commands import COMMANDS, load
from flopcalc.engines import vllm as E

pytestmark = pytest.mark.engine

DATA = Path(__file__).resolve().parents[1] / "data" / "serve"
GOLDEN = json.loads((DATA / "vllm_0_33.json").read_text())["cases"]


def model_path(name: str) -> str:
    """The config.json the golden case was computed from."""
    return str(DATA / "configs" / f"{name}.json")


def engine_for(case: dict) -> E.Engine:
    o = case["options"]
    return E.Engine(
        max_model_len=case["max_model_len"], tp=case["tp"], block_size=o.get("block_size", 16),
        kv_dtype=o.get("kv_dtype", "auto"),
        max_num_batched_tokens=o.get("max_num_batched_tokens", 8192),
        async_scheduling=o.get("async_scheduling", True),
        prefix_caching=o.get("prefix_caching", True), hma=o.get("hma", True),
        speculative_tokens=o.get("mtp", 0),
        # vLLM's NemotronH class keeps its SSM state in fp32 (models/config.py:812-839)
        mamba_ssm_cache_dtype="fp32" if case["model"] == "nemotron-h-8b" else "auto",
        gdn_prefill_backend=o.get("gdn_prefill_backend", "flashinfer"))


def label(case: dict) -> str:
    o = ",".join(f"{k}={v}" for k, v in case["options"].items())
    return f"{case['model']}-L{case['max_model_len']}-tp{case['tp']}" + (f"-{o}" if o else "")


@pytest.mark.parametrize("case", GOLDEN, ids=label)
def test_engine_equals_vllm(case: dict) -> None:
    spec = load(model_path(case["model"])).spec
    engine = engine_for(case)
    tp = case["tp"]
    drafts = E.mtp_caches(spec, tp) if case["options"].get("mtp") else ()
    layers, _ = E.engine_layers(E.model_caches(spec, tp), engine, drafts)
    plan = E.plan(layers, engine, [case["kv_memory"]], spec.n_layers("decoder"))
    if "error" in case:
        assert not plan.fits
        assert E.format_gib(plan.needed_bytes) == case["error"]["needed_gib"]
        assert E.format_gib(case["kv_memory"] - plan.bytes_per_block) == \
            case["error"]["available_gib"]
        assert plan.estimated_max_len == case["error"]["estimated_max_len"]
        return
    classes = {"indexer": "mla", "state": "mamba"}  # vLLM's spec classes
    groups = sorted([classes.get(g.layout, g.layout), len(g.layers), g.block_size, g.block_bytes(),
                     g.blocks_per_request(case["max_model_len"], plan.in_flight_tokens)]
                    for g in plan.groups)
    assert groups == case["groups"]
    assert max(g[2] for g in groups) == case["block_size"]
    assert plan.bytes_per_block == case["bytes_per_block"]
    assert plan.num_blocks == case["num_blocks"]
    assert plan.blocks_per_request == case["blocks_per_request"]
    assert plan.max_concurrency == case["max_concurrency"]  # the same float division
    assert plan.tokens == case["tokens"]
    assert plan.log_line == case["log"]
    assert plan.fits


def cli_options(case: dict) -> dict:
    o = case["options"]
    given = dict(max_model_len=case["max_model_len"], tp=case["tp"],
                 kv_memory=str(case["kv_memory"]))
    for key in ("block_size", "kv_dtype", "max_num_batched_tokens", "async_scheduling",
                "prefix_caching", "gdn_prefill_backend"):
        if key in o:
            given[key] = o[key]
    if "hma" in o:
        given["hybrid_kv_cache_manager"] = o["hma"]
    if o.get("mtp"):
        given.update(draft="mtp", draft_tokens=o["mtp"], acceptance="0.8")
    return given  # Nemotron-H's fp32 SSM state: serve reads it from the config, as vLLM does


@pytest.mark.parametrize("case", GOLDEN, ids=label)
def test_serve_report_equals_vllm(case: dict) -> None:
    """The same through the command: `capacity.*` of `flopcalc serve --format json`."""
    report = COMMANDS["serve"](model_path(case["model"]), **cli_options(case))
    c = report.to_dict()["capacity"]
    if "error" in case:
        assert not c["fits"]
        e = case["error"]
        assert f"({e['needed_gib']} GiB KV cache is needed" in c["error"]
        assert f"memory ({e['available_gib']} GiB)" in c["error"]
        assert f"maximum model length is {e['estimated_max_len']}." in c["error"]
        assert any("refuse to start" in w for w in report.warnings)
        return
    assert c["num_blocks"] == case["num_blocks"]
    assert c["tokens"] == case["tokens"]
    assert c["max_concurrency"] == case["max_concurrency"]
    assert c["log_line"] == case["log"]
    assert c["bytes_per_block"] == case["bytes_per_block"]
    assert sum(g["layers"] for g in c["groups"]) == sum(g[1] for g in case["groups"])
    assert c["memory"]["source"] == "given"
    assert c["memory"]["stages"][0]["available_bytes"] == case["kv_memory"]
