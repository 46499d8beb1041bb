"""FNet's Fourier token mixing (Lee-Thorp et al. 2022, "FNet: Mixing Tokens with Fourier
Transforms", NAACL; transformers 5.24 `models/fnet/modeling_fnet.py` FNetBasicFourierTransform):
the real part of a 2-D discrete Fourier transform over the sequence and hidden dimensions,
`torch.fft.fftn(x, dim=(1, 2)).real`, in place of attention; the layer's LayerNorm and MLP
follow as BERT's (post-norm).

It has no parameters and no matmul: PyTorch's FlopCounterMode counts no FLOPs for an FFT (its
table has matmuls, convolutions and attention only), so the forward counts none, as that count
does. The transform's own arithmetic (about 5·n·log2(n) real operations per complex FFT of n
points, for n = s·d per sequence) is left out of every figure and said so in the notes. The
TPU path (`use_tpu_fourier_optimizations`: DFT matrices multiplied in) is another computation,
refused by the importer.
"""

from __future__ import annotations

from typing import Any

from ..records import dataclass
from .base import Kind
from .registry import Entry


@dataclass(frozen=True)
class FourierMixing(Kind):
    """FNet's token mixer: Re(FFT₂(x)) over sequence and hidden dimensions; no parameters, no
    matmul FLOPs."""

    slot = "fourier"
    bidirectional = True  # every output position reads every input position

    def describe(self) -> str:
        return "Fourier mixing (FNet)"

    def notes(self) -> list[str]:
        return ["Fourier mixing (FNet): Re(FFT over sequence × hidden) in place of attention; "
                "no parameters, and its FFT arithmetic (~5·n·log2 n per complex FFT, n = s·d) "
                "is not counted, as FlopCounterMode counts no FFT"]


def build(cfg: Any, name: str) -> FourierMixing:
    return FourierMixing()


REGISTER = Entry(layer_types=("fourier",), build=build)
