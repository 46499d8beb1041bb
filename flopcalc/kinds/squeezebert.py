"""SqueezeBERT's layer (Iandola et al. 2020, "SqueezeBERT: What can computer vision teach NLP
about efficient neural networks?", SustaiNLP; transformers 5.24
`models/squeezebert/modeling_squeezebert.py` SqueezeBertModule): BERT's post-norm layer with
every position-wise projection a 1-D convolution of kernel 1 in groups: q, k, v (`q_groups`,
`k_groups`, `v_groups`), the attention output (`post_attention_groups`), the MLP's d → f
(`intermediate_groups`, then the activation) and f → d (`output_groups`), each with a bias.

A kernel-1 convolution in g groups is g independent matmuls of (in/g) → (out/g): its weight
holds out·in/g parameters and costs 2·T·out·in/g FLOPs (what FlopCounterMode counts for the
convolution: 2 per multiply-add over every output element). The scores and the weighted sum
are BERT's, 2·B·s²·d each. The whole layer is one token mixer here (`layer_types: [squeezebert]`,
no separate MLP: `d_ff` is the kind's own `intermediate`); the layer's norm after it is the
output's LayerNorm, and the kind holds the one after attention.
"""

from __future__ import annotations

from typing import Annotated, Any

from ..records import dataclass
from ..declare import Min
from .base import (ATTENTION, COLUMN, ELEMENTWISE, LAYERS, REPLICATED, WEIGHTS, Kind, Part,
                   Span)
from .registry import Entry


@dataclass(frozen=True)
class SqueezeBertLayer(Kind):
    """A SqueezeBERT layer over d = `d_model`: `heads` heads, MLP `intermediate` wide, the six
    projections in (q, k, v, post, inter, out) groups."""

    d_model: int
    heads: int
    intermediate: int
    groups: tuple[int, int, int, int, int, int] = (1, 1, 1, 1, 1, 1)
    slot = "squeeze"
    bidirectional = True
    holds_mlp = True  # the layer's MLP is the kind's own (no d_ff)

    def convs(self) -> list[tuple[str, int, int, int]]:
        """(name, in, out, groups) of each kernel-1 convolution, in forward order."""
        d, f = self.d_model, self.intermediate
        q, k, v, post, inter, out = self.groups
        return [("q", d, d, q), ("k", d, d, k), ("v", d, d, v), ("post", d, d, post),
                ("inter", d, f, inter), ("out", f, d, out)]

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = []
        for name, n_in, n_out, g in self.convs():
            parts += [Part(f"{name}.weight", n_out * (n_in // g), LAYERS, (n_out, n_in // g, 1),
                           COLUMN, matmul=True, module=name),
                      Part(f"{name}.bias", n_out, LAYERS, (n_out,), REPLICATED, module=name)]
        # post_attention's LayerNorm (the layer's own norm is the output's)
        parts += [Part(f"post_norm.{w}", d, LAYERS, (d,), REPLICATED, module="post_norm")
                  for w in ("weight", "bias")]
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        # each conv: (T×in/g)·(in/g×out/g) in g groups → 2·T·out·in/g
        parts = [Part(name, 2 * x.tokens * n_out * (n_in // g), WEIGHTS)
                 for name, n_in, n_out, g in self.convs()]
        pairs = x.batch * x.n * x.source  # every (query, key) pair: the scores, then ·V
        return parts + [Part("scores", 2 * pairs * d, ATTENTION),
                        Part("values", 2 * pairs * d, ATTENTION)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        biases = sum(n_out for _, _, n_out, _ in self.convs())
        return [Part("elementwise.bias", x.tokens * biases, ELEMENTWISE)]

    def describe(self) -> str:
        return f"SqueezeBERT layer, {self.heads} heads, grouped convolutions {self.groups}"

    def notes(self) -> list[str]:
        return ["SqueezeBERT: q, k, v, attention output and MLP as kernel-1 convolutions in "
                f"groups {self.groups} (q, k, v, post, intermediate, output): out·in/g "
                "parameters and 2·T·out·in/g FLOPs each"]


@dataclass(frozen=True)
class SqueezeBertConfig:
    """`squeezebert:` in a model file: the groups of SqueezeBERT's six convolutions."""

    q_groups: Annotated[int, Min(1)] = 1
    k_groups: Annotated[int, Min(1)] = 1
    v_groups: Annotated[int, Min(1)] = 1
    post_attention_groups: Annotated[int, Min(1)] = 1
    intermediate_groups: Annotated[int, Min(1)] = 1
    output_groups: Annotated[int, Min(1)] = 1
    intermediate_size: Annotated[int, Min(1)] = 1


def build(cfg: Any, name: str) -> SqueezeBertLayer:
    block = cfg.squeezebert or SqueezeBertConfig()
    groups = (block.q_groups, block.k_groups, block.v_groups, block.post_attention_groups,
              block.intermediate_groups, block.output_groups)
    d, f = cfg.d_model, block.intermediate_size
    for g, width in zip(groups, (d, d, d, d, d, f)):
        if width % g:
            raise ValueError(f"a SqueezeBERT convolution's {width} input channels do not "
                             f"split into {g} groups")
    if cfg.n_heads is None or d % cfg.n_heads:
        raise ValueError("SqueezeBERT needs n_heads dividing d_model")
    return SqueezeBertLayer(d_model=d, heads=cfg.n_heads, intermediate=f, groups=groups)


REGISTER = Entry(layer_types=("squeezebert",), build=build,
                 blocks=(("squeezebert", SqueezeBertConfig),))
