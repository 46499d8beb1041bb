"""SGLang releases whose server arguments resolve in hooks (`sglang/srt/arg_groups/`) and whose
pools are sized by configurators (`mem_cache/kv_cache_configurator.py`,
`model_executor/pool_configurator.py`), 0.5.23 the first recorded: their own code on CPU, with
a stand-in device, for the cases of cases.py (reference.py calls `run_case` for them).

Run as they are written, taken from the source files by name (ast):

- `arg_groups/memory_hook.py`: `handle_gpu_memory_settings`, `reserve_for_graph_mb`,
  `reserve_for_deepep_a2a_mb`; `arg_groups/overrides.py`: `post_capture_kv_sizing_planned`;
  `arg_groups/cuda_graph_hook.py`: the decode and prefill CUDA-graph size generators;
  `model_executor/cuda_graph_config.py` imported whole (the default CudaGraphConfig: decode
  full, prefill breakable on CUDA);
- `KVCacheConfigurator._profile_available_bytes`, `_resolve_memory_pool_config`,
  `config_from_budget`, `_apply_token_constraints`, `resolve_max_num_reqs`,
  `mm_runtime_reservation_gb`, `calculate_mla_kv_cache_dim`; `MemoryPoolConfig` and
  `DefaultPoolConfigurator` (`__init__`, `_compute_cell_size`, `calculate_pool_sizes`,
  `calculate_pool_sizes_from_max_tokens`); `ModelConfig.get_total_num_kv_heads` /
  `get_num_kv_heads`;
- hybrid models (`hybrid_config`): their own config classes (`configs/qwen3_next.py`,
  `nemotron_h.py`, `granitemoehybrid.py`, imported with `configs/mamba_utils.py`),
  `_mamba_radix_cache_resolution` and `supports_mamba_cache_extra_buffer`
  (`arg_groups/overrides.py`), `validate_mamba_extra_buffer` / `validate_mamba_no_buffer`
  (`arg_groups/mamba_hook.py`), `mamba_extra_buffer_of`, `get_mamba_tracking_slots`, and
  `KVCacheConfigurator._handle_max_mamba_cache` / `_calculate_mamba_ratio`;
  `mamba_full_memory_ratio` is the `fallback=` its field declares.

Stand-ins (the same as reference.py's, plus): environment switches at the defaults
`environ.py` declares (post-capture KV sizing off); the settings hooks that run before
`handle_gpu_memory_settings` leave the defaults for these models (no DP attention, no DeepEP,
no disaggregation, one pipeline stage, not multimodal, no KV sharding, no context
parallelism, no drafter; for hybrid models no linear-attention registry entry, no ReplaySSM,
no fused draft state, CUDA with Mamba state snapshots); `model_path` is the case's model name (0.5.23 caps the prefill graphs
of a path naming llama-2).
"""

from __future__ import annotations

import ast
import copy
import gc
import importlib.util
import json
import linecache
import logging
import math
import os
import re
import sys
import textwrap
import types
from dataclasses import dataclass
from types import SimpleNamespace as NS
from typing import Any, Optional

import reference as R


def functions(version: str, rel: str, names: list[str], globs: dict) -> dict:
    """Module-level functions `names` of file `rel`, compiled in `globs`."""
    text = R.read(version, rel)
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            src = textwrap.dedent(ast.get_source_segment(text, node, padded=True))
            name = f"<sglang {version} {rel} {node.name}>"
            # the source for tracebacks: an assertion's refusal quotes its line
            linecache.cache[name] = (len(src), None, src.splitlines(True), name)
            exec(compile(src, name, "exec"), globs)
            out[node.name] = globs[node.name]
    missing = set(names) - set(out)
    if missing:
        raise LookupError(f"{rel}: {sorted(missing)}")
    return out


def class_source(version: str, rel: str, name: str, globs: dict):
    text = R.read(version, rel)
    node = R.class_node(text, name)
    exec(compile(ast.get_source_segment(text, node), f"<sglang {version} {rel} {name}>",
                 "exec"), globs)
    return globs[name]


class Env:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value

    def is_set(self):
        return False


def envs(version: str) -> NS:
    """Every switch of environ.py at the default it declares (`NAME = EnvBool(False)`)."""
    out = {}
    for m in re.finditer(r"^\s+(SGLANG_\w+|MOONCAKE_\w+)\s*=\s*Env\w*\((.*?)\)\s*$",
                         R.read(version, "srt/environ.py"), re.M):
        try:
            out[m.group(1)] = Env(ast.literal_eval(m.group(2)))
        except (ValueError, SyntaxError):
            out[m.group(1)] = Env(None)
    return NS(**out)


def stub(name: str, **attrs) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def graph_module(version: str):
    """model_executor/cuda_graph_config.py, imported as written (stdlib only)."""
    stub("sglang.srt.runtime_context", get_exec=lambda: None)
    stub("sglang.srt.utils", is_cuda=lambda: True)
    path = os.path.join(R.root(version), "srt", "model_executor", "cuda_graph_config.py")
    spec = importlib.util.spec_from_file_location("sglang.srt.model_executor.cuda_graph_config",
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def server_defaults(version: str, case: dict, raw: dict, env: NS) -> dict:
    """handle_gpu_memory_settings on a namespace holding ServerArgs' defaults."""
    tp = case["tp"]
    cg = graph_module(version)
    latent = raw.get("kv_lora_rank") is not None
    cfg = NS(device="cuda", tp_size=tp, pp_size=1, dcp_size=1, chunked_prefill_size=None,
             max_prefill_tokens=16384, max_running_requests=case.get("max_running_requests"),
             max_total_tokens=case.get("max_total_tokens"),
             mem_fraction_static=case.get("mem_fraction_static"),
             cuda_graph_config=cg.default_cuda_graph_config(), disaggregation_mode="null",
             speculative_algorithm=None, speculative_num_draft_tokens=None,
             disable_cuda_graph_padding=False, model_path=case["model"],
             language_only=False, language_model_only=False, enable_symm_mem=False,
             enable_kv_cache_sharding=False, prefill_only_disable_kv_cache=False,
             enable_memory_saver=False, enable_unified_memory=False, attn_dp_size=1,
             moe_a2a_backend="none", torch_compile_max_bs=None, enable_dynamic_chunking=False,
             disaggregation_transfer_backend="mooncake", attn_cp_size=1)
    cfg._cuda_graph_config_locked = set()

    def declare(server_args, who, **kw):
        for k, v in kw.items():
            setattr(server_args, k, v)
    model = NS(is_multimodal=False, hf_config=NS(**raw))
    g = {"copy": copy, "math": math, "logger": logging.getLogger("sglang"), "Any": Any,
         "resolving_view": lambda sa: sa, "resolved_view": lambda sa: sa,
         "declare_resolution": declare, "model_config_of": lambda sa: model,
         "use_mla_backend": lambda sa: latent, "envs": env,
         "get_device_memory_capacity": lambda device=None: case["gpu_mem_mib"],
         "get_platform": lambda: NS(is_xpu=False), "attn_dp_enabled_of": lambda view: False,
         "Backend": cg.Backend, "Phase": cg.Phase, "_DEFAULT_PP_PREFILL_CUDA_GRAPH_MAX_TOKENS":
         8192}
    hooks = functions(version, "srt/arg_groups/cuda_graph_hook.py",
                      ["generate_prefill_cuda_graph_batch_sizes",
                       "generate_decode_cuda_graph_batch_sizes",
                       "generate_cpu_graph_batch_sizes"], dict(g))
    stub("sglang.srt.arg_groups.cuda_graph_hook", **hooks)
    stub("sglang.srt.arg_groups.model_overrides.qwen3_vl",  # multimodal only: not these
         expand_multimodal_decode_graph_to_running_limit=lambda *a: None)
    planned = functions(version, "srt/arg_groups/overrides.py",
                        ["post_capture_kv_sizing_planned", "max_prefill_buffer_tokens"],
                        dict(g))
    g["post_capture_kv_sizing_planned"] = planned["post_capture_kv_sizing_planned"]
    f = functions(version, "srt/arg_groups/memory_hook.py",
                  ["handle_gpu_memory_settings", "reserve_for_graph_mb",
                   "reserve_for_deepep_a2a_mb"], g)
    f["handle_gpu_memory_settings"](cfg)
    fields = R.literal_fields(version, "srt/server_args.py", "ServerArgs")
    return {"mem_fraction_static": cfg.mem_fraction_static,
            "chunked_prefill_size": cfg.chunked_prefill_size,
            "cuda_graph_max_bs": cfg.cuda_graph_config.decode.max_bs,
            "prefill_graph_sizes": len(cfg.cuda_graph_config.prefill.bs),
            "post_capture_kv_sizing": planned["post_capture_kv_sizing_planned"](cfg),
            "page_size": fields.get("page_size")}


# hybrid models whose config classes (configs/<file>) the cases run: Mamba-2 or gated delta net
# layers beside full attention
HYBRID = {"Qwen3NextForCausalLM": ("qwen3_next", "Qwen3NextConfig"),
          "NemotronHForCausalLM": ("nemotron_h", "NemotronHConfig"),
          "GraniteMoeHybridForCausalLM": ("granitemoehybrid", "GraniteMoeHybridConfig")}


def module_value(version: str, rel: str, name: str):
    """A module-level constant, evaluated as written (frozenset({...}) included)."""
    for node in ast.parse(R.read(version, rel)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                 for t in node.targets):
            return eval(compile(ast.Expression(node.value), f"<{rel} {name}>", "eval"),
                        {"frozenset": frozenset})
    raise LookupError(name)


def arg_fallback(version: str, rel: str, cls: str, name: str):
    """The `fallback=` a field declares in its Arg(...) (resolved when nothing sets it)."""
    for item in R.class_node(R.read(version, rel), cls).body:
        if isinstance(item, ast.AnnAssign) and getattr(item.target, "id", None) == name:
            for call in ast.walk(item.annotation):
                if isinstance(call, ast.Call):
                    for kw in call.keywords:
                        if kw.arg == "fallback":
                            return ast.literal_eval(kw.value)
    raise LookupError(name)


def hybrid_config(version: str, case: dict, raw: dict, env: NS) -> dict:
    """A hybrid model's settings and state shapes as SGLang resolves them: its own config class
    (configs/qwen3_next.py, nemotron_h.py, granitemoehybrid.py with mamba_utils.py), the
    radix-cache strategy (`_mamba_radix_cache_resolution`, arg_groups/overrides.py, and its
    validators in arg_groups/mamba_hook.py), the extra-buffer switches and
    `mamba_full_memory_ratio`'s fallback (arg_groups/fields/schedule.py)."""
    import importlib

    tp = case["tp"]
    module, cls_name = HYBRID[raw["architectures"][0]]
    parallel = NS(attn_tp_size=tp, tp_size=tp, enable_cp_tp_group_sharing=False,
                  attn_cp_size=1, attn_dp_size=1)
    rc = sys.modules["sglang.srt.runtime_context"]  # graph_module's stand-in, extended
    rc.get_parallel = lambda: parallel
    rc.linear_attn_tp_size = lambda: tp  # attention-TP: no CP-TP group sharing
    sys.modules["sglang.srt.utils"].is_cpu = lambda: False
    stub("sglang.srt.environ", envs=env)
    stub("sglang.srt.configs.update_config",  # used on CPU only
         adjust_tp_num_heads_if_necessary=lambda *a: None)
    import transformers.modeling_rope_utils as rope
    if not hasattr(rope, "rope_config_validation"):  # gone from transformers 5
        rope.rope_config_validation = lambda *a, **k: None
    cls = getattr(importlib.import_module(f"sglang.srt.configs.{module}"), cls_name)
    hf = cls(**{k: v for k, v in raw.items() if k not in ("architectures", "auto_map")})
    hf.architectures = raw["architectures"]

    fields = {**R.literal_fields(version, "srt/arg_groups/fields/exec_.py", "ExecMamba"),
              **R.literal_fields(version, "srt/arg_groups/fields/schedule.py", "Schedule"),
              **R.literal_fields(version, "srt/arg_groups/fields/memory.py", "Memory")}
    view = NS(disable_radix_cache=fields["disable_radix_cache"],
              mamba_radix_cache_strategy=fields["mamba_radix_cache_strategy"],
              disable_overlap_schedule=fields["disable_overlap_schedule"],
              mamba_track_interval=fields["mamba_track_interval"],
              linear_attn_backend=fields["linear_attn_backend"],
              page_size=case.get("page_size") or 1,  # _page_size_default: 1 on CUDA
              speculative_num_draft_tokens=None, disaggregation_mode="null",
              chunked_prefill_size=None, attention_backend=None,
              uses_mamba_radix_cache=False)
    ov = "srt/arg_groups/overrides.py"
    g = {"Any": Any, "Dict": dict, "logger": logging.getLogger("sglang"),
         "get_platform": lambda: NS(is_xpu=False, is_cuda=True, is_musa=False, is_npu=False,
                                    is_hip=False),
         "model_config_of": lambda view: NS(hf_config=hf),
         "_MAMBA_RADIX_CACHE_ARCHS": module_value(version, ov, "_MAMBA_RADIX_CACHE_ARCHS"),
         "_MAMBA_EXTRA_BUFFER_ARCHS": module_value(version, ov, "_MAMBA_EXTRA_BUFFER_ARCHS"),
         # CUDA is among the platforms with Mamba state snapshots (mamba_hook.py)
         "_platform_supports_mamba_cache_extra_buffer": lambda: True}
    f = functions(version, ov, ["supports_mamba_cache_extra_buffer",
                                "_mamba_radix_cache_resolution", "mamba_extra_buffer_lazy_of"],
                  g)
    f.update(functions(version, "srt/arg_groups/model_override_base.py",
                       ["mamba_extra_buffer_of"], g))
    f.update(functions(version, "srt/arg_groups/mamba_hook.py",
                       ["validate_mamba_extra_buffer", "validate_mamba_no_buffer"], g))
    for k, v in f["_mamba_radix_cache_resolution"](view).items():
        setattr(view, k, v)
    extra = f["mamba_extra_buffer_of"](view)
    try:  # model_hook.py handle_mamba_radix_cache: the validation after the resolution
        if view.uses_mamba_radix_cache and extra:
            f["validate_mamba_extra_buffer"](view, hf, mamba_cache_chunk_size_of=lambda: 1)
        elif view.uses_mamba_radix_cache:
            f["validate_mamba_no_buffer"](view, raw["architectures"][0])
    except AssertionError as e:  # the assertion's message, or its line where it has none
        import traceback
        return {"error": f"refused: {e}" if str(e) else
                "refused: " + traceback.extract_tb(e.__traceback__)[-1].line}
    return {"hf": hf, "strategy": view.mamba_radix_cache_strategy, "extra_buffer": extra,
            "lazy": f["mamba_extra_buffer_lazy_of"](view),
            "disable_overlap_schedule": view.disable_overlap_schedule,
            "disable_radix_cache": view.disable_radix_cache,
            "mamba_full_memory_ratio": arg_fallback(
                version, "srt/arg_groups/fields/schedule.py", "Schedule",
                "mamba_full_memory_ratio")}


def run_case(version: str, case: dict) -> dict:
    import torch

    tp = case["tp"]
    R.install_packages(version, tp)
    with open(os.path.join(R.CONFIGS, case["model"] + ".json")) as f:
        raw = json.load(f)
    env = envs(version)
    defaults = server_defaults(version, case, raw, env)
    hybrid = hybrid_config(version, case, raw, env) if raw["architectures"][0] in HYBRID \
        else None
    if hybrid is not None and "error" in hybrid:
        return {"defaults": defaults, "error": hybrid["error"]}
    fraction = case.get("mem_fraction_static")
    if fraction is None:
        fraction = defaults["mem_fraction_static"]
    page = case.get("page_size") or 1  # _page_size_default: 1 on CUDA (overrides.py)
    total = case["gpu_mem_mib"] * R.MiB
    available = total - case["weights_bytes"]
    latent = raw.get("kv_lora_rank") is not None

    kv = R.methods(version, "srt/configs/model_config.py", "ModelConfig",
                   ["get_total_num_kv_heads", "get_num_kv_heads"], {})
    heads = raw.get("num_attention_heads")
    hf = hybrid["hf"] if hybrid else NS(**raw)
    head_dim = raw.get("head_dim") or (raw["hidden_size"] // heads if heads else None)
    mc = NS(hf_config=hf, hf_text_config=hf, is_draft_model=False, head_dim=head_dim,
            v_head_dim=raw.get("v_head_dim") or head_dim, num_hidden_layers=
            raw["num_hidden_layers"], context_len=case.get("context_length") or
            raw["max_position_embeddings"], kv_lora_rank=raw.get("kv_lora_rank"),
            qk_rope_head_dim=raw.get("qk_rope_head_dim"), is_multimodal=False,
            quantization=None)
    mc.get_total_num_kv_heads = types.MethodType(kv["get_total_num_kv_heads"], mc)
    mc.get_num_kv_heads = types.MethodType(kv["get_num_kv_heads"], mc)

    schedule = NS(mem_fraction_static=fraction, max_total_tokens=case.get("max_total_tokens"),
                  max_running_requests=case.get("max_running_requests"), page_size=page,
                  prefill_max_requests=None, max_mamba_cache_size=None,
                  mamba_full_memory_ratio=hybrid and hybrid["mamba_full_memory_ratio"],
                  disable_overlap_schedule=bool(hybrid and hybrid["disable_overlap_schedule"]))
    mamba = NS(enable_mamba_extra_buffer=bool(hybrid and hybrid["extra_buffer"]),
               enable_mamba_extra_buffer_lazy=bool(hybrid and hybrid["lazy"]),
               enable_linear_replayssm_spec=False, enable_linear_replayssm=False,
               linear_replayssm_cache_len=16)
    sizes = {}

    def override(key, **kw):  # runtime_context get_context().override: the resolved sizes
        sizes[key] = kw
        for k, v in kw.items():
            setattr(schedule, k, v)
    parallel = NS(attn_tp_size=tp, attn_dcp_size=1, pp_size=1, launch_world_size=tp,
                  world_group=NS(cpu_group=None), attn_cp_size=1)
    cg = sys.modules["sglang.srt.model_executor.cuda_graph_config"]
    g = {"torch": torch, "gc": gc, "math": math, "logging": logging, "Optional": Optional,
         "logger": logging.getLogger("sglang"), "envs": env, "Backend": cg.Backend,
         "get_schedule": lambda: schedule, "get_parallel": lambda: parallel,
         "get_exec": lambda: NS(graph=NS(cuda_graph_config=cg.default_cuda_graph_config()),
                                mamba=mamba),
         "get_disagg": lambda: NS(disaggregation_mode="null", enable_pd_role_switch=False),
         "get_memory": lambda: NS(enable_unified_memory=False, enable_hisparse=False,
                                  disable_radix_cache=bool(hybrid and
                                                           hybrid["disable_radix_cache"])),
         "get_context": lambda: NS(override=override),
         "get_spec": lambda: NS(speculative_num_draft_tokens=None), "_is_npu": False,
         "get_mm": lambda: NS(mm_feature_transport=None),
         # the device: free bytes / 2³⁰ (utils/common.py get_available_gpu_memory)
         "get_available_gpu_memory": lambda *a, **k: available / (1 << 30),
         "get_device_memory_capacity": lambda *a, **k: case["gpu_mem_mib"],
         "is_deepseek_dsa": lambda cfg: False, "is_minimax_sparse": lambda cfg: False,
         "is_float4_e2m1fn_x2": lambda dtype: False, "dataclass": dataclass,
         "compute_page_shard_scratch_bytes": lambda *a, **k: 0,  # no KV sharding
         "mambaish_config": lambda model_config: hf if hybrid else None}
    kvc_rel = "srt/mem_cache/kv_cache_configurator.py"
    for name in ("MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO",
                 "MAMBA_CACHE_BASE_RATIO_DROP_ON_SKIP",
                 "MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_BUFFER"):
        g[name] = R.module_constant(version, kvc_rel, name)
    functions(version, "srt/mem_cache/allocation_sizing.py", ["get_mamba_tracking_slots"], g)
    functions(version, kvc_rel, ["_pd_prefill_skips_mamba_spec_state"], g)
    functions(version, "srt/mem_cache/kv_cache_configurator.py",
              ["mm_runtime_reservation_gb", "calculate_mla_kv_cache_dim"], g)
    stub("sglang.srt.mem_cache.kv_cache_configurator",
         calculate_mla_kv_cache_dim=g["calculate_mla_kv_cache_dim"])
    stub("sglang.srt.layers.cp", __path__=[])
    stub("sglang.srt.layers.cp.utils",  # no context parallelism: every layer is the rank's
         get_glm_dsa_layer_split_effective_num_layers=lambda kvc, n: n)
    pool_rel = "srt/model_executor/pool_configurator.py"
    config_cls = dataclass(class_source(version, pool_rel, "MemoryPoolConfig", g))  # @dataclass
    base = NS(finalize_with_max_running_requests=lambda self, config: config)
    pool_methods = R.methods(version, pool_rel, "DefaultPoolConfigurator",
                             ["__init__", "_compute_cell_size", "calculate_pool_sizes",
                              "calculate_pool_sizes_from_max_tokens"], g)
    configurator = type("DefaultPoolConfigurator", (), {
        **pool_methods, "finalize_with_max_running_requests":
        base.finalize_with_max_running_requests,
        # parse_qsa_profile finds no QSA attention in these configs: no indexer bytes
        "_compute_qsa_cell_size": staticmethod(lambda *, hf_config, num_layers: 0)})
    g["MemoryPoolConfig"] = config_cls
    stub("sglang.srt.model_executor.pool_configurator",
         create_memory_pool_configurator=lambda kvc: configurator(kvc))

    m = R.methods(version, "srt/mem_cache/kv_cache_configurator.py", "KVCacheConfigurator",
                  ["_profile_available_bytes", "_resolve_memory_pool_config",
                   "config_from_budget", "_apply_token_constraints", "resolve_max_num_reqs",
                   "_handle_max_mamba_cache", "_calculate_mamba_ratio"], g)
    kvc = NS(model_config=mc, mambaish_config=hf if hybrid else None,
             hybrid_gdn_config=hf if raw["architectures"][0] == "Qwen3NextForCausalLM"
             else None, hybrid_kda_config=None, extra_mamba_cache_bytes_per_req=0,
             fused_entry_bytes=lambda name: None,  # no fused draft state
             post_capture_kv_active=False,
             layer_info=NS(num_effective_layers=raw["num_hidden_layers"], start_layer=0,
                           end_layer=raw["num_hidden_layers"]),
             kv_cache_dtype={"auto": torch.bfloat16, "fp8_e4m3": torch.float8_e4m3fn}[
                 case.get("kv_cache_dtype", "auto")],
             kv_cache_dtype_str=case.get("kv_cache_dtype", "auto"), pp_size=1,
             use_mla_backend=latent, server_args=NS(enable_hisparse=False),
             is_draft_worker=False, spec_algorithm=NS(
                 is_eagle=lambda: False, is_standalone=lambda: False,
                 is_dflash_family=lambda: False, is_none=lambda: True), attn_dp_size=1, device="cuda", gpu_id=0,
             is_hybrid_swa=False)
    for name, fn in m.items():
        setattr(kvc, name, types.MethodType(fn, kvc))
    row = {"defaults": defaults, "mem_fraction_static": fraction}
    try:
        config = kvc._resolve_memory_pool_config(total / (1 << 30))
    except (RuntimeError, ValueError) as e:
        row["error"] = str(e).split(".")[0]
        return row
    row["max_total_num_tokens"] = config.max_total_num_tokens
    row["max_num_reqs"] = config.max_running_requests
    row["cell_size"] = configurator(kvc)._cell_size
    row["kv_cache_dtype"] = str(kvc.kv_cache_dtype)
    if hybrid:
        row["max_mamba_cache_size"] = schedule.max_mamba_cache_size
        row["mamba_cache_per_req"] = hf.mamba2_cache_params.mamba_cache_per_req
        row["mamba_ratio"] = kvc._calculate_mamba_ratio()  # state slots a request
        row["mamba_radix_cache_strategy"] = hybrid["strategy"]
        row["mamba_full_memory_ratio"] = hybrid["mamba_full_memory_ratio"]
    return row
