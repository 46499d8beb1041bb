"""How the image processors of transformers 5.24 turn one H x W image into what a vision tower
runs on (tiles of a fixed size, or one resized image) and how many tokens they write into the
text for it: pure integer and float arithmetic, as the processors compute it (Python's `round`
is banker's rounding, `int` truncates), because the choice of tiles and grids depends on it.

Each rule returns an `ImageLayout`: the `pieces` the tower runs (count, height, width in pixels;
each piece is one attention unit: a tile, or the resized image) and the `markers`: the special
tokens the processor writes around the image features besides the features themselves (the
features are counted by the tower, which knows its pooling). Text the tokenizer splits (newlines,
words) is not counted: it depends on the tokenizer.

Sources (paths under transformers/models/):
- fixed: the processor resizes (and crops) every image to the tower's `image_size`
  (llava `processing_llava.py`, paligemma, gemma3 `processing_gemma3.py`).
- qwen: `qwen2_vl/image_processing_qwen2_vl.py` `smart_resize`: each side rounded to a multiple
  of patch·merge, scaled into [min_pixels, max_pixels].
- pixtral: `pixtral/image_processing_pixtral.py` `get_resize_output_image_size`: scaled down to
  fit `longest_edge`, each side rounded up to a multiple of patch·merge; `processing_pixtral.py`
  ends each row of image tokens with `[IMG_BREAK]` (the last with `[IMG_END]`).
- tiles: `idefics3/image_processing_idefics3.py` (also SmolVLM's): longest edge resized to
  `longest_edge`, sides rounded up to multiples of the tile, rows x cols tiles + the whole image
  as one more; `processing_idefics3.py` writes `<fake_token_around_image><row_i_col_j>` before
  each tile and `<fake_token_around_image><global-img>` ... `<fake_token_around_image>`.
- internvl: `got_ocr2/image_processing_got_ocr2.py` (InternVL's processor): the grid of at most
  `max_tiles` tiles whose aspect ratio is closest to the image's, and a thumbnail when more than
  one tile.
- llama4: `llama4/image_processing_llama4.py` `find_supported_resolutions` / `get_best_fit`:
  canvases of a x b tiles, a·b <= max_tiles, the least upscaling (else the least downscaling),
  and a global tile when more than one; `processing_llama4.py` writes `<|image_start|>`,
  a tile separator after each tile, `<|image|>` and `<|image_end|>`.
"""

from __future__ import annotations

import math
import struct

from ..records import dataclass


@dataclass(frozen=True)
class ImageLayout:
    """What the tower runs for one image: `pieces` (count, height px, width px), and the special
    tokens the processor writes besides the image features (`markers`), with the rule in words."""

    pieces: tuple[tuple[int, int, int], ...]
    markers: int
    rule: str


def qwen_resize(h: int, w: int, factor: int, min_pixels: int, max_pixels: int
                ) -> tuple[int, int]:
    """`smart_resize` (qwen2_vl/image_processing_qwen2_vl.py): sides multiples of `factor`,
    the area within [min_pixels, max_pixels]."""
    if max(h, w) / min(h, w) > 200:
        raise ValueError(f"the image's aspect ratio {max(h, w) / min(h, w):g} is above 200, "
                         "which the Qwen2-VL processor refuses")
    hb, wb = round(h / factor) * factor, round(w / factor) * factor
    if hb * wb > max_pixels:
        beta = math.sqrt((h * w) / max_pixels)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb


def pixtral_resize(h: int, w: int, longest_edge: int, step: int) -> tuple[int, int]:
    """`get_resize_output_image_size` (pixtral/image_processing_pixtral.py): scaled down by
    max(H, W) / longest_edge when above it (floored), then each side rounded up to a multiple of
    `step` (patch x spatial merge)."""
    ratio = max(h / longest_edge, w / longest_edge)
    if ratio > 1:
        h, w = int(math.floor(h / ratio)), int(math.floor(w / ratio))
    return ((h - 1) // step + 1) * step, ((w - 1) // step + 1) * step


def _to_longest(h: int, w: int, longest: int) -> tuple[int, int]:
    """Idefics3's `_resize_output_size_rescale_to_max_len`: the longest side to `longest` (small
    images upscaled), the other by the aspect ratio, made even."""
    ratio = w / h
    if w >= h:
        w = longest
        h = int(w / ratio)
        h += h % 2
    else:
        h = longest
        w = int(h * ratio)
        w += w % 2
    return max(h, 1), max(w, 1)


def _below(h: int, w: int, limit: int = 4096) -> tuple[int, int]:
    """Idefics3's `_resize_output_size_scale_below_upper_bound`."""
    ratio = w / h
    if w >= h and w > limit:
        w, h = limit, int(limit / ratio)
    elif h > w and h > limit:
        h, w = limit, int(limit * ratio)
    return max(h, 1), max(w, 1)


def idefics3_tiles(h: int, w: int, longest_edge: int, tile: int) -> tuple[int, int]:
    """(rows, cols) of Idefics3 / SmolVLM tiles for an H x W image (0, 0: one tile, the image
    fits in one): `resize` to the longest edge, then `resize_for_vision_encoder` rounds each
    side up to a multiple of the tile (image_processing_idefics3.py)."""
    h, w = _below(*_to_longest(h, w, longest_edge))
    ratio = w / h
    if w >= h:
        w = math.ceil(w / tile) * tile
        h = math.ceil(int(w / ratio) / tile) * tile
    else:
        h = math.ceil(h / tile) * tile
        w = math.ceil(int(h * ratio) / tile) * tile
    if h > tile or w > tile:
        return math.ceil(h / tile), math.ceil(w / tile)
    return 0, 0


def internvl_grid(h: int, w: int, tile: int, min_tiles: int, max_tiles: int
                  ) -> tuple[int, int]:
    """(cols, rows) of the GotOcr2 / InternVL tiling: the grid of min..max tiles whose aspect
    ratio is closest to W/H; on a tie the later, larger grid while the image's area exceeds half
    the grid's (got_ocr2/image_processing_got_ocr2.py `get_optimal_tiled_canvas`)."""
    grids = sorted(((a, b) for a in range(1, max_tiles + 1) for b in range(1, max_tiles + 1)
                    if min_tiles <= a * b <= max_tiles), key=lambda g: g[0] * g[1])
    ratio, area = w / h, w * h
    best_diff, best = float("inf"), (1, 1)
    for g in grids:
        diff = abs(ratio - g[0] / g[1])
        if diff < best_diff:
            best_diff, best = diff, g
        elif diff == best_diff and area > 0.5 * tile * tile * g[0] * g[1]:
            best = g
    return best


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def llama4_canvas(h: int, w: int, tile: int, max_tiles: int) -> tuple[int, int]:
    """(rows, cols) of the Llama 4 canvas (llama4/image_processing_llama4.py): every a x b tiles
    with a·b <= max_tiles; the scale to fit each is computed in float32 as torch does; the least
    scale >= 1 wins (else the largest below 1), ties to the smallest area."""
    by_ratio: dict[float, list[tuple[int, int]]] = {}
    for c in range(max_tiles, 0, -1):
        for f in sorted(i for i in range(1, c + 1) if c % i == 0):
            by_ratio.setdefault(f / (c // f), []).append((f, c // f))
    canvases = [(a * tile, b * tile) for v in by_ratio.values() for a, b in v]
    scales = [min(_f32(ch / h), _f32(cw / w)) for ch, cw in canvases]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    fits = [c for c, s in zip(canvases, scales) if s == chosen]
    best = min(fits, key=lambda c: c[0] * c[1])
    return best[0] // tile, best[1] // tile
