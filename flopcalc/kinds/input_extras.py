"""What some encoders add to BERT's embedding before the first layer (transformers 5.24):

- `tables`: lookup tables beside the token, position and token-type tables, each `rows` ×
  `width` parameters read by a lookup only (no matmul FLOPs): LayoutLM's four 2-D position
  tables (x, y, h, w: `max_2d_position_embeddings` × d), RoCBERT's pronunciation and glyph
  tables, RoFormer's sinusoidal table (`max_position_embeddings` × d/heads, an `nn.Embedding`
  held frozen: a parameter), MPNet's relative-position bias (buckets × heads, one for every
  layer, computed once).
- `project_in`: a linear layer of `project_in` inputs → d on every token, with a bias when
  `project_bias` (RoCBERT's `map_inputs_layer` over the concatenated token, pronunciation and
  glyph embeddings): (T × i)·(i × d) → 2·T·i·d FLOPs, as FlopCounterMode counts the addmm.

A model-level kind (`input_extras:` in a model file) counted with the encoder's input, as
Whisper's audio front end is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Optional

from ..declare import Min
from .base import ELEMENTWISE, EMBEDDING, FIRST, LAYERS, REPLICATED, WEIGHTS, Kind, Part, Span
from .registry import Entry


@dataclass(frozen=True)
class InputExtras(Kind):
    """Extra lookup tables ((rows, width) each) and an optional input projection i → d."""

    tables: tuple[tuple[int, int], ...] = ()
    project_in: Optional[int] = None
    project_bias: bool = True
    slot = "input_extras"

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = [Part(f"table{i}", rows * width, EMBEDDING, (rows, width), REPLICATED, FIRST,
                      lookup=True) for i, (rows, width) in enumerate(self.tables)]
        if self.project_in is not None:
            i = self.project_in
            parts.append(Part("project_in.weight", i * d, LAYERS, (i, d), REPLICATED, FIRST,
                              matmul=True, module="project_in"))
            if self.project_bias:
                parts.append(Part("project_in.bias", d, LAYERS, (d,), REPLICATED, FIRST,
                                  module="project_in"))
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        if self.project_in is None:
            return []
        # (T×i)·(i×d) → 2·T·i·d
        return [Part("project_in", 2 * x.batch * x.n * self.project_in * d, WEIGHTS,
                     weight_shape=(self.project_in, d))]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        if self.project_in is None or not self.project_bias:
            return []
        return [Part("elementwise.bias", x.batch * x.n * d, ELEMENTWISE)]

    def describe(self) -> str:
        bits = [f"{len(self.tables)} extra lookup table(s)"] if self.tables else []
        if self.project_in is not None:
            bits.append(f"input projection {self.project_in:,} → d")
        return "input extras: " + ", ".join(bits or ["none"])

    def notes(self) -> list[str]:
        lines = []
        if self.tables:
            shapes = ", ".join(f"{r:,}×{w:,}" for r, w in self.tables)
            lines.append(f"extra embedding tables ({shapes}): parameters read by lookup, no "
                         "matmul FLOPs")
        if self.project_in is not None:
            lines.append(f"input projection {self.project_in:,} → d on every token: "
                         f"2·{self.project_in:,}·d FLOPs per token")
        return lines


@dataclass(frozen=True)
class TableConfig:
    """One extra lookup table: `rows` × `width` parameters."""

    rows: Annotated[int, Min(1)]
    width: Annotated[int, Min(1)]


@dataclass(frozen=True)
class InputExtrasConfig:
    """`input_extras:` in a model file: extra embedding tables and an input projection of
    `project_in` inputs → d (with a bias when `project_bias`)."""

    tables: Optional[list[TableConfig]] = None
    project_in: Optional[Annotated[int, Min(1)]] = None
    project_bias: bool = True


def build(cfg: Any) -> Optional[InputExtras]:
    block = getattr(cfg, "input_extras", None)
    if block is None:
        return None
    tables = tuple((t.rows, t.width) for t in (block.tables or ()))
    return InputExtras(tables=tables, project_in=block.project_in,
                       project_bias=block.project_bias)


REGISTER = Entry(blocks=(("input_extras", InputExtrasConfig),), frontend=build)
