"""`xlnet`: XLNet's relative attention (Yang et al. 2019, "XLNet: Generalized Autoregressive
Pretraining for Language Understanding", §2.3 and §2.4, after Transformer-XL's relative
positional encoding, Dai et al. 2019, §3.3; transformers 5.24 `models/xlnet/modeling_xlnet.py`
XLNetRelativeAttention), the content stream.

Counting convention: the content stream a plain forward runs. XLNet's query stream (the
two-stream attention of permutation pre-training) runs only when the input gives a
`target_mapping` (and `perm_mask`); flopcalc counts the forward without them, as inference and
fine-tuning run it, and without memory (`mems`: none in a training-mode forward,
`use_mems_train` false by default). The segment term (`seg_embed`, `r_s_bias`) runs only when
the input gives `token_type_ids`: not counted.

Softmax attention (`kinds.attention.Attention`, no biases on q, k, v, o, the heads d/h wide),
plus per layer:

- the position keys: R sinusoidal relative positions (R = 2s with `attn_type: bi`, s + 1 with
  `uni`: transformers' relative_positional_encoding) expanded over the batch and projected by
  `r` (d × h·d_h): (B·R×d)·(d×h·d_h) → 2·B·R·d·h·d_h, `weights`;
- the position scores bd: each query against the R position keys, (s×d_h)·(d_h×R) per head →
  2·B·h·s·R·d_h, `attention`, though linear in R (rel_shift then keeps s of the R columns).

At s = 1 torch.einsum computes AV (a contraction over one key) as an element-wise product, no
matmul: FlopCounterMode counts none there, and flopcalc moves it to the element-wise family.

Parameters beside q, k, v, o: `r` (d × h·d_h), the three biases r_w, r_r, r_s (h·d_h each) and
seg_embed (2 × h·d_h).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Literal

from ..records import dataclass
from . import attention_layers
from .attention import Attention
from .base import ATTENTION, COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, Part, Span, gemm
from .registry import Entry


@dataclass(frozen=True)
class XlnetAttention(Attention):
    """Attention with XLNet's relative position keys (`r`) and biases; `uni`: attn_type uni
    (s + 1 relative positions instead of 2s)."""

    uni: bool = False
    model_width: int = 0  # d, for the r projection's constant row in the crossover

    def positions(self, n: int) -> int:
        """R: the relative positions a sequence of n tokens projects (klen + qlen for `bi`,
        klen + 1 for `uni`)."""
        return n + 1 if self.uni else 2 * n

    def params(self, d: int, active: bool = False) -> list[Part]:
        width = self.heads * self.qk_dim
        parts = super().params(d, active)
        parts.append(Part("r.weight", d * width, LAYERS, (d, width), COLUMN, matmul=True,
                          module="r"))
        parts += [Part(name, width, LAYERS, (self.heads, self.qk_dim), REPLICATED, module="")
                  for name in ("r_w_bias", "r_r_bias", "r_s_bias")]
        return parts + [Part("seg_embed", 2 * width, LAYERS, (2, self.heads, self.qk_dim),
                             REPLICATED, module="")]

    def forward(self, d: int, x: Span) -> list[Part]:
        r = x.batch * self.positions(x.n)  # the position rows, expanded over the batch
        t, pairs = x.tokens, self.pairs(x)
        # at s = 1 torch.einsum runs AV, a contraction over one key, as an element-wise
        # product, no matmul (FlopCounterMode counts none): see `elementwise`
        av = 2 * self.heads * pairs * self.v_dim if x.n > 1 else 0
        parts = [gemm("q", t, d, self.d_q), gemm("k", t, d, self.d_k), gemm("v", t, d, self.d_v),
                 Part("scores", 2 * self.heads * pairs * self.qk_dim, ATTENTION),
                 Part("av", av, ATTENTION), gemm("o", t, self.d_o, d, ROW)]
        # (B·R×d)·(d×h·d_h); the position scores (s×d_h)·(d_h×R) per head and sequence
        return parts + [
            gemm("r", r, d, self.heads * self.qk_dim),
            Part("position_scores", 2 * x.batch * self.heads * x.n * self.positions(x.n)
                 * self.qk_dim, ATTENTION)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        parts = super().elementwise(d, x)
        if x.n == 1:  # AV, which torch.einsum computes element-wise at s = 1
            parts.append(Part("elementwise.av", 2 * self.heads * self.pairs(x) * self.v_dim,
                              ELEMENTWISE))
        return parts

    def pair_terms(self) -> list[tuple[int, Any]]:
        """The content terms, the position scores (2·h·d_h per query and position row: R = 2s
        is 2 per pair of s²; R = s + 1 is 1 per pair and one per query) and, with `uni`, the
        r projection's constant row (2·d·h·d_h per sequence), which the weights measured at
        s = 1 would otherwise take as linear."""
        per = 2 * self.heads * self.qk_dim
        terms = super().pair_terms()
        if not self.uni:
            return terms + [(2 * per, self.mask)]
        from .deberta import AffineTerm

        r = 2 * self.model_width * self.heads * self.qk_dim
        return terms + [(per, self.mask), (per, AffineTerm(1, 0)), (r, AffineTerm(1, -1))]

    def describe(self) -> str:
        return f"XLNet relative attention ({'uni' if self.uni else 'bi'})"

    def notes(self) -> list[str]:
        return super().notes() + [
            "XLNet: the content stream of a plain forward (no target_mapping: no query stream; "
            "no mems; no token_type_ids: no segment term); per layer the relative position "
            f"keys, {'s + 1' if self.uni else '2s'} rows per sequence projected by r, and the "
            "queries' scores against them"]


@dataclass(frozen=True)
class XlnetConfig:
    """`xlnet:` in a model file: XLNet's `attn_type` (bi: 2s relative positions; uni: s + 1)."""

    attn_type: Literal["bi", "uni"] = "bi"


def build(cfg: Any, name: str) -> Attention:
    base = attention_layers.build(cfg, "bidirectional")
    if type(base) is not Attention:
        raise ValueError("xlnet layers are softmax attention, not latent_attention")
    block = cfg.xlnet or XlnetConfig()
    return XlnetAttention(**{f.name: getattr(base, f.name) for f in fields(base)},
                          uni=block.attn_type == "uni", model_width=cfg.d_model)


REGISTER = Entry(layer_types=("xlnet",), build=build, blocks=(("xlnet", XlnetConfig),))
