"""Training FLOPs: forward + backward, with the backward pass twice the forward (Kaplan et al.
2020, §2.1), i.e. 3 × forward FLOPs per token × D; 6ND is the same rule with a forward of 2N
per token. With full activation recomputation a fourth pass (one more forward) makes
hardware FLOPs: 4 × forward."""

from __future__ import annotations

from fractions import Fraction

from ..records import dataclass
from ..kinds.base import round_fraction


@dataclass(frozen=True, slots=True)
class TrainingCost:
    """Training FLOPs for D tokens; see `training_cost`."""

    forward_per_token: Fraction
    six_nd: int
    attention_correction: int
    mtp: int  # multi-token-prediction modules (0 without them)
    exact: int  # passes × forward per token × D, plus `mtp`
    passes: int  # 3, or 4 with full recomputation
    rounded: bool  # True when a per-token figure was fractional and a total was rounded

    @property
    def six_nd_plus_attention(self) -> int:
        return self.six_nd + self.attention_correction


def training_cost(forward: int, attention: int, n: int, output_tokens: int, tokens: int,
                  mtp_forward: int, passes: int = 3, recomputed: int = 0) -> TrainingCost:
    """Training FLOPs from one forward pass's counts over `output_tokens` tokens, for D =
    `tokens`: exact = passes × forward per token × D (+ the MTP modules' passes, + what
    recompute modules run again: `recomputed` forward FLOPs over the same tokens, once); the
    attention correction = 3 × attention-matrix FLOPs per token × D, the s² term 6ND leaves
    out."""
    fwd, att = Fraction(forward, output_tokens), Fraction(attention, output_tokens)
    mtp = Fraction(mtp_forward, output_tokens) * passes * tokens
    again = Fraction(recomputed, output_tokens) * tokens
    exact, correction = passes * fwd * tokens + mtp + again, 3 * att * tokens
    return TrainingCost(
        forward_per_token=fwd,
        six_nd=6 * n * tokens, attention_correction=round_fraction(correction),
        mtp=round_fraction(mtp), exact=round_fraction(exact), passes=passes,
        rounded=any(x.denominator != 1 for x in (exact, correction, mtp)))
