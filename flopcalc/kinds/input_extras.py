"""What some encoders add to BERT's embedding before the first layer (transformers 5.24):

- `tables`: `count` lookup tables of `rows` × `width` parameters each, beside the token,
  position and token-type tables, read by a lookup only (no matmul FLOPs), or held and not
  read by the forward at all: LayoutLM's four 2-D position tables (x, y, h, w), RoCBERT's
  pronunciation and glyph tables, MarkupLM's XPath tag and subscript tables (one per depth),
  RoFormer's sinusoidal table (`max_position_embeddings` × d/heads, an `nn.Embedding` held
  frozen: a parameter), MPNet's relative-position bias (buckets × heads, computed once for
  every layer), ESM's contact-prediction regression (layers·heads + 1, not run by the
  masked-LM forward).
- `projections`: linear layers on every token, `inputs` → `outputs` (d when not given), with
  a bias when `bias`: RoCBERT's `map_inputs_layer` over the concatenated token, pronunciation
  and glyph embeddings, MarkupLM's XPath MLP (u·depth → 4d → d). Each costs
  (T × i)·(i × o) → 2·T·i·o FLOPs, as FlopCounterMode counts the addmm; one with
  `runs: false` is held but never called (MarkupLM's `xpath_unitseq2_embeddings`): its
  parameters only.

A model-level kind (`input_extras:` in a model file) counted with the encoder's input, as
Whisper's audio front end is; encoder-only models only.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import ELEMENTWISE, EMBEDDING, FIRST, LAYERS, REPLICATED, WEIGHTS, Kind, Part, Span
from .registry import Entry


@dataclass(frozen=True)
class InputExtras(Kind):
    """Extra lookup tables ((count, rows, width) each) and projections ((inputs, outputs or
    None for d, bias, runs) each) on every token."""

    tables: tuple[tuple[int, int, int], ...] = ()
    projections: tuple[tuple[int, Optional[int], bool, bool], ...] = ()
    slot = "input_extras"

    def params(self, d: int, active: bool = False) -> list[Part]:
        parts = []
        for i, (count, rows, width) in enumerate(self.tables):
            shape = ((count,) if count > 1 else ()) + (rows, width)
            parts.append(Part(f"table{i}", count * rows * width, EMBEDDING, shape, REPLICATED,
                              FIRST, lookup=True))
        for i, (n_in, n_out, bias, _) in enumerate(self.projections):
            o = n_out or d
            parts.append(Part(f"project{i}.weight", n_in * o, LAYERS, (n_in, o), REPLICATED,
                              FIRST, matmul=True, module=f"project{i}"))
            if bias:
                parts.append(Part(f"project{i}.bias", o, LAYERS, (o,), REPLICATED, FIRST,
                                  module=f"project{i}"))
        return parts

    def forward(self, d: int, x: Span) -> list[Part]:
        # (T×i)·(i×o) → 2·T·i·o for each projection the forward calls
        return [Part(f"project{i}", 2 * x.batch * x.n * n_in * (n_out or d), WEIGHTS,
                     weight_shape=(n_in, n_out or d))
                for i, (n_in, n_out, _, runs) in enumerate(self.projections) if runs]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        adds = sum(n_out or d for _, n_out, bias, runs in self.projections if bias and runs)
        return [Part("elementwise.bias", x.batch * x.n * adds, ELEMENTWISE)] if adds else []

    def describe(self) -> str:
        bits = [f"{sum(c for c, _, _ in self.tables)} extra table(s)"] if self.tables else []
        if self.projections:
            bits.append(f"{len(self.projections)} input projection(s)")
        return "input extras: " + ", ".join(bits or ["none"])

    def notes(self) -> list[str]:
        lines = []
        if self.tables:
            shapes = ", ".join(f"{c}×{r:,}×{w:,}" if c > 1 else f"{r:,}×{w:,}"
                               for c, r, w in self.tables)
            lines.append(f"extra embedding tables ({shapes}): parameters read by lookup (or "
                         "held unread), no matmul FLOPs")
        for n_in, n_out, _, runs in self.projections:
            out = f"{n_out:,}" if n_out else "d"
            lines.append(f"input projection {n_in:,} → {out}" + (
                f" on every token: 2·{n_in:,}·{out} FLOPs per token" if runs
                else ": held, not run by the forward"))
        return lines


@dataclass(frozen=True)
class TableConfig:
    """`count` extra lookup tables of `rows` × `width` parameters each."""

    rows: Annotated[int, Min(1)]
    width: Annotated[int, Min(1)]
    count: Annotated[int, Min(1)] = 1


@dataclass(frozen=True)
class ProjectionConfig:
    """A linear layer `inputs` → `outputs` (d when absent) on every token, with a bias when
    `bias`; `runs: false`: held by the model but not called by its forward."""

    inputs: Annotated[int, Min(1)]
    outputs: Optional[Annotated[int, Min(1)]] = None
    bias: bool = True
    runs: bool = True


@dataclass(frozen=True)
class InputExtrasConfig:
    """`input_extras:` in a model file: extra embedding tables and input projections."""

    tables: Optional[list[TableConfig]] = None
    projections: Optional[list[ProjectionConfig]] = None


def build(cfg: Any) -> Optional[InputExtras]:
    block = getattr(cfg, "input_extras", None)
    if block is None:
        return None
    return InputExtras(
        tables=tuple((t.count, t.rows, t.width) for t in (block.tables or ())),
        projections=tuple((p.inputs, p.outputs, p.bias, p.runs)
                          for p in (block.projections or ())))


REGISTER = Entry(blocks=(("input_extras", InputExtrasConfig),), frontend=build)
