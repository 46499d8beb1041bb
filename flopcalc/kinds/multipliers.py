"""Scalar multipliers (µP and its relatives): fixed numbers a model multiplies some activations
by, which hold no parameters and cost one multiply per element of what they scale. They count
only under --elementwise.

Falcon-H1 (transformers 5.24 `models/falcon_h1/modeling_falcon_h1.py`): the token embeddings
× `embedding_multiplier`, the logits × `lm_head_multiplier`; in every layer the attention input
× `attention_in_multiplier`, its keys × `key_multiplier` and its output ×
`attention_out_multiplier`; the Mamba-2 input × `ssm_in_multiplier`, its in_proj output × the
`mup_vector` buffer (one factor per channel, built from `ssm_multipliers`) and its output ×
`ssm_out_multiplier`; the MLP's gate projection × `mlp_multipliers[0]` and its output ×
`mlp_multipliers[1]`. Granite 4.0-H (`models/granitemoehybrid/modeling_granitemoehybrid.py`): the
embeddings × `embedding_multiplier`, the logits ÷ `logits_scaling`, and every sublayer's output ×
`residual_multiplier` before its residual add (`attention_multiplier` replaces the 1/√d_h
scaling of the scores, which the softmax's 5 per score already counts).

A model file names which multiplies happen, not their values (the counts do not depend on
them): `multipliers: {embedding: true, logits: true, attention: [input, key, output], mamba2:
[input, projection, output], mlp: [gate, output]}`. The kinds read their lists when they are
built; `mlp: [output]` also scales a mixture of experts' output.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from ..records import dataclass
from .registry import Entry

AttentionScale = Literal["input", "key", "output"]
Mamba2Scale = Literal["input", "projection", "output"]
MlpScale = Literal["gate", "output"]


@dataclass(frozen=True)
class MultipliersConfig:
    """`multipliers:` in a model file: where the model multiplies by a scalar."""

    embedding: bool = False  # the token embeddings (T·d)
    logits: bool = False  # the logits (T·V)
    # input (T·d), keys (T·h_kv·d_qk), output (T·d)
    attention: list[AttentionScale] = field(default_factory=list)
    # input (T·d), the in_proj output (T·(2E + 2GN + H)), output (T·d)
    mamba2: list[Mamba2Scale] = field(default_factory=list)
    # the gate projection (T·f), output (T·d; a mixture of experts' summed output too)
    mlp: list[MlpScale] = field(default_factory=list)


def scales(cfg: Any, kind: str) -> tuple[str, ...]:
    """The multiplies a kind of sublayer applies (`attention`, `mamba2`, `mlp`), in the order
    declared, for a config with or without a `multipliers` block."""
    block = getattr(cfg, "multipliers", None)
    if block is None:
        return ()
    return tuple(dict.fromkeys(getattr(block, kind)))


def model_scales(cfg: Any) -> tuple[str, ...]:
    """The model-level multiplies: `embedding`, `logits`."""
    block = getattr(cfg, "multipliers", None)
    if block is None:
        return ()
    return tuple(name for name in ("embedding", "logits") if getattr(block, name))


REGISTER = Entry(blocks=(("multipliers", MultipliersConfig),))
