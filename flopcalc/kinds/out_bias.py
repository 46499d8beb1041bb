"""`full_out_bias`: causal softmax attention whose output projection carries a bias where the
model's other attention layers have none (GPT-NeoX-Japanese: transformers 5.24
`models/gpt_neox_japanese/modeling_gpt_neox_japanese.py` gives only the last layer's attention
a `dense_bias` of d, added to its output before the residual). The same kind as `full`
(`kinds.attention.Attention`) with `out_bias` set: d more parameters and, counted element-wise,
one add per output element; no matmul more.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import attention_layers
from .attention import Attention
from .registry import Entry


def build(cfg: Any, name: str) -> Attention:
    return dataclasses.replace(attention_layers.build(cfg, "full"), out_bias=True)


REGISTER = Entry(layer_types=("full_out_bias",), build=build)
