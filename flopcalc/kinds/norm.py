"""Normalisation: LayerNorm (a gain and, unless `bias` is false, a bias), RMSNorm (a gain), either
without parameters (`affine` false: OLMo's LayerNorm, `F.layer_norm` with no weight), or
none. Norms hold a vector per normalised width, replicated under tensor parallelism; their work
is element-wise (counted only with --elementwise)."""

from __future__ import annotations

from typing import Any

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


def model_norm(cfg: Any) -> Norm:
    """The model's norm, as a config's `norm`, `norm_bias` and `norm_affine` say: LayerNorm
    (with a bias unless norm_bias is false), RMSNorm or none; without any parameters when
    norm_affine is false."""
    if cfg.norm != "layernorm" and cfg.norm_bias is False:
        raise ValueError("norm_bias applies to norm: layernorm only")
    if cfg.norm == "none" and not cfg.norm_affine:
        raise ValueError("norm_affine applies to norm: layernorm or rmsnorm only")
    affine = cfg.norm_affine
    return Norm(cfg.norm, cfg.norm_bias and affine if cfg.norm == "layernorm" else False, affine)
