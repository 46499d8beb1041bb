"""`entity_aware`: an encoder's bidirectional attention that also holds LUKE's entity-aware
query projections (Yamada et al. 2020, "LUKE: Deep Contextualized Entity Representations with
Entity-aware Self-attention", EMNLP; transformers 5.24 `models/luke/modeling_luke.py`
LukeSelfAttention with `use_entity_aware_attention`): `w2e_query`, `e2w_query` and
`e2e_query`, d → h·d_h each with a bias. They score words against entities and entities
against both, so they run only when the forward is given entities; over words alone the layer
is BERT's attention. flopcalc counts that forward: the three projections are parameters (3·(d·h·d_h
+ h·d_h)), no FLOPs, activations or cache.
"""

from __future__ import annotations

from typing import Any

from ..records import dataclass
from . import attention_layers
from .attention import Attention
from .base import Part, linear
from .registry import Entry


@dataclass(frozen=True)
class EntityAwareAttention(Attention):
    """`Attention` holding LUKE's three entity-aware query projections, unrun over words."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        return super().params(d, active) + [
            p for name in ("w2e_query", "e2w_query", "e2e_query")
            for p in linear(name, d, self.d_q, True)]

    def describe(self) -> str:
        return super().describe() + ", entity-aware queries held"

    def notes(self) -> list[str]:
        return ["LUKE: each layer holds entity-aware query projections (w2e, e2w, e2e) that run "
                "only on entity inputs: counted as parameters, no FLOPs over words"]


def build(cfg: Any, name: str) -> EntityAwareAttention:
    from dataclasses import fields

    base = attention_layers.build(cfg, "bidirectional")
    if type(base) is not Attention:
        raise ValueError("entity_aware layers are softmax attention, not latent_attention")
    return EntityAwareAttention(**{f.name: getattr(base, f.name) for f in fields(base)})


REGISTER = Entry(layer_types=("entity_aware",), build=build)
