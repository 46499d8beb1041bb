"""What `--images N --image-size HxW` adds to the `model`, `infer` and `train` reports: the images'
placement in the text model's sequence (`counting.images`), as a report record and as
conventions lines."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from ..records import dataclass
from ..counting.images import Placement, parse_size, with_images
from ..counting.workload import Workload
from ..errors import FlopcalcError
from ..kinds import base as p
from ..models.spec import ModelSpec


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class ImagesInfo:
    """Images per sequence through one vision tower: per image `image_tokens` (the tower's
    features after its projector) and `special_tokens` (the processor's markers around them),
    `tokens` added per sequence, on top of `text_tokens`."""

    tower: str
    images: int
    height: int
    width: int
    tiles: int  # per image
    image_tokens: int  # per image
    special_tokens: int  # per image
    tokens: int  # per sequence
    text_tokens: int  # per sequence, as given
    rule: str


def place(spec: ModelSpec, w: Workload, images: Optional[int], size: Optional[str]
          ) -> tuple[Workload, list[ImagesInfo]]:
    """`w` with the images in it, and their records; FlopcalcError for what cannot run."""
    if size is not None and not images:
        raise FlopcalcError("--image-size goes with --images N (images per sequence)")
    try:
        hw = parse_size(size)
        grown, placed = with_images(spec, w, images or 0, hw)
    except ValueError as exc:
        raise FlopcalcError(str(exc)) from None
    return grown, [_info(x, w.seq) for x in placed]


def _info(x: Placement, text: int) -> ImagesInfo:
    return ImagesInfo(x.tower, x.images, x.size[0], x.size[1], x.pieces, x.features, x.markers,
                      x.tokens, text, x.rule)


def image_lines(spec: ModelSpec, infos: list[ImagesInfo]) -> list[str]:
    """The conventions lines: the images' tokens and rule, or that the towers did not run."""
    if not spec.towers:
        return []
    if not infos:
        params = sum(p.total(t.params(spec.d_model)) for t in spec.towers)
        return [f"no images: the vision tower and projector ({params:,} params) are in "
                "params.total, their FLOPs are not in the forward; --images N [--image-size HxW] "
                "adds them and the image tokens"]
    lines = []
    for i in infos:
        tiles = f"{i.tiles:,} tile{'s' if i.tiles != 1 else ''}"
        lines.append(
            f"images: {i.images:,} of {i.height}x{i.width} per sequence through the {i.tower}: "
            f"{i.rule}; per image {tiles}, {i.image_tokens:,} image tokens + "
            f"{i.special_tokens:,} special tokens; {i.tokens:,} tokens join the "
            f"{i.text_tokens:,} text tokens and the text model is counted at their sum (text "
            "the tokenizer splits, such as newlines around images, not added)")
    return lines


def prefill_flops(spec: ModelSpec, prompt: int, batch: int, attention: p.Convention,
                  infos: list[ImagesInfo], scan: p.Scan = "chunked") -> list[p.Part]:
    """The prefill over `prompt` tokens (image tokens included), with the towers on the images
    of every sequence, chunked scans counted under `scan`."""
    from dataclasses import replace

    from ..counting.model import model_flops, workload

    w = workload(spec, prompt, None, batch, attention, scan)
    if infos:
        w = replace(w, images=infos[0].images, image_size=(infos[0].height, infos[0].width))
    return model_flops(spec, w)


def tower_bytes(spec: ModelSpec, dtype: Any) -> Fraction:
    """Bytes of the towers' weights, which a prefill over images reads once (`dtype`: a name,
    or a storage plan)."""
    from ..counting.model import tower_params
    from ..models.quantization import Plan

    if isinstance(dtype, Plan):
        from ..counting.storage import stored

        return sum((s.bytes for s in stored(spec, dtype) if s.unit == "tower"), Fraction(0))
    from ..counting.quant import weight_bytes
    from ..counting.traffic import storage_bytes
    from ..tables import SCALED_FORMATS

    parts = tower_params(spec)
    return weight_bytes(parts, dtype) if dtype in SCALED_FORMATS else storage_bytes(
        p.total(parts), dtype)
