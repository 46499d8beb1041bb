"""Images in a forward pass: how many tokens a model's vision towers put into the text model's
sequence for `--images N` of `--image-size HxW`, and the workload that carries them.

The text model then runs at seq = text tokens + image tokens (what the processor writes: the
image features the projector outputs and its special tokens around them; `kinds.vision`,
`kinds.image_processors`), and each tower runs on every image of the pass first
(`model.model_flops`). Measured against FlopCounterMode, a forward with images minus the same
input ids without them is exactly the towers and projectors (transformers 5.24;
tests/pytorch/test_vision.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..records import dataclass
from ..models.spec import ModelSpec
from .workload import Workload


@dataclass(frozen=True)
class Placement:
    """Where `images` images per sequence go: per image `features` tokens from the tower and
    `markers` special tokens around them, `tokens` in all per sequence; `size` the image
    (height, width) as given, `rule` how the processor treats it."""

    tower: str
    images: int
    size: tuple[int, int]
    features: int
    markers: int
    tokens: int
    pieces: int  # tiles (or resized images) the tower runs per image
    rule: str


def parse_size(text: Optional[str]) -> Optional[tuple[int, int]]:
    """`--image-size HxW` (or one number for a square) as (height, width)."""
    if text is None:
        return None
    parts = str(text).lower().replace("×", "x").split("x")
    if len(parts) == 1:
        parts = parts * 2
    try:
        h, w = (int(p.strip()) for p in parts)
    except ValueError:  # not integers, or not two of them
        h = w = 0
    if h < 1 or w < 1 or max(h, w) > 1_000_000:
        raise ValueError(f"--image-size must be HEIGHTxWIDTH in pixels (e.g. 448x448, or 448), "
                         f"got {text!r}")
    return h, w


def placements(spec: ModelSpec, images: int, size: Optional[tuple[int, int]]
               ) -> list[Placement]:
    """The placement of `images` images per sequence in each vision tower (empty without)."""
    if not images:
        return []
    if not spec.towers:
        raise ValueError("--images: this model has no vision tower (a multimodal Hugging Face "
                         "config.json names one in vision_config)")
    out = []
    for tower in spec.towers:
        hw = size or tower.default_size()
        if hw is None:
            raise ValueError(f"--images: give --image-size HxW: the {tower.label()} has no "
                             "fixed image size")
        f = tower.features(*hw, spec.d_model)
        per = f.tokens + f.markers
        out.append(Placement(tower.label(), images, hw, f.tokens, f.markers, images * per,
                             sum(n for n, _, _ in f.layout.pieces), f.layout.rule))
    return out


def with_images(spec: ModelSpec, w: Workload, images: int, size: Optional[tuple[int, int]]
                ) -> tuple[Workload, list[Placement]]:
    """`w` with the images: its text length grown by their tokens and the towers to run."""
    placed = placements(spec, images, size)
    if not placed:
        return w, []
    added = sum(p.tokens for p in placed)
    hw = placed[0].size
    return replace(w, seq=w.seq + added, tgt_seq=w.tgt_seq + added, images=images,
                   image_size=hw), placed
