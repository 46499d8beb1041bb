"""Parameters and FLOPs of the feed-forward sublayer: a dense MLP, or a mixture of experts.

Dense: plain (up d → f, down f → d) or gated (gate and up d → f, down f → d). Mixture of
experts: a router d → E (with a bias in gpt-oss), E routed experts of which each token uses
top-k, and optionally shared experts every token uses (Qwen2-MoE's with a sigmoid gate d → 1).
Per token the forward runs the router, k routed experts and the shared experts: what
FlopCounterMode counts with transformers' eager experts, since every token visits k distinct
experts. Routing's softmax and top-k selection are element-wise (see `elementwise`).
"""

from __future__ import annotations

from ..models.spec import Mlp, Moe
from .parts import LAYERS, WEIGHTS, Part


def mlp_matrices(mlp: Mlp, d: int) -> list[tuple[str, int, int]]:
    """(name, in, out) of each MLP matrix: gate (when gated) and up d→f, down f→d."""
    f = mlp.d_ff
    return ([("gate", d, f)] if mlp.gated else []) + [("up", d, f), ("down", f, d)]


def mlp_params(mlp: Mlp, d: int, prefix: str, copies: int = 1) -> list[Part]:
    """`copies` identical MLPs' parameters, matrix by matrix (experts stack as E x in x out)."""
    parts = []
    lead = (copies,) if copies > 1 else ()
    for name, n_in, n_out in mlp_matrices(mlp, d):
        parts.append(Part(f"{prefix}.{name}.weight", copies * n_in * n_out, LAYERS,
                          lead + (n_in, n_out)))
        if mlp.bias:
            parts.append(Part(f"{prefix}.{name}.bias", copies * n_out, LAYERS, lead + (n_out,)))
    return parts


def mlp_flops(mlp: Mlp, d: int, tokens: int, prefix: str) -> list[Part]:
    """Each matrix (T×in)·(in×out) → 2·T·in·out."""
    return [Part(f"{prefix}.{name}", 2 * tokens * n_in * n_out, WEIGHTS)
            for name, n_in, n_out in mlp_matrices(mlp, d)]


def moe_params(moe: Moe, d: int, prefix: str, active: bool) -> list[Part]:
    """A mixture of experts' parameters: router, every routed expert (only the top-k a token
    uses when `active`), shared experts and their gate."""
    parts = [Part(f"{prefix}.router.weight", d * moe.experts, LAYERS, (d, moe.experts))]
    if moe.router_bias:
        parts.append(Part(f"{prefix}.router.bias", moe.experts, LAYERS, (moe.experts,)))
    parts += mlp_params(moe.expert, d, f"{prefix}.experts",
                        moe.top_k if active else moe.experts)
    if moe.shared is not None:
        parts += mlp_params(moe.shared, d, f"{prefix}.shared")
        if moe.shared_gate:
            parts.append(Part(f"{prefix}.shared_gate.weight", d, LAYERS, (d, 1)))
    return parts


def moe_flops(moe: Moe, d: int, tokens: int, prefix: str) -> list[Part]:
    """Router (T×d)·(d×E); each token's k routed experts; the shared experts and their gate
    (T×d)·(d×1) on every token."""
    parts = [Part(f"{prefix}.router", 2 * tokens * d * moe.experts, WEIGHTS)]
    parts += mlp_flops(moe.expert, d, tokens * moe.top_k, f"{prefix}.experts")
    if moe.shared is not None:
        parts += mlp_flops(moe.shared, d, tokens, f"{prefix}.shared")
        if moe.shared_gate:
            parts.append(Part(f"{prefix}.shared_gate", 2 * tokens * d, WEIGHTS))
    return parts


def ffn_params(mlp: Mlp | Moe, d: int, active: bool = False) -> list[Part]:
    if isinstance(mlp, Moe):
        return moe_params(mlp, d, "mlp", active)
    return mlp_params(mlp, d, "mlp")


def ffn_flops(mlp: Mlp | Moe, d: int, tokens: int) -> list[Part]:
    if isinstance(mlp, Moe):
        return moe_flops(mlp, d, tokens, "mlp")
    return mlp_flops(mlp, d, tokens, "mlp")


def expert_params(moe: Moe, d: int) -> int:
    """Parameters of one routed expert (weights and biases)."""
    return sum(p.value for p in mlp_params(moe.expert, d, "expert"))
