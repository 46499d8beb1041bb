"""Normalisation: LayerNorm (a gain and, unless `bias` is false, a bias), RMSNorm (a gain), either
without parameters (`affine` false: OLMo's LayerNorm, `F.layer_norm` with no weight), or
none. Norms hold a vector per normalised width, replicated under tensor parallelism; their work
is element-wise (counted only with --elementwise)."""

from __future__ import annotations


from ..records import dataclass
from .base import LAYERS, REPLICATED, Part



@dataclass(frozen=True)
class Norm:
    """A norm's form (`layernorm`, `rmsnorm` or `none`), its bias and whether it is affine."""

    form: str
    bias: bool = True
    affine: bool = True  # false: no gain and no bias

    @property
    def present(self) -> bool:
        return self.form != "none"

    def params(self, width: int, name: str, family: str = LAYERS, stage: str = "layers"
               ) -> list[Part]:
        """The norm's tensors over `width` features: gain (+ bias), or nothing; `family` is
        their parts' family (LAYERS, NORMS, HEAD)."""
        if not self.present or not self.affine:
            return []
        parts = [Part(f"{name}.weight", width, family, (width,), REPLICATED, stage, module=name)]
        if self.form == "layernorm" and self.bias:
            parts.append(Part(f"{name}.bias", width, family, (width,), REPLICATED, stage,
                              module=name))
        return parts

    @property
    def per_element(self) -> int:
        """Element-wise FLOPs per normalised element. LayerNorm: mean (1 add), subtract (1),
        square (1), variance sum (1), normalise (1 multiply by 1/σ), gain (1), bias (1) → 7, or
        6 without the bias, 5 without gain or bias; RMSNorm drops the mean, subtract and bias → 4
        (3 without its gain)."""
        if self.form == "layernorm":
            return 5 if not self.affine else 7 if self.bias else 6
        return (4 if self.affine else 3) if self.form == "rmsnorm" else 0


RMS = Norm("rmsnorm")
