"""Run vLLM 0.33.0's own KV-cache planning on CPU for an HF config.json.

    tools/vllm_reference/venv/bin/python tools/vllm_reference/reference.py \
        tests/data/serve/configs/llama-3.1-8b.json --max-model-len 8192 --kv-memory 40GiB \
        [--tp 8] [--kv-dtype fp8] [--block-size N] [--max-num-batched-tokens B] \
        [--prefix-caching on|off] [--async-scheduling on|off] [--no-hma] \
        [--num-speculative-tokens k]

The model argument is a config.json file (copied into a temporary directory as config.json,
since vLLM reads a model directory) or a directory holding one. Needs the CPU venv made by
`install.sh` of this folder; prints the VllmConfig defaults that size the cache, each KV-cache
group, num_blocks, the max-concurrency float and the "GPU KV cache size" log line.

What is real vLLM here: EngineArgs -> VllmConfig (all defaults: block size, gpu_memory_utilization,
max_num_batched_tokens, async scheduling, model runner, mamba cache mode, hybrid-manager switch,
model-specific verify_and_update_config), the model class's own Mamba state shape/dtype
classmethods, Platform._align_hybrid_block_size, the KVCacheSpec dataclasses, the backend's
customize_spec/kernel-block rules (FlashAttentionBackend, customize_attention_spec,
_largest_kernel_block_within), resolve_kv_cache_layout, get_global_kv_cache_groups,
get_kv_cache_configs, generate_scheduler_kv_cache_config, update_kv_cache_capacity (its log
line is captured).

What is NOT real: no GPU, so (1) the platform is a stand-in that reports an H200
(capability 9.0, 141 GiB) so that vLLM's CUDA defaults apply; (2) the model is not built --
per-layer specs are constructed exactly as the layers' get_kv_cache_spec() would (the vLLM
source of each per-model code path is cited in build_layer_specs), and (3) available KV memory
is an input (--kv-memory), not profiled.  Two more stand-ins: TRITON_MLA for FLASH_ATTN_MLA
(same spec rules, see _mla_backend) and the injected GDN prefill-checkpoint alignment (64 with
the FlashInfer prefill backend).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import sys
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

import vllm.platforms as _P  # noqa: E402
from vllm.platforms.interface import DeviceCapability, UnspecifiedPlatform  # noqa: E402

GiB = 1 << 30


class FakeH200(UnspecifiedPlatform):
    """Stand-in platform: device_type 'cuda' and H200 properties, no CUDA kernels imported."""

    device_name = "cuda"
    device_type = "cuda"

    @classmethod
    def get_device_capability(cls, device_id=0):
        return DeviceCapability(9, 0)

    @classmethod
    def get_device_name(cls, device_id=0):
        return "NVIDIA H200"

    @classmethod
    def get_device_total_memory(cls, device_id=0):
        return 150_754_820_096  # 140.4 GiB as cudaMemGetInfo reports an H200 (141 GB)

    @classmethod
    def support_hybrid_kv_cache(cls):
        return True


_P._current_platform = FakeH200()

import torch  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.usage.usage_lib import UsageContext  # noqa: E402


def parse_bytes(s: str) -> int:
    m = re.fullmatch(r"([0-9.]+)\s*(GiB|MiB|KiB|B)?", s)
    num, unit = m.group(1), m.group(2) or "B"
    mul = {"GiB": GiB, "MiB": 1 << 20, "KiB": 1 << 10, "B": 1}[unit]
    return int(float(num) * mul) if "." in num else int(num) * mul


def build_vllm_config(model_dir, *, max_model_len, tp=1, block_size=None, kv_dtype="auto",
                      max_num_batched_tokens=None, prefix_caching=None, async_scheduling=None,
                      speculative_config=None, hma=None, usage=UsageContext.OPENAI_API_SERVER):
    kw = dict(model=model_dir, skip_tokenizer_init=True, load_format="dummy",
              max_model_len=max_model_len, tensor_parallel_size=tp, kv_cache_dtype=kv_dtype,
              distributed_executor_backend="mp" if tp > 1 else None)
    if block_size is not None:
        kw["block_size"] = block_size
    if max_num_batched_tokens is not None:
        kw["max_num_batched_tokens"] = max_num_batched_tokens
    if prefix_caching is not None:
        kw["enable_prefix_caching"] = prefix_caching
    if async_scheduling is not None:
        kw["async_scheduling"] = async_scheduling
    if speculative_config is not None:
        kw["speculative_config"] = speculative_config
    if hma is False:
        kw["disable_hybrid_kv_cache_manager"] = True
    return EngineArgs(**kw).create_engine_config(usage)


# ----------------------------------------------------------------------------------------------
# Per-layer specs, built as each model's layers build them
# ----------------------------------------------------------------------------------------------
def _attn_backend():
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    return FlashAttentionBackend  # Hopper default for these models (platforms/cuda.py:169-)


def _mla_backend():
    # The Hopper default is FLASH_ATTN_MLA (platforms/cuda.py:149-155), whose module imports
    # the CUDA flash-attn extension.  TRITON_MLA has the same spec rules: both subclass
    # MLACommonBackend (customize_spec, mla_attention.py:1598-1612) and declare
    # [MultipleOf(16)] kernel blocks (flashattn_mla.py:49-50, triton_mla.py:114-115).
    from vllm.v1.attention.backends.mla.triton_mla import TritonMLABackend

    return TritonMLABackend


def layer_kinds(vc):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kvformula

    t = vc.model_config.hf_text_config
    keys = ("model_type", "num_hidden_layers", "layer_types", "hybrid_override_pattern",
            "no_rope_layers", "attention_chunk_size", "sliding_window",
            "full_attention_interval", "sliding_window_pattern")
    d = {k: getattr(t, k) for k in keys if getattr(t, k, None) is not None}
    if d.get("sliding_window") is None and vc.cache_config.sliding_window:
        d["sliding_window"] = vc.cache_config.sliding_window
    return kvformula.layer_kinds(d), d


def mamba_spec_parts(vc):
    """(shapes, dtypes, mamba_type, checkpoint spec fields) from the model class itself."""
    from vllm.model_executor.models import ModelRegistry

    mc = vc.model_config
    cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
    return cls, cls.get_mamba_state_shape_from_config(vc), cls.get_mamba_state_dtype_from_config(vc)


def align_hybrid(vc, gdn_ckpt_alignment):
    """Real Platform._align_hybrid_block_size with the backend list it would find."""
    import vllm.model_executor.layers.mamba.abstract as mabs

    plat = _P._current_platform
    be = _mla_backend() if vc.model_config.use_mla else _attn_backend()
    orig_find = type(plat)._find_non_ssm_backends
    orig_ckpt = mabs.get_mamba_prefill_checkpoint_alignment
    type(plat)._find_non_ssm_backends = classmethod(lambda cls, cfg: [be])
    mabs.get_mamba_prefill_checkpoint_alignment = lambda cfg: gdn_ckpt_alignment
    try:
        with _current(vc):
            type(plat)._align_hybrid_block_size(vc, be)
    finally:
        type(plat)._find_non_ssm_backends = orig_find
        mabs.get_mamba_prefill_checkpoint_alignment = orig_ckpt


@contextlib.contextmanager
def _current(vc):
    from vllm.config import set_current_vllm_config

    with set_current_vllm_config(vc):
        yield


def build_layer_specs(vc, *, gdn_prefill_backend="flashinfer"):
    from vllm.model_executor.layers.attention.attention import _largest_kernel_block_within
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
    from vllm.v1.kv_cache_interface import (ChunkedLocalAttentionSpec, FullAttentionSpec,
                                            MambaSpec, MLAAttentionSpec, SlidingWindowSpec,
                                            get_kv_quant_mode)
    from vllm.v1.worker.utils import customize_attention_spec

    mc, cc, pc = vc.model_config, vc.cache_config, vc.parallel_config
    kinds, t = layer_kinds(vc)
    cache_dtype = cc.cache_dtype
    dtype = kv_cache_dtype_str_to_dtype(cache_dtype, mc)
    qmode = get_kv_quant_mode(cache_dtype)
    specs = {}
    is_hybrid = any(k == "mamba" for k in kinds)
    gdn = mc.hf_text_config.model_type == "qwen3_next"
    if is_hybrid:
        ckpt = 64 if (gdn and cc.mamba_cache_mode == "align"
                      and gdn_prefill_backend == "flashinfer") else None
        align_hybrid(vc, ckpt)
        cls, shapes, dtypes = mamba_spec_parts(vc)
    bs = cc.block_size
    v32 = mc.use_mla and getattr(mc.hf_text_config, "index_topk", None) is not None
    with _current(vc):
        be = _mla_backend() if mc.use_mla else _attn_backend()
        if v32:  # DeepSeek V3.2 sparse MLA (platforms/cuda.py:140-155; mla_attention.py:359-375)
            from vllm.model_executor.layers.attention.mla_attention import (
                _canonicalize_sparse_mla_kv_cache_dtype)
            from vllm.v1.attention.backends.mla.flashmla_sparse import FlashMLASparseBackend
            from vllm.v1.attention.backends.mla.indexer import DeepseekV32IndexerBackend
            from vllm.v1.kv_cache_interface import SparseCacheRole

            # bf16: FLASH_ATTN_MLA_SPARSE (align_blocks_to_rows, flashattn_mla_sparse.py:53-55);
            # fp8: FLASHMLA_SPARSE serves it as fp8_ds_mla (flashmla_sparse.py:167-175).  Both
            # customize_spec only set block_stride_alignment, which is a no-op at block 64.
            be = FlashMLASparseBackend
            cache_dtype = _canonicalize_sparse_mla_kv_cache_dtype(be, cache_dtype)
            dtype = kv_cache_dtype_str_to_dtype(cache_dtype, mc)
            qmode = get_kv_quant_mode(cache_dtype)
        nkv = mc.get_num_kv_heads(pc)
        hs = mc.get_head_size()
        for i, k in enumerate(kinds):
            if k is None:
                continue
            name = f"model.layers.{i}.attn"
            if k == "mla":  # model_executor/layers/attention/mla_attention.py:1371-1400
                spec = MLAAttentionSpec(
                    block_size=bs, num_kv_heads=1, max_tp_shards=1, head_size=hs,
                    dtype=dtype, cache_dtype_str=cache_dtype, kv_quant_mode=qmode,
                    state_content_bytes={"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}.get(cache_dtype))
                if v32:  # the layer's indexer key cache (models/deepseek_v2.py:638-668, 731-736)
                    qb = 128  # Indexer.quant_block_size
                    hd = mc.hf_text_config.index_head_dim
                    ispec = MLAAttentionSpec(block_size=bs, num_kv_heads=1, max_tp_shards=1,
                                             head_size=hd + hd // qb * 4, dtype=torch.uint8,
                                             cache_role=SparseCacheRole.INDEXER)
                    specs[f"model.layers.{i}.indexer.k_cache"] = customize_attention_spec(
                        DeepseekV32IndexerBackend, ispec)
            elif k == "mamba":  # layers/mamba/abstract.py:72-91 (+ mamba_mixer2.py:1108-1118)
                spec = MambaSpec(
                    shapes=tuple(shapes), dtypes=tuple(dtypes), block_size=cc.mamba_block_size,
                    page_size_padded=cc.mamba_page_size_padded,
                    mamba_type=(MambaAttentionBackendEnum.GDN_ATTN if gdn
                                else MambaAttentionBackendEnum.MAMBA2),
                    mamba_cache_mode=cc.mamba_cache_mode,
                    num_speculative_blocks=(0 if cc.use_replayssm else vc.num_speculative_tokens))
                if not gdn:
                    spec = replace(spec, num_prefill_checkpoint_blocks=1,
                                   prefill_checkpoint_alignment=1)
                elif ckpt is not None:  # qwen_gdn_linear_attn.py:739-750
                    from vllm.model_executor.layers.mamba.abstract import (
                        get_mamba_prefill_checkpoint_grid)
                    spec = replace(spec, num_prefill_checkpoint_blocks=1,
                                   prefill_checkpoint_alignment=get_mamba_prefill_checkpoint_grid(vc))
                specs[name.replace(".attn", ".mixer")] = spec
                continue
            elif k == "sliding":  # model_executor/layers/attention/attention.py:624-673
                probe = be.customize_spec(SlidingWindowSpec(
                    block_size=1, num_kv_heads=nkv, head_size=hs, dtype=dtype,
                    kv_quant_mode=qmode, sliding_window=t["sliding_window"]))
                per_tok = probe.real_page_size_bytes
                shared = cc.skip_page_size_padded
                sw_bs = _largest_kernel_block_within(be, per_tok, shared or per_tok * bs, bs, probe)
                spec = SlidingWindowSpec(block_size=sw_bs, num_kv_heads=nkv, head_size=hs,
                                         dtype=dtype, kv_quant_mode=qmode,
                                         sliding_window=t["sliding_window"],
                                         page_size_padded=shared)
            elif k == "chunked":  # layers/attention/chunked_local_attention.py:119-128
                spec = ChunkedLocalAttentionSpec(block_size=bs, num_kv_heads=nkv, head_size=hs,
                                                 dtype=dtype, kv_quant_mode=qmode,
                                                 attention_chunk_size=t["attention_chunk_size"])
            else:  # attention.py:674-682
                spec = FullAttentionSpec(block_size=bs, num_kv_heads=nkv, head_size=hs,
                                         dtype=dtype, kv_quant_mode=qmode)
            specs[name] = customize_attention_spec(be, spec)  # v1/worker/gpu/attn_utils.py:148-149
        # Speculative decoding with MTP: the drafter's decoder layers are registered attention
        # layers too (models/deepseek_mtp.py:151-152 for layer indices N..N+n-1), tagged
        # is_draft (v1/worker/gpu/attn_utils.py:150-151; is_draft is compare=False, so they
        # group with identical target specs).
        sc = vc.speculative_config
        if sc is not None and sc.method == "mtp":
            n_mtp = getattr(sc.draft_model_config.hf_config, "num_nextn_predict_layers", 1)
            target = next(v for v in specs.values() if not isinstance(v, MambaSpec))
            for j in range(n_mtp):
                specs[f"model.layers.{len(kinds) + j}.attn"] = replace(target, is_draft=True)
    return specs


# ----------------------------------------------------------------------------------------------
# Engine-core flow: v1/engine/core.py:_initialize_kv_caches (251-372)
# ----------------------------------------------------------------------------------------------
def run_engine_core_planning(vc, specs, available_memory):
    from vllm.v1.attention.backends.utils import _DEFAULT_LAYOUT_PREFERENCE, resolve_kv_cache_layout
    from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups, get_kv_cache_configs
    from vllm.v1.core.kv_cache_utils import (generate_scheduler_kv_cache_config,
                                             get_kv_cache_capacity, update_kv_cache_capacity)
    from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs

    world = vc.parallel_config.world_size
    kv_cache_specs = [dict(specs) for _ in range(world)]  # every TP rank reports the same specs
    with _current(vc):
        register_all_kvcache_specs(vc)
        layout = resolve_kv_cache_layout(
            vc, [[l.name for l in _DEFAULT_LAYOUT_PREFERENCE]] * world,
            [s for sp in kv_cache_specs for s in sp.values()])
        groups = get_global_kv_cache_groups(vc, kv_cache_specs)
        configs = get_kv_cache_configs(vc, kv_cache_specs, [available_memory] * world, groups)
        sched = generate_scheduler_kv_cache_config(configs)
        participating = [g.kv_cache_spec.block_size for g in sched.kv_cache_groups
                         if g.kv_cache_spec.prefix_cacheable]
        vc.cache_config.block_size = min(participating)
        tokens, conc = get_kv_cache_capacity(vc, sched)
        buf = io.StringIO()
        h = logging.StreamHandler(buf)
        lg = logging.getLogger("vllm.v1.core.kv_cache_utils")
        lg.addHandler(h)
        old = lg.level
        lg.setLevel(logging.INFO)
        import vllm.logger as vlog

        vlog._print_info_once.cache_clear()  # info_once would swallow a repeated line
        try:
            update_kv_cache_capacity(vc, sched)
        finally:
            lg.removeHandler(h)
            lg.setLevel(old)
    return dict(layout=layout.name, groups=groups, configs=configs, sched=sched,
                tokens=tokens, concurrency=conc, log=buf.getvalue().strip())


def describe(vc, specs, res):
    from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs

    cfg = res["configs"][0]
    out = []
    p = out.append
    p(f"block_size={vc.cache_config.block_size} mamba_block_size={vc.cache_config.mamba_block_size}"
      f" mamba_cache_mode={vc.cache_config.mamba_cache_mode}"
      f" mamba_page_size_padded={vc.cache_config.mamba_page_size_padded}"
      f" hma={not vc.scheduler_config.disable_hybrid_kv_cache_manager}"
      f" max_num_batched_tokens={vc.scheduler_config.max_num_batched_tokens}"
      f" async={vc.scheduler_config.async_scheduling}"
      f" max_in_flight_tokens={vc.max_in_flight_tokens} layout={res['layout']}")
    for gi, g in enumerate(res["groups"]):
        s = g.kv_cache_spec
        first = next(iter(s.kv_cache_specs.values())) if isinstance(s, UniformTypeKVCacheSpecs) else s
        req = -(-s.max_memory_usage_bytes(vc) // s.page_size_bytes)
        p(f"  group {gi}: {type(s).__name__}[{type(first).__name__}] layers={len(g.layer_names)}"
          f" block_size={s.block_size} page_size_bytes={s.page_size_bytes}"
          f" (per layer {first.page_size_bytes}) blocks_per_request={req}")
    p(f"  num_blocks={cfg.num_blocks} tensor_bytes={sum(t.size for t in cfg.kv_cache_tensors[:1])}")
    p(f"  max_concurrency={res['concurrency']!r} kv_cache_size_tokens={res['tokens']}")
    p(f"  log: {res['log']}")
    return "\n".join(out)


_TMP = None  # one temporary directory for the process, removed at exit
_DIRS: dict = {}


def model_dir(path: str, name: str | None = None) -> str:
    """A directory vLLM can load: `path` itself, or for a config.json file a subdirectory
    `name` (default: the file's stem) of a temporary directory, holding a copy as config.json."""
    global _TMP
    if os.path.isdir(path):
        return path
    import shutil
    import tempfile

    name = name or os.path.splitext(os.path.basename(path))[0]
    key = (os.path.abspath(path), name)
    if key not in _DIRS:
        if _TMP is None:
            _TMP = tempfile.TemporaryDirectory(prefix="vllm_reference_")
        d = os.path.join(_TMP.name, f"{len(_DIRS)}", name)
        os.makedirs(d)
        shutil.copyfile(path, os.path.join(d, "config.json"))
        _DIRS[key] = d
    return _DIRS[key]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir", help="a config.json file, or a directory holding one")
    ap.add_argument("--max-model-len", type=int, required=True)
    ap.add_argument("--kv-memory", required=True, help="available KV bytes per GPU, e.g. 40GiB")
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--block-size", type=int)
    ap.add_argument("--kv-dtype", default="auto")
    ap.add_argument("--max-num-batched-tokens", type=int)
    ap.add_argument("--prefix-caching", choices=["on", "off"])
    ap.add_argument("--async-scheduling", choices=["on", "off"])
    ap.add_argument("--no-hma", action="store_true")
    ap.add_argument("--num-speculative-tokens", type=int)
    a = ap.parse_args(argv)
    spec_cfg = None
    if a.num_speculative_tokens:
        spec_cfg = {"method": "mtp", "num_speculative_tokens": a.num_speculative_tokens}
    vc = build_vllm_config(
        model_dir(a.model_dir), max_model_len=a.max_model_len, tp=a.tp, block_size=a.block_size,
        kv_dtype=a.kv_dtype, max_num_batched_tokens=a.max_num_batched_tokens,
        prefix_caching=None if a.prefix_caching is None else a.prefix_caching == "on",
        async_scheduling=None if a.async_scheduling is None else a.async_scheduling == "on",
        speculative_config=spec_cfg, hma=False if a.no_hma else None)
    specs = build_layer_specs(vc)
    res = run_engine_core_planning(vc, specs, parse_bytes(a.kv_memory))
    print(describe(vc, specs, res))


if __name__ == "__main__":
    main()
