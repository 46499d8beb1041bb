"""How a checkpoint stores its weights: a storage plan read from a Hugging Face config.json's
`quantization_config` and `torch_dtype` (or `dtype`), or from a preset's `checkpoint` block, or
made from the `--weights-dtype` / `--experts-dtype` flags (which override both).

A plan is data: the dtype of what stays unquantised, and rules saying which modules' matrices
are stored in which `Format` (bits per value and the scales, zero points and indices beside
them). `counting.quant` turns it into bytes. Modules are named as the counting sees them
(`UNITS`): a layer's token mixer (`attn`), its dense MLP (`mlp`), a mixture's shared experts
(`shared`), routed experts (`experts`) and router (`router`), the token table (`embed`), the
output head (`head`), image towers (`tower`) and DeepSeek's MTP projection (`mtp_proj`). A
checkpoint's module patterns (`modules_to_not_convert`, `ignore`, `exclude_modules`, ...) are
matched against the Hugging Face names of those modules (`model.layers.3.self_attn`,
`model.layers.3.mlp.experts`, `lm_head`), with transformers' and vLLM's rules: a plain pattern
names a module by whole dotted segments of its name, and everything inside it
(`model.layers.0` is the whole first layer; `*` any text), `re:` a regular expression from the
start of the name.

Decisions where the formats' documentation is silent (docs/commands/serve.md, "Serving a published
checkpoint"): routers, norms, biases, the token table and the head stay in the checkpoint's
dtype unless a method quantises the head (GPTQ's `lm_head: true`); a float32 checkpoint is
served in bf16 (vLLM's `--dtype auto`); a pattern naming single projections (`q_proj`) is
refused, as formats are planned per module.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from ..records import dataclass
from ..errors import FlopcalcError

# Modules a format may quantise (their matmul weights); the others keep the dtype.
LINEAR = frozenset(("attn", "cross", "mlp", "shared", "experts"))
UNITS = ("embed", "attn", "cross", "mlp", "shared", "experts", "router", "head", "tower",
         "mtp_proj")
UNIT_TITLES = {"embed": "token embedding", "attn": "token mixers (attention)",
               "cross": "cross-attention", "mlp": "dense MLP", "shared": "shared experts",
               "experts": "routed experts", "router": "routers", "head": "output head",
               "tower": "vision towers", "mtp_proj": "MTP projections",
               "vectors": "norms, biases and other vectors"}
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "bf16",
                "float": "bf16"}


@dataclass(frozen=True)
class Format:
    """How one (n_in × n_out) matrix is stored: `bits` per value and, beside the values,
    scales of `scale_bits` (each with a zero point of `zero_bits`) shared by `group` values
    along the input dimension (-1: a whole row, per output channel), or by a `tile` of
    (n_out, n_in) values, or by `group` values of the flattened matrix (`flat`, with `nested`
    blocks' scales sharing one fp32 scale of their own); `tensor_bytes` per matrix (per-tensor
    scales, global scales, lookup tables) and `index_bytes` per input row (GPTQ's g_idx)."""

    name: str
    bits: int
    scale_bits: int = 0
    group: int = 0
    tile: tuple[int, int] = (0, 0)
    zero_bits: int = 0
    tensor_bytes: int = 0
    index_bytes: int = 0
    flat: bool = False
    nested: int = 0
    exact_groups: bool = True  # the group must divide the width (packed checkpoints)


@dataclass(frozen=True)
class Rule:
    """Modules stored in `fmt`: those `targets` name (patterns; empty: every linear module)
    among `units`."""

    fmt: Format
    units: frozenset[str] = LINEAR
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A checkpoint's storage: `dtype` for what no rule quantises; `rules`, first match wins;
    `keep` patterns (from the config key `keep_key`) of modules left in `dtype`; `flags`
    (weights, experts) when the command line said how weights are stored, which then decides
    alone (`counting.quant.part_bytes`); `source` says where it came from."""

    dtype: str
    rules: tuple[Rule, ...] = ()
    keep: tuple[str, ...] = ()
    keep_key: str = "modules_to_not_convert"
    head: bool = False  # the method quantises the output head too
    source: str = ""
    method: str = ""
    flags: Optional[tuple[str, Optional[str]]] = None

    def format_for(self, unit: str, layer: Optional[int]) -> Optional[Format]:
        """The format of the unit's matrices (None: they keep `dtype`)."""
        if unit not in LINEAR and not (unit == "head" and self.head):
            return None
        names = module_names(unit, layer)
        if any(matches(p, names) for p in self.keep):
            return None
        for rule in self.rules:
            if (unit in rule.units or (unit == "head" and self.head)) and (
                    not rule.targets or any(matches(t, names) for t in rule.targets)):
                return rule.fmt
        return None

    def patterns(self) -> list[tuple[str, str]]:
        """(config key, pattern) of every pattern that must name some module of the model."""
        out = [(self.keep_key, p) for p in self.keep]
        for r in self.rules:
            out += [("targets", t) for t in r.targets]
        return out


# ------------------------------------------------------------------------------ module names

_PREFIXES = ("model.layers", "model.language_model.layers", "language_model.model.layers",
             "model.decoder.layers", "transformer.h", "backbone.layers")
_NAMES = {
    "attn": ("self_attn", "attn", "attention", "self_attention", "linear_attn", "mixer"),
    "cross": ("encoder_attn", "cross_attn"),
    "mlp": ("mlp", "feed_forward", "ffn"),
    "shared": ("mlp.shared_experts", "mlp.shared_expert", "feed_forward.shared_expert"),
    "experts": ("mlp.experts", "block_sparse_moe.experts", "feed_forward.experts"),
    "router": ("mlp.gate", "mlp.router", "block_sparse_moe.gate", "feed_forward.router",
               "mlp.shared_expert_gate"),
    # tensors no format quantises, which checkpoints list all the same (Qwen3's FP8 configs
    # name every layer norm)
    "vectors": ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                "post_feedforward_layernorm", "self_attn.q_norm", "self_attn.k_norm",
                "self_attn.q_a_layernorm", "self_attn.kv_a_layernorm", "self_attn.sinks",
                "linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.conv1d",
                "linear_attn.norm", "mixer.A_log", "mixer.D", "mixer.dt_bias", "mixer.conv1d",
                "mixer.norm", "self_attn.rotary_emb"),
    "mtp_proj": ("eh_proj",),
}
_TOP = {"vectors": ("model.norm", "model.language_model.norm", "norm_f", "model.final_layernorm"),
        "embed": ("model.embed_tokens", "model.language_model.embed_tokens",
                  "language_model.model.embed_tokens", "transformer.wte"),
        "head": ("lm_head", "language_model.lm_head"),
        "tower": ("visual", "model.visual", "vision_tower", "model.vision_tower",
                  "vision_model", "multi_modal_projector", "model.multi_modal_projector")}
# projections inside a module: a pattern naming one of them alone is refused
_LEAVES = {"attn": ("q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "q_a_proj", "q_b_proj",
                    "kv_a_proj_with_mqa", "kv_b_proj", "in_proj", "out_proj", "in_proj_qkvz",
                    "in_proj_ba", "x_proj", "dt_proj"),
           "mlp": ("gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc1", "fc2"),
           "shared": ("gate_proj", "up_proj", "down_proj"),
           "experts": ("0.gate_proj", "0.up_proj", "0.down_proj", "gate_up_proj", "down_proj")}


def module_names(unit: str, layer: Optional[int]) -> tuple[str, ...]:
    """The Hugging Face names a unit goes by (of layer `layer`; None: outside the layers)."""
    if unit in _TOP and (layer is None or unit not in _NAMES):
        return _TOP[unit]
    at = "0" if layer is None else str(layer)
    return tuple(f"{p}.{at}.{n}" for p in _PREFIXES for n in _NAMES.get(unit, ()))


def leaf_names(unit: str, layer: Optional[int]) -> tuple[str, ...]:
    return tuple(f"{n}.{leaf}" for n in module_names(unit, layer)
                 for leaf in _LEAVES.get(unit, ()))


_COMPILED: dict[str, Any] = {}


# a group with a quantifier inside, quantified again: `(a+)+`, which can backtrack for ever
_NESTED = re.compile(r"\([^()]*[*+?}][^()]*\)\s*[*+{]")


def _compile(pattern: str) -> Any:
    if pattern not in _COMPILED:
        if len(pattern) > 500:
            raise FlopcalcError(f"quantisation pattern '{pattern[:60]}...' is longer than 500 "
                                "characters; name modules by shorter patterns")
        if pattern.startswith("re:") and _NESTED.search(pattern):
            raise FlopcalcError(f"quantisation pattern '{pattern[:80]}' nests quantifiers "
                                "(as (a+)+), which can take for ever to match; simplify it")
        if pattern.startswith("re:"):
            try:
                _COMPILED[pattern] = re.compile(pattern[3:])
            except re.error as exc:
                raise FlopcalcError(f"quantisation pattern '{pattern[:80]}' is not a valid "
                                    f"regular expression ({exc}); fix it") from None
        else:
            named = pattern.removesuffix(".weight").removesuffix(".bias")  # a module's tensor
            body = ".*".join(re.escape(x) for x in named.split("*"))
            # whole dotted segments, the module itself or anything inside it
            _COMPILED[pattern] = re.compile(rf"(?:^|.*\.){body}(?:\..*)?$")
    return _COMPILED[pattern]


def matches(pattern: str, names: Iterable[str]) -> bool:
    """Whether `pattern` names one of these modules (or a tensor of one: `lm_head.weight`)."""
    rx = _compile(pattern)
    return any(rx.match(n) for n in names)


# --------------------------------------------------------------------------------- reading

FP8_E4M3, E8M0, FP32, FP16, BF16 = 8, 8, 32, 16, 16


def _ints(value: Any, what: str, label: str) -> list[int]:
    if not isinstance(value, list) or not all(type(v) is int and 0 < v <= 1 << 20
                                              for v in value):
        raise FlopcalcError(f"{label}: quantization_config.{what} must be a list of positive "
                            f"integers, got {str(value)[:60]}")
    return value


def _int(q: dict[str, Any], key: str, default: int, label: str, where: str = "",
         most: int = 1 << 20) -> int:
    v = q.get(key, default)
    if v is None:
        v = default
    if type(v) is not int or (v <= 0 and v != -1) or v > most:
        raise FlopcalcError(f"{label}: quantization_config.{where}{key} must be a positive "
                            f"integer up to {most:,} (or -1), got {str(v)[:40]}")
    return v


def _patterns(q: dict[str, Any], key: str, label: str) -> tuple[str, ...]:
    v = q.get(key)
    if v is None:
        return ()
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise FlopcalcError(f"{label}: quantization_config.{key} must be a list of module names")
    return tuple(v)


KNOWN = ("fp8", "fbgemm_fp8", "compressed-tensors", "mxfp4", "awq", "gptq", "bitsandbytes",
         "modelopt")


def dtype_of(data: dict[str, Any]) -> tuple[str, str]:
    """(flopcalc dtype, how it was read) of a config's `torch_dtype` / `dtype`."""
    for key in ("torch_dtype", "dtype"):
        v = data.get(key)
        if isinstance(v, str) and v.removeprefix("torch.") in TORCH_DTYPES:
            name = v.removeprefix("torch.")
            note = " (served in bf16, vLLM's --dtype auto)" if name.startswith("float") and \
                TORCH_DTYPES[name] == "bf16" else ""
            return TORCH_DTYPES[name], f"{key} {name}{note}"
    return "bf16", "no torch_dtype: bf16"


def plan_from_config(data: dict[str, Any], label: str, origin: str) -> Optional[Plan]:
    """The storage plan a config.json (or a preset's `checkpoint` block, the same keys)
    describes: None when it says nothing about storage."""
    q = data.get("quantization_config")
    dtype, how = dtype_of(data)
    if q is None:
        if not any(k in data for k in ("torch_dtype", "dtype")):
            return None
        return Plan(dtype, source=f"{origin} {how}")
    if not isinstance(q, dict):
        raise FlopcalcError(f"{label}: quantization_config must be a mapping")
    method = q.get("quant_method")
    if method is None and isinstance(q.get("quant_algo"), str):
        method = "modelopt"
    if method is None and ("load_in_4bit" in q or "load_in_8bit" in q):
        method = "bitsandbytes"
    if not isinstance(method, str) or method not in _READERS:
        name = str(method)[:40]
        raise FlopcalcError(
            f"{label}: quantization_config.quant_method '{name}' is not one flopcalc reads "
            f"(known: {', '.join(KNOWN)}); say how the weights are stored with --weights-dtype "
            "FORMAT (and --experts-dtype FORMAT for routed experts)")
    plan = _READERS[method](q, label, dtype)
    src = f"{origin} quantization_config ({method})"
    return Plan(plan.dtype, plan.rules, plan.keep, plan.keep_key, plan.head,
                f"{src}; other tensors {how}", method)


def _fp8(q: dict[str, Any], label: str, dtype: str) -> Plan:
    block = q.get("weight_block_size")
    static = 4 if q.get("activation_scheme") == "static" else 0  # an fp32 input scale
    if block is not None:
        edges = _ints(block, "weight_block_size", label)
        if len(edges) != 2:
            raise FlopcalcError(f"{label}: quantization_config.weight_block_size must be two "
                                "integers [out, in]")
        b_out, b_in = edges
        fmt = Format(f"fp8 {b_out}x{b_in} blocks", 8, FP32, tile=(b_out, b_in),
                     tensor_bytes=static)
    else:
        fmt = Format("fp8 per tensor", 8, tensor_bytes=4 + static)
    keep = _patterns(q, "modules_to_not_convert", label) or _patterns(q, "ignored_layers", label)
    key = "modules_to_not_convert" if q.get("modules_to_not_convert") else "ignored_layers"
    return Plan(dtype, (Rule(fmt),), keep, key)


def _fbgemm(q: dict[str, Any], label: str, dtype: str) -> Plan:
    # fbgemm's fp8: a float32 scale per output row (FbgemmFp8Linear.weight_scale: (n_out, 1))
    fmt = Format("fp8 per channel", 8, FP32, group=-1)
    return Plan(dtype, (Rule(fmt),), _patterns(q, "modules_to_not_convert", label))


def _mxfp4(q: dict[str, Any], label: str, dtype: str) -> Plan:
    # OCP Microscaling v1.0: E2M1 values, one E8M0 scale per 32; transformers' Mxfp4HfQuantizer
    # converts the experts only (gpt-oss's GptOssExperts)
    fmt = Format("mxfp4", 4, E8M0, group=32)
    return Plan(dtype, (Rule(fmt, frozenset({"experts"})),),
                _patterns(q, "modules_to_not_convert", label))


def _awq(q: dict[str, Any], label: str, dtype: str) -> Plan:
    # AutoAWQ's WQLinear: qweight int32 (n_in, n_out/8), qzeros int32 (n_in/g, n_out/8) — a
    # 4-bit zero per group and output —, scales fp16 (n_in/g, n_out)
    bits = _int(q, "bits", _int(q, "w_bit", 4, label, most=16), label, most=16)
    group = _int(q, "group_size", _int(q, "q_group_size", 128, label), label)
    zero = bits if q.get("zero_point", True) else 0
    fmt = Format(f"awq int{bits} g{group}", bits, FP16, group=group, zero_bits=zero)
    return Plan(dtype, (Rule(fmt),), _patterns(q, "modules_to_not_convert", label))


def _gptq(q: dict[str, Any], label: str, dtype: str) -> Plan:
    # AutoGPTQ's QuantLinear: qweight int32 (n_in·bits/32, n_out), qzeros int32 (n_in/g,
    # n_out·bits/32) — stored whether or not `sym` —, scales fp16 (n_in/g, n_out), g_idx int32
    # (n_in)
    bits = _int(q, "bits", 4, label, most=16)
    group = _int(q, "group_size", 128, label)
    fmt = Format(f"gptq int{bits} g{group}", bits, FP16, group=group, zero_bits=bits,
                 index_bytes=4)
    keep = _patterns(q, "modules_to_not_convert", label)
    return Plan(dtype, (Rule(fmt),), keep, head=q.get("lm_head") is True)


def _bnb(q: dict[str, Any], label: str, dtype: str) -> Plan:
    keep = _patterns(q, "llm_int8_skip_modules", label)
    if q.get("load_in_4bit"):
        kind = str(q.get("bnb_4bit_quant_type", "fp4"))
        if q.get("bnb_4bit_use_double_quant"):
            # Dettmers et al. 2023 (QLoRA) §3: an 8-bit absmax per 64 values, their fp32 scale
            # per 256 absmax; per matrix the 16-entry quant_map, the 256-entry nested map and
            # the nested offset, fp32
            fmt = Format(f"bnb {kind} double-quant", 4, 8, group=64, flat=True, nested=256,
                         tensor_bytes=16 * 4 + 256 * 4 + 4, exact_groups=False)
        else:
            fmt = Format(f"bnb {kind}", 4, FP32, group=64, flat=True, tensor_bytes=16 * 4,
                         exact_groups=False)
    elif q.get("load_in_8bit"):
        # LLM.int8() (Dettmers et al. 2022): int8 values, an fp32 scale per output row (SCB)
        fmt = Format("bnb int8", 8, FP32, group=-1)
    else:
        raise FlopcalcError(f"{label}: a bitsandbytes quantization_config sets load_in_4bit or "
                            "load_in_8bit; neither is true")
    return Plan(dtype, (Rule(fmt),), keep, "llm_int8_skip_modules")


def _modelopt(q: dict[str, Any], label: str, dtype: str) -> Plan:
    inner = q.get("quantization") if isinstance(q.get("quantization"), dict) else q
    algo = str(inner.get("quant_algo", "")).upper()
    keep = _patterns(inner, "exclude_modules", label)
    if algo == "FP8":  # an fp32 weight scale and an fp32 input scale per matrix
        fmt = Format("modelopt fp8", 8, tensor_bytes=8)
    elif algo == "NVFP4":
        # E2M1 values, an FP8 E4M3 scale per 16, fp32 weight_scale_2 and input_scale
        group = _int(inner, "group_size", 16, label)
        fmt = Format("nvfp4", 4, FP8_E4M3, group=group, tensor_bytes=8)
    else:
        raise FlopcalcError(f"{label}: quantization_config.quant_algo '{algo[:30]}' of ModelOpt "
                            "is not one flopcalc reads (FP8, NVFP4); give --weights-dtype FORMAT")
    return Plan(dtype, (Rule(fmt),), keep, "exclude_modules")


def _compressed(q: dict[str, Any], label: str, dtype: str) -> Plan:
    """compressed-tensors (llm-compressor): each config group's `weights` scheme on the modules
    its `targets` name ("Linear": every linear module); scales in the checkpoint's dtype
    (weight_scale), packed int4 with an int64 weight_shape per matrix, nvfp4 with fp8 scales
    per 16 and fp32 weight and input global scales."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise FlopcalcError(f"{label}: a compressed-tensors quantization_config has "
                            "config_groups; none found")
    form = str(q.get("format", ""))
    rules = []
    scale = 16 if dtype in ("bf16", "fp16") else 32
    for name, g in groups.items():
        w = g.get("weights") if isinstance(g, dict) else None
        if not isinstance(w, dict):
            continue
        where = f"config_groups.{name}.weights."
        bits = _int(w, "num_bits", 8, label, where, most=16)
        kind = str(w.get("type", "int"))
        strategy = str(w.get("strategy", "tensor"))
        zero = bits if w.get("symmetric") is False else 0
        packed = 16 if form in ("pack-quantized", "marlin-24") else 0  # weight_shape int64 (2,)
        group = 0
        if strategy in ("group", "tensor_group"):
            group = _int(w, "group_size", 128, label, where)
        if form.startswith("nvfp4") or (kind == "float" and bits == 4):
            fmt = Format("nvfp4", 4, FP8_E4M3, group=group or 16, tensor_bytes=8)
        elif strategy == "block":
            b = _ints(w.get("block_structure"), where + "block_structure", label)
            if len(b) != 2:
                raise FlopcalcError(f"{label}: quantization_config.{where}block_structure must "
                                    "be two integers [out, in]")
            fmt = Format(f"{kind}{bits} {b[0]}x{b[1]} blocks", bits, scale, tile=(b[0], b[1]))
        elif strategy == "channel":
            fmt = Format(f"{kind}{bits} per channel", bits, scale, group=-1, zero_bits=zero,
                         tensor_bytes=packed)
        elif group:
            fmt = Format(f"{kind}{bits} g{group}", bits, scale, group=group, zero_bits=zero,
                         tensor_bytes=packed)
        else:
            fmt = Format(f"{kind}{bits} per tensor", bits, tensor_bytes=scale // 8 + packed)
        targets = g.get("targets") or ["Linear"]
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise FlopcalcError(f"{label}: quantization_config.config_groups.{name}.targets "
                                "must be a list of names")
        named = tuple(t for t in targets if t != "Linear" and not t.endswith("Linear"))
        rules.append(Rule(fmt, LINEAR, () if len(named) < len(targets) else named))
    if not rules:
        raise FlopcalcError(f"{label}: no config group of the compressed-tensors "
                            "quantization_config has a weights scheme; give --weights-dtype "
                            "FORMAT")
    return Plan(dtype, tuple(rules), _patterns(q, "ignore", label), "ignore")


_READERS = {"fp8": _fp8, "fbgemm_fp8": _fbgemm, "mxfp4": _mxfp4, "awq": _awq, "gptq": _gptq,
            "bitsandbytes": _bnb, "modelopt": _modelopt, "compressed-tensors": _compressed}


def plan_from_flags(weights: str, experts: Optional[str]) -> Plan:
    return Plan("bf16", source="--weights-dtype" + (" and --experts-dtype" if experts else ""),
                flags=(weights, experts))


def checkpoint_plan(loaded: Any) -> Optional[Plan]:
    """The plan a loaded model's own files state: its config.json's storage keys, or its
    preset's `checkpoint` block (None: neither says)."""
    if loaded.stored_as is not None:
        return plan_from_config(loaded.stored_as, loaded.label, "config.json")
    block = loaded.raw.get("checkpoint")
    if not isinstance(block, dict):
        return None
    from .config import Checkpoint

    ck = Checkpoint(**block)
    return plan_from_config(ck.as_config(), loaded.label,
                            f"{loaded.name}'s checkpoint field ({ck.repo} config.json)")
