"""Kinds of layer part: each module is one kind (attention, latent attention, an MLP, a mixture
of experts, ...) answering every question the tool asks of it through `base.Kind`.

The public seam for a kind defined outside this package (a plug-in, a test's toy kind):
subclass `Kind` as a frozen dataclass, declare its config block as a dataclass (see
`flopcalc.declare`), and `register(Entry(layer_types=("name",), build=..., blocks=(("name",
Config),)))`. docs/layer-kinds.md, "Adding a kind of layer", walks through it.
"""

from .base import (ATTENTION, COLUMN, ELEMENTWISE, EXPERT, LAYERS, REPLICATED, ROW, SCAN, VOCAB,
                   WEIGHTS, Cache, Kind, Part, Published, Span, State, linear)
from .registry import Entry, register, unregister

__all__ = ["ATTENTION", "COLUMN", "ELEMENTWISE", "EXPERT", "LAYERS", "REPLICATED", "ROW", "SCAN",
           "VOCAB", "WEIGHTS", "Cache", "Kind", "Part", "Published", "Span", "State", "linear",
           "Entry", "register", "unregister"]
