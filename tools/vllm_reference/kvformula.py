"""vLLM 0.33.0 KV-cache sizing, re-derived in plain integer arithmetic (no vLLM, no torch).

flopcalc's `serve` (flopcalc/engines/vllm.py) implements the same arithmetic.  Every step
cites the vLLM 0.33.0 source it mirrors (paths relative to site-packages/vllm/; line numbers of
the 0.33.0 wheel).  Scope: the default
`DefaultKVCacheConfigBuilder`, one engine (DP=1), PP=1, DCP=1, no HiSparse, no KV connector,
no num_gpu_blocks_override, layer-outermost layout (LBNHC/LBHNC: every NVIDIA backend except the
sparse-MLA indexer declares none or a layer-outer first choice).

Inputs are a list of per-layer `Layer` records, i.e. what each attention / mamba module's
`get_kv_cache_spec` would return on ONE tensor-parallel rank.  `layers_from_hf_config` builds
that list from an HF config.json dict for the model families of check.py's cases (Llama,
Mistral, Gemma 3, gpt-oss, Llama 4, DeepSeek V3 / V3.2, Nemotron-H, Granite 4.0-H, Qwen3-Next).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from math import prod


def cdiv(a: int, b: int) -> int:  # vllm/utils/math_utils.py
    return -(a // -b)


DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "fp8_e4m3": 1,
               "fp8_e5m2": 1, "fp8_ds_mla": 1, "uint8": 1}


# ----------------------------------------------------------------------------------------------
# Per-layer spec (mirror of v1/kv_cache_interface.py dataclasses; only the fields that size)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layer:
    name: str
    kind: str  # "full" | "sliding" | "chunked" | "mla" | "indexer" | "mamba"
    block_size: int
    # attention: bytes of one token in one layer on this rank (page_size_bytes / block_size)
    per_token_bytes: int = 0
    window: int | None = None  # sliding window (kind "sliding")
    chunk: int | None = None  # attention_chunk_size (kind "chunked")
    # mamba: unpadded state bytes, padded page, blocks reserved per request
    state_bytes: int = 0
    page_padded: int | None = None
    mamba_cache_mode: str = "none"
    num_speculative_blocks: int = 0
    num_prefill_checkpoint_blocks: int = 0
    extra_retained_tokens: int = 0
    # identity of the attention spec beyond bytes (kv heads, head size, dtype...): two layers
    # merge into one group only if their specs are equal (kv_cache_interface.py:309, 662)
    tag: tuple = ()

    @property
    def page_size_bytes(self) -> int:
        if self.kind == "mamba":  # kv_cache_interface.py:1121-1129
            return self.page_padded if self.page_padded is not None else self.state_bytes
        if self.page_padded is not None:  # kv_cache_interface.py:597-601
            return self.page_padded
        return self.block_size * self.per_token_bytes  # H * N * C, kv_cache_interface.py:594

    def blocks_per_request(self, max_model_len: int, in_flight: int) -> int:
        """cdiv(max_memory_usage_bytes, page_size_bytes) for this layer's spec."""
        bs = self.block_size
        if self.kind in ("full", "mla", "indexer"):  # kv_cache_interface.py:643-648
            return cdiv(max_model_len, bs)
        if self.kind == "sliding":  # kv_cache_interface.py:918-955
            n = min(self.window - 1 + self.extra_retained_tokens + in_flight, max_model_len)
            return cdiv(n, bs) + 1
        if self.kind == "chunked":  # kv_cache_interface.py:864-888
            return cdiv(min(self.chunk + in_flight, max_model_len), bs)
        if self.kind == "mamba":  # kv_cache_interface.py:1135-1141
            if self.mamba_cache_mode == "align":
                return 2 + self.num_speculative_blocks + self.num_prefill_checkpoint_blocks
            return 1 + self.num_speculative_blocks
        raise ValueError(self.kind)

    def max_memory_usage_bytes(self, max_model_len: int, in_flight: int) -> int:
        return self.blocks_per_request(max_model_len, in_flight) * self.page_size_bytes

    # "type" for UniformTypeKVCacheSpecs.is_uniform_type (kv_cache_interface.py:1347-1361,
    # registry: v1/core/single_type_kv_cache_manager.py:2656-2716; MLA registers with base
    # FullAttentionSpec, so full + MLA + indexer layers are one type)
    def uniform_type_key(self):
        if self.kind in ("full", "mla", "indexer"):
            return ("full",)
        if self.kind == "sliding":
            return ("sliding", self.window)
        if self.kind == "chunked":
            return ("chunked", self.chunk)
        return ("mamba", self.num_speculative_blocks, self.num_prefill_checkpoint_blocks,
                self.page_size_bytes)

    def spec_key(self):
        """Equality of the whole spec (dataclass __eq__)."""
        return (self.kind, self.block_size, self.per_token_bytes, self.window, self.chunk,
                self.state_bytes, self.page_padded, self.mamba_cache_mode,
                self.num_speculative_blocks, self.num_prefill_checkpoint_blocks,
                self.extra_retained_tokens, self.tag)


@dataclass
class Group:
    layers: list[Layer]
    uniform_type: bool = False  # a UniformTypeKVCacheSpecs group (pages may differ per layer)

    @property
    def block_size(self) -> int:
        return self.layers[0].block_size

    @property
    def page_size_bytes(self) -> int:  # kv_cache_interface.py:1318-1320 (sum) or the merged spec
        if self.uniform_type:
            return sum(l.page_size_bytes for l in self.layers)
        return self.layers[0].page_size_bytes

    def blocks_per_request(self, max_model_len: int, in_flight: int) -> int:
        # kv_cache_utils.py:1079-1082 on the *scheduler* config, whose UniformType groups carry
        # the first layer's spec (kv_cache_utils.py:1110-1116).  For a per-layer merged spec
        # the ratio is that layer's; UniformTypeKVCacheSpecs.max_memory_usage_bytes takes the
        # max over layers (kv_cache_interface.py:1326-1331) and agrees when all layers need the
        # same number of pages (the normal case).
        if self.uniform_type:
            return self.layers[0].blocks_per_request(max_model_len, in_flight)
        return self.layers[0].blocks_per_request(max_model_len, in_flight)

    def bytes_per_block(self) -> int:  # kv_cache_planning.py:578-586 (alignment 1 assumed)
        return sum(l.page_size_bytes for l in self.layers)


# ----------------------------------------------------------------------------------------------
# Grouping: v1/core/kv_cache_planning.py:get_kv_cache_groups (1113-1200)
# ----------------------------------------------------------------------------------------------
def promote_local_to_full(layers: list[Layer]) -> list[Layer]:
    """kv_cache_planning.py:744-816 / 853-876: hybrid manager disabled -> sliding and chunked
    layers become FullAttentionSpec (blocks for all tokens) when full layers exist."""
    kinds = {l.kind for l in layers}
    if not (kinds & {"full", "mla"}) or not (kinds & {"sliding", "chunked"}):
        return layers
    return [replace(l, kind="full", window=None, chunk=None, extra_retained_tokens=0)
            if l.kind in ("sliding", "chunked") else l for l in layers]


def unify_page_size(layers: list[Layer]) -> list[Layer]:
    """kv_cache_planning.py:346-408."""
    pages = {l.page_size_bytes for l in layers}
    if len(pages) <= 1:
        return layers
    pmax = max(pages)
    out = []
    for l in layers:
        p = l.page_size_bytes
        if p == pmax:
            out.append(l)
        elif l.kind == "mamba":
            out.append(replace(l, page_padded=pmax))
        elif pmax % p == 0:
            out.append(replace(l, block_size=l.block_size * (pmax // p)))
        elif l.kind not in ("mla", "indexer"):
            out.append(replace(l, page_padded=pmax))
        else:
            raise NotImplementedError("MLA page not divisible")
    return out


def _mergeable(a: Layer, b: Layer) -> bool:
    """type(specs[0]).merge succeeding (kv_cache_planning.py:495-507): FullAttentionSpec.merge
    accepts equal AttentionSpec fields; every other class needs full equality."""
    return a.spec_key() == b.spec_key()


def group_hybrid(layers: list[Layer]) -> list[Group]:
    """_get_kv_cache_groups_uniform_page_size, kv_cache_planning.py:416-556."""
    same: dict = {}
    for l in layers:
        same.setdefault(l.spec_key(), []).append(l)
    buckets: list[list[Layer]] = []
    for ls in same.values():
        for b in buckets:
            if _mergeable(b[0], ls[0]):
                b.extend(ls)
                break
        else:
            buckets.append(list(ls))
    mn = min(len(b) for b in buckets)
    mx = max(len(b) for b in buckets)
    group_size = mx if mx < mn * 1.5 else mn  # kv_cache_planning.py:521-532
    groups = []
    for b in buckets:
        n = cdiv(len(b), group_size)
        for i in range(n):
            groups.append(Group(b[i::n]))  # layers[i::num_groups], :554-555
    # every group is charged group_size layers (padding): bytes_per_block uses the max group
    return groups


def get_kv_cache_groups(layers: list[Layer], *, hma: bool = True) -> list[Group]:
    if not hma:  # kv_cache_planning.py:1127-1128
        layers = promote_local_to_full(layers)
    if not layers:
        return []
    keys = {l.spec_key() for l in layers}
    if len(keys) == 1:  # is_kv_cache_spec_uniform, :218-239 -> one group
        return [Group(list(layers))]
    types = {l.uniform_type_key() for l in layers}
    if len(types) == 1 and len({l.block_size for l in layers}) == 1:  # :1143-1147
        return [Group(list(layers), uniform_type=True)]
    return group_hybrid(unify_page_size(layers))  # :1169-1176


# ----------------------------------------------------------------------------------------------
# Capacity: get_kv_cache_configs (:1461-1604), get_max_concurrency_for_kv_cache_config
# (kv_cache_utils.py:1061-1093), get_kv_cache_capacity (kv_cache_utils.py:1120-1128)
# ----------------------------------------------------------------------------------------------
@dataclass
class Plan:
    groups: list[Group]
    bytes_per_block: int
    num_blocks: int
    blocks_per_request: int
    max_concurrency: float
    kv_cache_size_tokens: int
    needed_bytes: int
    fits: bool
    log_line: str = ""
    group_summary: list = field(default_factory=list)


def format_gib(b: int) -> str:  # utils/mem_utils.py:30-31
    return f"{round(b / (1 << 30), 2)}"


def estimate_max_model_len(layers_or_groups, *, available_memory: int, max_model_len: int,
                           max_num_batched_tokens: int, async_scheduling: bool = True,
                           hma: bool = True) -> int:
    """_estimate_max_model_len_from_groups (kv_cache_planning.py:1288-1334): binary search on
    bytes_per_block * sum(blocks per request) <= available_memory - bytes_per_block."""
    groups = get_kv_cache_groups(layers_or_groups, hma=hma)
    bpb = max(g.bytes_per_block() for g in groups)
    check = available_memory - bpb
    inflight = in_flight_tokens(max_num_batched_tokens, async_scheduling)

    def fits(n):
        return bpb * sum(g.blocks_per_request(n, inflight) for g in groups) <= check

    lo, hi = 1, max_model_len
    if not fits(lo):
        return 0
    res = 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            res, lo = mid, mid + 1
        else:
            hi = mid - 1
    return res


def in_flight_tokens(max_num_batched_tokens: int, async_scheduling: bool,
                     v2_model_runner: bool = True, pp: int = 1) -> int:
    """VllmConfig.max_in_flight_tokens / max_concurrent_batches (config/vllm.py:587-609)."""
    if async_scheduling:
        batches = pp + 1 if v2_model_runner else (2 if pp <= 1 else pp)
    else:
        batches = pp
    return batches * max_num_batched_tokens


def plan(layers: list[Layer], *, available_memory: int, max_model_len: int,
         max_num_batched_tokens: int, async_scheduling: bool = True, hma: bool = True,
         device: str = "GPU") -> Plan:
    inflight = in_flight_tokens(max_num_batched_tokens, async_scheduling)
    groups = get_kv_cache_groups(layers, hma=hma)
    bpb = max(g.bytes_per_block() for g in groups)  # kv_cache_planning.py:578-586
    num_blocks = available_memory // bpb  # :1571-1573 and :681
    per_req = sum(g.blocks_per_request(max_model_len, inflight) for g in groups)
    needed = bpb * per_req  # _max_memory_usage_bytes_from_groups :1253-1285
    fits = needed <= available_memory - bpb  # null block reserved, :1536-1559
    conc = num_blocks / per_req  # kv_cache_utils.py:1087
    tokens = int(conc * max_model_len)  # kv_cache_utils.py:1128
    line = (f"{device} KV cache size: {tokens:,} tokens, Maximum concurrency for "
            f"{max_model_len:,} tokens per request: {conc:.2f}x")  # kv_cache_utils.py:1147-1154
    summ = [(g.layers[0].kind, len(g.layers), g.block_size, g.page_size_bytes,
             g.blocks_per_request(max_model_len, inflight)) for g in groups]
    return Plan(groups, bpb, num_blocks, per_req, conc, tokens, needed, fits, line, summ)


# ----------------------------------------------------------------------------------------------
# Hybrid block-size alignment: platforms/interface.py:_align_hybrid_block_size (940-1137) and
# the prefix-caching defaults of model_executor/models/config.py:MambaModelConfig (750-787)
# ----------------------------------------------------------------------------------------------
def align_hybrid_block_size(*, block_size: int, attn_page_1_token: int, mamba_page: int,
                            kernel_min_block: int = 16, use_mla: bool = False,
                            mamba_cache_mode: str = "none",
                            checkpoint_alignment: int | None = None) -> tuple[int, int | None]:
    """Returns (attention block_size, mamba_page_size_padded or None)."""
    if mamba_page == 0:
        return block_size, None
    kalign = max(kernel_min_block, block_size)  # :1068-1074
    backend_align = kernel_min_block  # lcm over backends, :1076-1082 (one backend)
    if use_mla:
        kalign = max(kalign, 128)  # :1083-1088
    if mamba_cache_mode == "align":
        kalign = math.lcm(kalign, checkpoint_alignment or 1)  # :1089-1094
    attn_bs = kalign * cdiv(mamba_page, kalign * attn_page_1_token)  # :1098-1101
    attn_bs = backend_align * cdiv(attn_bs, backend_align)  # :1102-1104
    block_size = max(block_size, attn_bs)  # :1106-1107
    attn_page = block_size * attn_page_1_token
    return block_size, (None if attn_page == mamba_page else attn_page)  # :1117-1128


# ----------------------------------------------------------------------------------------------
# HF config.json -> per-rank layer list (mirrors the vLLM model files cited below)
# ----------------------------------------------------------------------------------------------
def _text(cfg: dict) -> dict:
    return cfg.get("text_config", cfg)


def _dtype(cfg: dict) -> str:
    t = _text(cfg)
    return t.get("torch_dtype") or t.get("dtype") or cfg.get("torch_dtype") or "bfloat16"


def mamba_state(cfg: dict, tp: int, num_spec: int = 0, ssm_dtype: str | None = None):
    """(state_bytes, kind) per mamba-like layer on one rank; None if no such layers.
    mamba2: model_executor/layers/mamba/mamba_utils.py:185-211; gdn: :271-293;
    dtypes: :97-110 (+ NemotronH fp32 SSM default, model_executor/models/config.py:812-839)."""
    t = _text(cfg)
    mt = t.get("model_type", cfg.get("model_type"))
    act = DTYPE_BYTES[_dtype(cfg)]

    def ext(ng):  # extra_groups_for_head_shards, mamba_utils.py:261-269
        return 0 if ng % tp == 0 else tp - ng

    if mt == "nemotron_h":
        nh, hd, ds = t["mamba_num_heads"], t["mamba_head_dim"], t["ssm_state_size"]
        ng, k = t["n_groups"], t["conv_kernel"]
        inter = nh * hd
        ssm = DTYPE_BYTES[ssm_dtype or t.get("mamba_ssm_cache_dtype", "float32")]
    elif mt == "granitemoehybrid":
        nh, hd, ds = t["mamba_n_heads"], t["mamba_d_head"], t["mamba_d_state"]
        ng, k = t["mamba_n_groups"], t["mamba_d_conv"]
        inter = t["mamba_expand"] * t["hidden_size"]
        ssm = DTYPE_BYTES[ssm_dtype] if ssm_dtype else act
    elif mt == "qwen3_next":
        nk, nv = t["linear_num_key_heads"], t["linear_num_value_heads"]
        dk, dv, k = t["linear_key_head_dim"], t["linear_value_head_dim"], t["linear_conv_kernel_dim"]
        conv_dim = dk * nk * 2 + dv * nv
        ssm = DTYPE_BYTES[ssm_dtype] if ssm_dtype else act
        conv = (k - 1 + num_spec) * (conv_dim // tp) * act
        rec = (nv // tp) * dv * dk * ssm
        return conv + rec, "gdn"
    else:
        return None
    ng = ng + ext(ng)
    conv_dim = inter + 2 * ng * ds
    conv = (k - 1 + num_spec) * (conv_dim // tp) * act
    temporal = (nh // tp) * hd * ds * ssm
    return conv + temporal, "mamba2"


def layer_kinds(cfg: dict) -> list[str]:
    """Per decoder layer: "full" | "sliding" | "chunked" | "mla" | "mamba" | None (no cache)."""
    t = _text(cfg)
    mt = t.get("model_type", cfg.get("model_type"))
    n = t["num_hidden_layers"]
    if mt in ("deepseek_v3", "deepseek_v2", "deepseek_v32"):
        return ["mla"] * n
    if mt == "nemotron_h":
        return [{"M": "mamba", "*": "full"}.get(c) for c in t["hybrid_override_pattern"]]
    if mt == "granitemoehybrid":  # published "attention"/"mamba"; transformers 5 renames them
        return ["full" if x in ("attention", "full_attention") else "mamba"
                for x in t["layer_types"]]
    if mt == "qwen3_next":
        k = t.get("full_attention_interval", 4)
        lt = t.get("layer_types") or ["full_attention" if (i + 1) % k == 0 else
                                      "linear_attention" for i in range(n)]
        return ["full" if x == "full_attention" else "mamba" for x in lt]
    if mt in ("llama4", "llama4_text"):  # models/llama4.py:184-185, 251-252
        nope = t.get("no_rope_layers") or [int((i + 1) % t.get("no_rope_layer_interval", 4) != 0)
                                           for i in range(n)]
        return ["chunked" if (nope[i] and t.get("attention_chunk_size")) else "full"
                for i in range(n)]
    if mt in ("gemma3", "gemma3_text"):
        pat = t.get("sliding_window_pattern", 6)
        lt = t.get("layer_types") or ["sliding_attention" if (i + 1) % pat else
                                      "full_attention" for i in range(n)]
        return ["sliding" if x == "sliding_attention" else "full" for x in lt]
    lt = t.get("layer_types")
    if lt is not None:
        return ["sliding" if x == "sliding_attention" else "full" for x in lt]
    if t.get("sliding_window"):  # all-sliding model (engine/arg_utils.py:2288-2294)
        return ["sliding"] * n
    return ["full"] * n


def attn_per_token_bytes(cfg: dict, tp: int, kv_dtype: str = "auto") -> int:
    t = _text(cfg)
    mt = t.get("model_type", cfg.get("model_type"))
    if mt in ("deepseek_v3", "deepseek_v2", "deepseek_v32"):  # mla_attention.py:1371-1400
        if kv_dtype == "fp8_ds_mla" or (t.get("index_topk") is not None
                                        and kv_dtype.startswith("fp8")):
            return 656  # sparse MLA serves fp8 as fp8_ds_mla (mla_attention.py:359-369)
        b = DTYPE_BYTES[_dtype(cfg) if kv_dtype == "auto" else kv_dtype]
        return (t["kv_lora_rank"] + t["qk_rope_head_dim"]) * b  # 1 head, no separate V
    b = DTYPE_BYTES[_dtype(cfg) if kv_dtype == "auto" else kv_dtype]
    heads = t.get("num_key_value_heads") or t["num_attention_heads"]
    hd = t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"]
    return max(1, heads // tp) * 2 * hd * b  # config/model.py:1663-1683; K + V


def layers_from_hf_config(cfg: dict, *, tp: int = 1, block_size: int = 16,
                          kv_dtype: str = "auto", max_model_len: int,
                          prefix_caching: bool = True, num_spec: int = 0,
                          gdn_checkpoint_alignment: int | None = 64,
                          mamba_ssm_dtype: str | None = None,
                          kernel_min_block: int = 16, hma: bool | None = None,
                          extra_retained_tokens: int = 0,
                          num_draft_layers: int = 0) -> tuple[list[Layer], dict]:
    t = _text(cfg)
    kinds = layer_kinds(cfg)
    per_tok = attn_per_token_bytes(cfg, tp, kv_dtype)
    info: dict = {"per_token_bytes": per_tok}
    ms = mamba_state(cfg, tp, num_spec, mamba_ssm_dtype)
    mode = "align" if prefix_caching and ms is not None else "none"
    mamba_bs = max_model_len
    padded = None
    if ms is not None:  # hybrid: _align_hybrid_block_size + MambaModelConfig defaults
        state, mkind = ms
        ckpt = gdn_checkpoint_alignment if mkind == "gdn" else None
        if mode == "align":
            mamba_bs = block_size  # models/config.py:778-779
        block_size, padded = align_hybrid_block_size(
            block_size=block_size, attn_page_1_token=per_tok, mamba_page=state,
            kernel_min_block=kernel_min_block, mamba_cache_mode=mode,
            checkpoint_alignment=ckpt)
        if mode == "align":
            mamba_bs = block_size  # interface.py:1114-1115
        info.update(mamba_state_bytes=state, mamba_page_padded=padded, mamba_kind=mkind)
        # prefill checkpoint blocks: mamba_mixer2.py:1108-1118 always 1; GDN only with the
        # FlashInfer prefill backend in align mode (qwen_gdn_linear_attn.py:689-760)
        ckpt_blocks = 1 if mkind == "mamba2" else int(mode == "align" and ckpt is not None)
    info["block_size"] = block_size
    heads = t.get("num_key_value_heads") or t["num_attention_heads"]
    tag = (max(1, heads // tp), kv_dtype)
    layers = []
    for i, k in enumerate(kinds):
        name = f"model.layers.{i}"
        if k is None:
            continue
        if k == "mamba":
            layers.append(Layer(name, "mamba", mamba_bs, state_bytes=state, page_padded=padded,
                                mamba_cache_mode=mode, num_speculative_blocks=num_spec,
                                num_prefill_checkpoint_blocks=ckpt_blocks))
        elif k == "sliding":
            layers.append(Layer(name, "sliding", block_size, per_tok, window=t["sliding_window"],
                                extra_retained_tokens=extra_retained_tokens, tag=tag))
        elif k == "chunked":
            layers.append(Layer(name, "chunked", block_size, per_tok,
                                chunk=t["attention_chunk_size"], tag=tag))
        else:
            layers.append(Layer(name, k, block_size, per_tok, tag=tag))
            if k == "mla" and t.get("index_topk") is not None:
                # DeepSeek V3.2 indexer keys: fp8 values + one fp32 scale per 128, uint8 cache
                # (models/deepseek_v2.py:731-736), 1 head, no V: 128 + 4 = 132 bytes/token
                hd = t["index_head_dim"]
                layers.append(Layer(name + ".indexer", "indexer", block_size,
                                    hd + hd // 128 * 4, tag=("indexer",)))
    # MTP drafter layers: same spec as the target's attention layers; is_draft is compare=False
    # (kv_cache_interface.py:215-217), so they join the target's group
    attn = [l for l in layers if l.kind != "mamba"]
    for j in range(num_draft_layers):
        layers.append(replace(attn[0], name=f"model.layers.{len(kinds) + j}"))
    if hma is None:  # config/vllm.py:2236-2255 would disable it for chunked local attention,
        hma = True  # but VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1 (envs.py:1931)
    info["hma"] = hma
    return layers, info
