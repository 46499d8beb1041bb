"""Whisper's audio front end (Radford et al. 2022, "Robust Speech Recognition via Large-Scale Weak
Supervision", §2.2; transformers 5.24 `models/whisper/modeling_whisper.py` WhisperEncoder): two
Conv1d layers over the log-mel spectrogram, each followed by GELU, before the encoder's
positions are added:

- conv1: `mel_bins` → d channels, kernel 3, padding 1: the 2·s input frames stay 2·s;
- conv2: d → d, kernel 3, stride 2, padding 1: 2·s frames become s = ⌊(2s + 2 − 3)/2⌋ + 1
  encoder positions.

`--seq` counts the encoder's positions s (after the stride), as it counts an encoder's tokens
elsewhere; the input is 2·s mel frames (100 frames a second at 16 kHz with a 160-sample hop, so
50 positions a second). transformers' encoder accepts only 2·max_source_positions frames (3,000:
30 seconds; its feature extractor pads every clip to that), so a Hugging Face forward always
runs s = max_source_positions, the default `--seq` of an imported Whisper config.

FLOPs (what FlopCounterMode counts for a convolution: 2 per multiply-add over every output
element): conv1 2·B·(2s)·d·(m·3), (B·2s×3m)·(3m×d); conv2 2·B·s·d·(d·3), (B·s×3d)·(3d×d).
Parameters: the two kernels (d·m·3, d·d·3) and their biases (d each).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..records import dataclass
from ..declare import Min
from .base import ELEMENTWISE, FIRST, LAYERS, REPLICATED, WEIGHTS, Kind, Part, Span
from .mlp import ACTIVATION_FLOPS
from .registry import Entry

KERNEL = 3  # both convolutions (WhisperEncoder: kernel_size=3)


@dataclass(frozen=True)
class WhisperConvs(Kind):
    """conv1 (`mel_bins` → d, kernel 3) and conv2 (d → d, kernel 3, stride 2), with biases."""

    mel_bins: int
    slot = "frontend"

    def params(self, d: int, active: bool = False) -> list[Part]:
        m, k = self.mel_bins, KERNEL
        return [Part("conv1.weight", d * m * k, LAYERS, (d, m, k), REPLICATED, FIRST,
                     matmul=True, module="conv1"),
                Part("conv1.bias", d, LAYERS, (d,), REPLICATED, FIRST, module="conv1"),
                Part("conv2.weight", d * d * k, LAYERS, (d, d, k), REPLICATED, FIRST,
                     matmul=True, module="conv2"),
                Part("conv2.bias", d, LAYERS, (d,), REPLICATED, FIRST, module="conv2")]

    def forward(self, d: int, x: Span) -> list[Part]:
        frames = 2 * x.n  # mel frames in; conv1 keeps them, conv2 halves them to x.n
        return [Part("conv1", 2 * x.batch * frames * d * self.mel_bins * KERNEL, WEIGHTS),
                Part("conv2", 2 * x.batch * x.n * d * d * KERNEL, WEIGHTS)]

    def elementwise(self, d: int, x: Span) -> list[Part]:
        """Each convolution's bias add (1) and GELU (9) per output element: 2s·d for conv1, s·d
        for conv2, per sequence."""
        outputs = x.batch * (2 * x.n + x.n) * d
        return [Part("elementwise.bias", outputs, ELEMENTWISE),
                Part("elementwise.activation", ACTIVATION_FLOPS["gelu"] * outputs, ELEMENTWISE)]

    def describe(self) -> str:
        return f"audio front end: 2 convolutions over {self.mel_bins} mel bins"

    def notes(self) -> list[str]:
        return ["Whisper audio front end: --seq is the encoder's positions after the stride-2 "
                "convolution, the input 2·seq mel frames (transformers' encoder takes exactly "
                "2·max_source_positions = 30 s); conv1 2·3·m·d FLOPs per mel frame, conv2 "
                "2·3·d² per position"]


@dataclass(frozen=True)
class AudioFrontendConfig:
    """`audio_frontend:` in a model file: Whisper's two convolutions over `mel_bins` channels
    (`num_mel_bins`)."""

    mel_bins: Annotated[int, Min(1)]


def build(cfg: Any) -> Optional[WhisperConvs]:
    block = getattr(cfg, "audio_frontend", None)
    return None if block is None else WhisperConvs(mel_bins=block.mel_bins)


REGISTER = Entry(blocks=(("audio_frontend", AudioFrontendConfig),), frontend=build)
