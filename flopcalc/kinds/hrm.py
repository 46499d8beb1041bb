"""The Hierarchical Reasoning Model's text model (Wang et al. 2025, "Hierarchical Reasoning
Model", arXiv:2506.21734; transformers 5.24 `models/hrm_text/modeling_hrm_text.py`): two
weight-shared stacks, L and H, of num_layers_per_stack layers each, run in nested cycles (each
of H_cycles runs the L stack L_cycles times, then the H stack once), every run its own
`layer_weights` entry of the stack's weights.

The low stack starts from `z_L_init`, a d-wide parameter (held frozen, requires_grad false, and
counted as transformers counts it), added to the stack's input by an element-wise add only: it
is counted with the L stack's first layer, type `hrm_first` (otherwise the `full` layer: gated
softmax attention, `Attention.gate`). Everything else is a kind flopcalc has."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..records import dataclass
from .attention import Attention
from .base import LAYERS, REPLICATED, Part
from .registry import Entry


@dataclass(frozen=True)
class HrmFirstAttention(Attention):
    """The L stack's first layer's attention, holding the model's `z_L_init` (d)."""

    def params(self, d: int, active: bool = False) -> list[Part]:
        return super().params(d, active) + [
            Part("z_L_init", d, LAYERS, (d,), REPLICATED, module="z_L_init")]

    def notes(self) -> list[str]:
        return super().notes() + [  # type: ignore[misc]
            "HRM's z_L_init (d, the low stack's initial state) is held with the L stack's "
            "first layer; it is added to the stack's input, element-wise"]


def build(cfg: Any, name: str) -> HrmFirstAttention:
    """The causal, gated attention of the `full` layers, with z_L_init."""
    from .attention_layers import build as attention

    made = attention(cfg, "full")
    return HrmFirstAttention(**{f.name: getattr(made, f.name)
                                for f in dataclasses.fields(made)})


REGISTER = Entry(layer_types=("hrm_first",), build=build)
