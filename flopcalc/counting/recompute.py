"""Megatron-Core's selective recomputation by module (`--recompute-granularity selective
--recompute-modules ...`): which saved activations each module's recomputation frees, and which
forward work it runs again in the backward pass.

What each module does, read from Megatron-Core at d98e8a64 (transformer_config.py's
`recompute_modules`, transformer_layer.py, multi_latent_attention.py, moe/experts.py,
moe/moe_layer.py):

- `core_attn`: the core attention (QKᵀ, softmax, AV) under a normal checkpoint: its s² tensors
  are not kept (flopcalc's `selective`, Megatron's default list); runs the attention core again.
- `moe_act`: the routed experts' activation function under an output-discarding checkpoint
  (`CheckpointWithoutOutput`, grouped GEMM only): its output, the second projection's f-wide
  input, is freed and recomputed from the first projection's output, which stays. No matmul.
- `layernorm`: input_layernorm and pre_mlp_layernorm under output-discarding checkpoints: the
  norms' outputs (the attention's and the MLP's inputs, 2sbh each) are freed, the norms' inputs
  (the residual stream) stay. No matmul.
- `mla_up_proj`: latent attention's up projections and RoPE (`qkv_up_proj_and_rope_apply`)
  under an output-discarding checkpoint: the per-head Q, K and V are freed, the compressed
  latents stay; runs the up projections again.
- `mlp`: a dense MLP under a normal checkpoint (MoE layers ignore it): its hidden tensors are
  freed, its input stays; runs the MLP again.
- `moe`: the whole MoE layer under a normal checkpoint: the router's logits, the experts'
  inputs and hidden tensors and the shared experts' are freed; runs the layer again (router,
  dispatch, experts, shared experts).
- `shared_experts`: the shared experts under a normal checkpoint: their hidden tensors are
  freed; runs them again.

`recompute` settings across flopcalc are a string: `none`, `selective` (= `core_attn`), `full`,
`op` (below), or a comma list of the modules above in `MODULES` order (`layernorm,moe_act`).

`op` is torchtitan's per-op selective activation checkpointing (`ac_mode selective`,
`selective_ac_option op`), read at two commits: torchtitan/models/llama3/parallelize_llama.py
lines 217-266 at 820504e (`_save_list`, `_custom_policy`) and
torchtitan/distributed/activation_checkpoint.py lines 243-275 at b5bcd76 (`SelectiveAC`). Each
block runs under a checkpoint whose policy keeps the output of an op only if the op is in the
save list: matmuls (`aten.mm`), the SDPA kernels, the tensor-parallel reduce-scatter and `max`
(fp8's amax). Every other op (norms, rotary, SiLU, the gate's multiply, residual adds, casts) is
run again in the backward pass. Matmuls are counted in forward order within the block
(`meta[mm_count_key] += 1` before the test) and the even-numbered ones are not saved: the 2nd,
4th, ... run again. For a Llama block's wq, wk, wv, wo, w1, w3, w2 that is wk, wo and w3. A
routed MoE layer's expert GEMMs are `torch._grouped_mm`: neither `aten.mm` nor in either save
list (nor in PyTorch's `get_default_op_list().compute_intensive_ops`, which b5bcd76 saves), so
they always run again and are not counted. The router's gate runs again uncounted too
(b5bcd76's `force_recompute_mm_shapes_by_fqns` default, ["moe.router.gate"]). The attention
core is saved, so it does not run again.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Optional

from ..kinds.base import EXPERT, REPLICATED

# Megatron-Core's names, in the order of its documentation (recompute_modules)
MODULES: dict[str, str] = {
    "core_attn": "the attention core (QKᵀ, softmax, AV)",
    "moe_act": "the routed experts' activation function",
    "layernorm": "the norms before attention and MLP",
    "mla_up_proj": "latent attention's up projections and RoPE",
    "mlp": "dense MLPs",
    "moe": "whole MoE layers",
    "shared_experts": "the MoE layers' shared experts",
}
OP = "op"  # torchtitan's per-op selective activation checkpointing (see above)
POLICIES = ("none", "selective", "full", OP)
MEMORY_BOUND = ("moe_act", "layernorm")  # element-wise work only: time from bytes moved


def modules_of(recompute: str) -> frozenset[str]:
    """The modules a recompute setting recomputes selectively: `selective` is Megatron-Core's
    default list, core_attn alone; `none` and `full` name none."""
    if recompute == "selective":
        return frozenset({"core_attn"})
    if recompute in POLICIES:
        return frozenset()
    return frozenset(recompute.split(","))


def by_module(recompute: str) -> bool:
    """Whether a setting is a list of modules rather than none/selective/full."""
    return recompute not in POLICIES


def canonical(names: Iterable[str]) -> str:
    """The setting for these module names: MODULES order, each once."""
    chosen = set(names)
    unknown = sorted(chosen - set(MODULES))
    if unknown:
        raise ValueError(f"unknown recompute module {unknown[0]!r}; the modules are "
                         f"{', '.join(MODULES)}")
    if not chosen:
        raise ValueError(f"name at least one recompute module: {', '.join(MODULES)}")
    return ",".join(m for m in MODULES if m in chosen)


def _latent(mixer: Any) -> bool:
    return bool(getattr(mixer, "up_projections", ()))


def present(layer: Any) -> set[str]:
    """The modules a layer has: what Megatron-Core would recompute in it."""
    have = set()
    for _, kind in layer.slots():
        if kind.pair_terms():
            have.add("core_attn")
        if _latent(kind):
            have.add("mla_up_proj")
    if layer.norm.present:
        have.add("layernorm")
    ffn = layer.ffn
    if ffn is not None and ffn.routed:
        have |= {"moe", "moe_act"}
        if getattr(ffn, "shared", None) is not None:
            have.add("shared_experts")
    elif ffn is not None:
        have.add("mlp")
    return have


def lacking(spec: Any, recompute: str, name: str) -> Optional[str]:
    """Why a module list does not fit the model (a module none of its layers has), else None."""
    have: set[str] = set()
    for g in spec.groups():
        have |= present(g.layer)
    missing = [m for m in modules_of(recompute) if m not in have]
    if not missing:
        return None
    why = {"mla_up_proj": "no latent attention (MLA)", "moe_act": "no mixture of experts",
           "moe": "no mixture of experts", "shared_experts": "no shared experts",
           "mlp": "no dense MLP", "core_attn": "no attention", "layernorm": "no norms"}
    m = missing[0]
    return (f"--recompute-modules {m}: {name} has {why[m]}, so there is nothing to "
            f"recompute; choose among {', '.join(sorted(have, key=list(MODULES).index))}")


def freed(layer: Any, mods: frozenset[str], parts: list[tuple[str, Fraction, Fraction]]
          ) -> list[tuple[str, Fraction, Fraction]]:
    """A layer's saved tensors (name, bytes, share a projection reads) with what the modules'
    recomputation frees taken out (`counting.layers.layer_activations` names them: a slot's
    tensors `slot.tensor`, a sublayer's input `sub.input`)."""
    if not mods:
        return parts
    drop: set[str] = set()
    scale: dict[str, Fraction] = {}
    if "layernorm" in mods and layer.norm.present:
        drop |= {f"{sub}.input" for sub, _ in layer.sublayers()}
    for slot, kind in layer.slots():
        if "mla_up_proj" in mods and _latent(kind):
            drop |= {f"{slot}.qk", f"{slot}.v"}
    ffn = layer.ffn
    if ffn is not None and ffn.routed:
        slot = ffn.slot
        if "moe" in mods:  # the kind's own tensors; the sublayer's input and mask stay
            drop |= {name for name, _, _ in parts if name.startswith(f"{slot}.")} - {
                f"{slot}.input", f"{slot}.dropout_mask"}
        if "shared_experts" in mods:
            drop.add(f"{slot}.shared.hidden")
        if "moe_act" in mods:
            # the activation's output is 1 of the experts' 3 f-wide tensors (gated: the fused
            # activation's 2f-wide input stays) or 1 of 2 (plain): Mlp.hidden_bytes
            scale[f"{slot}.experts.hidden"] = Fraction(2, 3) if ffn.expert.gated \
                else Fraction(1, 2)
    elif ffn is not None and "mlp" in mods:
        drop.add(f"{ffn.slot}.hidden")
    return [(name, value * scale.get(name, Fraction(1)), read)
            for name, value, read in parts if name not in drop]


def reruns(layer: Any, mods: frozenset[str]) -> Callable[[str], bool]:
    """Whether a layer's forward matmul (by part name: `mlp.experts.up`, `attn.q_b`) runs
    again in the backward pass under these modules. The attention core (core_attn) is the
    attention family's, not a matmul with weights: callers add it."""
    prefixes: list[str] = []
    names: set[str] = set()
    ffn = layer.ffn
    if ffn is not None and ffn.routed:
        if "moe" in mods:
            prefixes.append(f"{ffn.slot}.")
        elif "shared_experts" in mods:
            prefixes.append(f"{ffn.slot}.shared.")
    elif ffn is not None and "mlp" in mods:
        prefixes.append(f"{ffn.slot}.")
    if "mla_up_proj" in mods:
        for slot, kind in layer.slots():
            names |= {f"{slot}.{p}" for p in getattr(kind, "up_projections", ())}
    return lambda name: name in names or any(name.startswith(p) for p in prefixes)


def op_reruns(roles: Iterable[str], routed: bool) -> tuple[bool, ...]:
    """Whether torchtitan's per-op checkpointing runs each of a layer's forward weight matmuls
    again, given their tensor-parallel roles in forward order (position by position): routed
    experts' GEMMs and a routed layer's router always, the other matmuls counted in order and
    every second one (the 2nd, 4th, ...)."""
    again: list[bool] = []
    count = 0
    for role in roles:
        if role == EXPERT or (routed and role == REPLICATED):
            again.append(True)  # grouped GEMM (never saved); the router (forced, not counted)
            continue
        count += 1
        again.append(count % 2 == 0)
    return tuple(again)


FREES = {
    "core_attn": "core_attn frees the s² scores (none kept under flash attention) and runs "
                 "the attention core again",
    "moe_act": "moe_act frees the experts' activation output (1 of their 3 f-wide tensors, 1 "
               "of 2 in a plain MLP) and recomputes it element-wise",
    "layernorm": "layernorm frees the norms' outputs (each sublayer's input, 2sbh) and "
                 "recomputes them element-wise",
    "mla_up_proj": "mla_up_proj frees the per-head Q, K and V (the latents stay) and runs the "
                   "up projections again",
    "mlp": "mlp frees dense MLPs' hidden tensors and runs them again",
    "moe": "moe frees the MoE layer's router logits, expert inputs and hidden tensors and runs "
           "the layer again (its all-to-all's second pass is not timed)",
    "shared_experts": "shared_experts frees the shared experts' hidden tensors and runs them "
                      "again",
}


def describe(recompute: str) -> list[str]:
    """The "how counted" line of a module list (what each module frees and runs again) or of
    torchtitan's per-op checkpointing."""
    if recompute == OP:
        return ["recompute op (torchtitan's per-op selective activation checkpointing, read at "
                "820504e and b5bcd76): each layer keeps its input, the output of every other "
                "matmul (the 1st, 3rd, ... in forward order) and attention's output and "
                "log-sum-exp; the other matmuls (a Llama block's wk, wo, w3), routed experts' "
                "GEMMs, the router and every element-wise op run again in backward"]
    if not by_module(recompute):
        return []
    mods = modules_of(recompute)
    return ["recompute by module (Megatron-Core's --recompute-granularity selective "
            "--recompute-modules, read at d98e8a64): "
            + "; ".join(FREES[m] for m in MODULES if m in mods)]
