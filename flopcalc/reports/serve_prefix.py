"""`serve --shared-prefix`: prefix caching. The prefix's whole blocks are held once for every
request, which raises the concurrency, and its prefill is not recomputed."""

from __future__ import annotations

from typing import Optional

from ..records import dataclass
from ..engines import vllm as E
from ..errors import FlopcalcError
from ..models.spec import ModelSpec
from .serve_latency import Request, body_flops, head_flops


@dataclass
class PrefixSharing:
    tokens: int
    cached_tokens: int  # the prefix's whole blocks: what a request skips computing
    shared_blocks: list[int]  # per group
    shared_blocks_total: int
    blocks_per_request: int  # a request's own blocks once the prefix is shared
    max_concurrency: float  # (num_blocks − shared) / own blocks
    tokens_capacity: int  # int(max_concurrency x max_model_len)
    prefill_flops_saved: int  # per request: the prefix's prefill
    prefill_flops: Optional[int]  # per request, with --prompt: what is left to compute


def prefix_sharing(spec: ModelSpec, plan: E.Plan, request: Request,
                   max_model_len: int) -> PrefixSharing:
    """The cache and the prefill with `request.shared_prefix` tokens shared by every request."""
    prefix, prompt, attention = request.shared_prefix, request.prompt, request.attention
    assert prefix is not None
    if prefix > max_model_len:
        raise FlopcalcError(f"--shared-prefix {prefix:,} is longer than --max-model-len "
                            f"{max_model_len:,}")
    if prompt is not None and prefix > prompt:
        raise FlopcalcError(f"--shared-prefix {prefix:,} is longer than the --prompt "
                            f"{prompt:,}")
    shared = E.shared_prefix_blocks(plan, prefix)
    total = sum(shared)
    own = plan.blocks_per_request - total
    conc = (plan.num_blocks - total) / own
    cached = cached_tokens(plan, prefix, prompt)
    saved = body_flops(spec, cached, attention)
    left = None
    if prompt is not None:
        left = body_flops(spec, prompt, attention) - saved + head_flops(spec, 1)
    return PrefixSharing(prefix, cached, shared, total, own, conc, int(conc * max_model_len),
                         saved, left)


def cached_tokens(plan: E.Plan, prefix: int, prompt: Optional[int]) -> int:
    """Prompt tokens a prefix-cache hit skips: the prefix's whole blocks (of the attention
    groups' block size), and never the prompt's last token, which is computed for its logits."""
    bs = min((g.block_size for g in plan.groups if g.layout != "state"), default=1)
    if prompt is not None:
        prefix = min(prefix, prompt - 1)
    return prefix // bs * bs


def conventions(attention: str) -> list[str]:
    """How sharing a prefix is counted."""
    return ["shared prefix: its whole blocks in full and latent groups are held once; window, "
            "chunked and state groups keep their own; its prefill is not recomputed (prefill "
            f"FLOPs with attention {attention})"]
