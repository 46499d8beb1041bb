"""Model FLOPs utilisation from a measured throughput, under each named convention, and
hardware FLOPs utilisation with recomputation.

MFU = (training FLOPs per token under a convention) × (tokens per second, all devices) /
(devices × dense peak). The conventions differ in the numerator only:

- `six_nd`: 6·N, N non-embedding (active for a mixture of experts): Kaplan et al. 2020.
- `palm`: 6·N_matmul + 12·L·h·d_h·s: Chowdhery et al. 2022 (PaLM), Appendix B; torchtitan's
  and nanoGPT's `estimate_mfu`; attention over every pair (non-causal).
- `megatron`: Narayanan et al. 2021 §5.1 without recomputation, 72·L·d²·(1 + s/6d +
  V/12dL) per token, for multi-head attention and d_ff = 4d.
- `megatron_core`: Megatron-Core r0.8.0's `num_floating_point_operations`
  (megatron/training/training.py lines 73-108 at core_r0.8.0): 12·s·L·h²·[(1 + g/a + s/h)·q/h
  + f/h·(3/2 if gated) + V/(2·L·h)] per token (g KV heads of a query heads, q = a·d_h, f the
  MLP width, k experts per token), attention non-causal (the causal halving came in 8873b55d6a,
  2025-03-06), no recomputation; dense attention and MLPs only.
- `exact_full`: this tool's count, 3 × forward, every (query, key) pair (FlopCounterMode's).
- `exact_causal`: the same with the pairs each layer's mask lets through (causal, windows):
  what the kernels must execute.

HFU adds what recomputation runs again: `full` one more forward of the layers (not the head;
Megatron's 4-pass formula), `selective` the attention core's forward. `megatron_recompute` is
Narayanan et al.'s eq. 3 as published, 96·L·d²·(1 + s/6d + V/16dL) per token: it counts full
recomputation, and Megatron-LM's SC'21 "% of peak" is it.

A figure above 100% cannot be: either the throughput (or device count, or peak) is wrong, or
the convention counts FLOPs the hardware never ran (attention pairs a mask removes, experts a
token does not use, a window counted as full attention).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..kinds.base import ATTENTION, Scan, total
from ..models.spec import ModelSpec
from .model import model_flops, output_tokens, recomputed_flops, workload
from .published import exact, megatron, palm, shape_of, six_nd


@dataclass(frozen=True)
class Counted:
    name: str
    per_token: Fraction  # training FLOPs per token
    formula: str
    source: str
    hardware: bool = False  # counts recomputation (an HFU)
    note: str = ""  # where the formula's assumptions do not hold


def megatron_core(spec: ModelSpec, s: int) -> Optional[Fraction]:
    """Megatron-Core r0.8.0's formula per token (None where it has no term for a layer)."""
    d, L, V = spec.d_model, spec.n_layers(), spec.vocab_size
    per_layer = Fraction(0)
    for g in spec.groups():
        if len(g.layer.mixers) != 1 or g.layer.ffn is None or g.layer.cross is not None:
            return None
        att = g.layer.mixers[0].published(d)
        ffn = g.layer.ffn.published(d)
        if not att.heads or att.kv_kind == "latent":
            return None
        q = att.qk_width
        # (1 + g/a + s/h)·q/h: Q, K, V and O projections and the two attention matmuls
        attn = (1 + Fraction(att.kv_heads, att.heads) + Fraction(s, d)) * Fraction(q, d)
        if ffn.ffn in ("plain", "gated"):
            f = ffn.ffn_widths[0]
            mlp = Fraction(f, d) * (Fraction(3, 2) if ffn.ffn == "gated" else 1)
        elif ffn.ffn == "moe":
            mlp = Fraction(ffn.expert_width * ffn.top_k, d) * Fraction(3, 2)
        else:
            return None
        per_layer += g.count * (attn + mlp)
    # 12·B·s·h²·[Σ_layers (...) + V/(2h)] / (B·s) = 12·h²·Σ(...) + 6·h·V
    return 12 * d * d * per_layer + 6 * d * V


def counted(spec: ModelSpec, s: int, recompute: str, scan: Scan,
            packed: tuple[int, ...] = ()) -> list[Counted]:
    """Every convention's training FLOPs per token at sequence length s; with `packed` sample
    lengths the exact and HFU rows count attention inside each sample (`Workload.packed`), the
    published formulas stay as published (they know one sequence of s tokens)."""
    m = shape_of(spec)
    rows = [
        Counted("six_nd", six_nd(m, s), "6·N", "Kaplan et al. 2020 §2.1; N non-embedding "
                "(active) parameters"),
        Counted("palm", palm(m, s), "6·N_matmul + 12·L·h·d_h·s", "Chowdhery et al. 2022 "
                "(PaLM) App. B; torchtitan, nanoGPT; attention non-causal"),
        Counted("megatron", megatron(m, s), "72·L·d²·(1 + s/6d + V/12dL)",
                "Narayanan et al. 2021 §5.1 without recomputation"),
    ]
    core = megatron_core(spec, s)
    if core is not None:
        rows.append(Counted("megatron_core", core,
                            "12·L·d²·[(1 + g/a + s/d)·q/d + f/d·(3/2 gated)] + 6·d·V",
                            "Megatron-Core r0.8.0 num_floating_point_operations "
                            "(non-causal, no recomputation)"))
    rows += [
        Counted("exact_full", exact(spec, s, "full", 3, scan, packed=packed),
                "3 × forward, every pair",
                "flopcalc (FlopCounterMode's count)"),
        Counted("exact_causal", exact(spec, s, "causal", 3, scan, packed=packed),
                "3 × forward, masked pairs",
                "flopcalc (the pairs each layer's mask lets through)"),
    ]
    for convention in ("full", "causal"):
        rows.append(Counted(f"hfu_exact_{convention}", hardware(spec, s, convention,
                                                                recompute, scan, packed),
                            f"exact_{convention} + recomputation ({recompute})",
                            "flopcalc: what the devices run, recomputation included",
                            hardware=True))
    d, L, V = m.d_model, m.n_layers, m.vocab
    eq3 = 96 * L * d * d * (1 + Fraction(s, 6 * d) + Fraction(V, 16 * d * L))
    rows.append(Counted("megatron_recompute", eq3, "96·L·d²·(1 + s/6d + V/16dL)",
                        "Narayanan et al. 2021 eq. 3 (counts full recomputation; SC'21 "
                        "'% of peak')", hardware=True))
    return rows


def hardware(spec: ModelSpec, s: int, convention: str, recompute: str,
             scan: Scan, packed: tuple[int, ...] = ()) -> Fraction:
    """exact (3 × forward) plus what recomputation runs again, per token."""
    w = workload(spec, s, attention=convention, scan=scan,  # type: ignore[arg-type]
                 packed=packed)
    parts = model_flops(spec, w)
    tokens = output_tokens(spec, w)
    forward = Fraction(total(parts), tokens)
    head = Fraction(sum(p.value for p in parts if p.head), tokens)
    extra = Fraction(0)
    if recompute == "full":
        extra = forward - head
    elif recompute == "selective":
        extra = Fraction(total(parts, ATTENTION), tokens)
    else:  # Megatron-Core's modules or torchtitan's per-op checkpointing: the matmuls again
        extra = Fraction(recomputed_flops(spec, w, recompute), tokens)
    return 3 * forward + extra
