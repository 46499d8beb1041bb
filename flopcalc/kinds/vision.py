"""Vision towers: the image encoder of a multimodal model and the projector that feeds its output
into the text model, counted as a stack of their own (`vision.*` parts), with the image tokens
they put into the text model's sequence.

One declaration covers the towers of transformers 5.24's vision-language models
(docs/multimodal.md; the converters in `models/hf/multimodal.py` fill it from a config.json):

- the patch embedding: a convolution with kernel = stride = `patch` over `channels` (and
  `temporal_patch` frames: Qwen2-VL's Conv3d sees each image twice), FLOPs 2·N·(C·kt·p²)·d for N
  patches, (N×C·kt·p²)·(C·kt·p²×d), its bias not counted (as FlopCounterMode counts a conv);
- a class token (`cls_token`: CLIP, Llama 4, InternVL), a learned position table of N (+1) rows
  for the `image_size` it was trained at (`position_table`; none where the positions are rotary:
  Pixtral, Qwen2-VL), norms before and after the layers (`pre_norm`, `post_norm`);
- `n_layers` bidirectional layers of width d with q, k, v, o (biases `qkv_bias`, `out_bias`), an
  MLP of `d_ff` (`plain`: fc1, fc2; `gated`: gate, up, down; biases `mlp_bias`), two norms,
  InternVL's QK-norm over the full width and layer scales: per layer and attention unit of T
  tokens 2·T·d·3d + 2·T·d² (q, k, v, o), 4·T·d·I plain or 6·T·d·I gated, and 4·T²·d for the
  score and value matmuls (T×hd)·(hd×T), (T×T)·(T×hd) over the heads;
- what the layers attend over (`attention`): each image or tile alone (`image`); every image of
  the forward pass in one sequence with a block-diagonal mask (`batch`: Pixtral, so its s² term
  is over all the images together, `pixtral/modeling_pixtral.py` PixtralTransformer);
  Qwen2.5-VL's windows of `window` pixels, except the `full_blocks` (`window`;
  `qwen2_5_vl/modeling_qwen2_5_vl.py` `get_window_index`: windows of window/merge/patch merged
  tokens tiled over the merged grid, the last row and column partial, so one image costs
  m⁴·(Σ aᵢ²)(Σ bⱼ²) pairs in a window layer);
- SigLIP's attention-pooling head (`head`: a probe query over the N patches, packed K/V
  2·N·d·2d, the probe's q 2·d², scores and values 4·N·d, out 2·d², an MLP on one token 4·d·I;
  `siglip/modeling_siglip.py` SiglipMultiheadAttentionPoolingHead), which transformers runs even
  where nothing reads it;
- the `projector`: steps applied to each tile's features in order, `norm` (no FLOPs to
  FlopCounterMode), `shuffle` by s (pixel shuffle or patch merging: s² neighbouring tokens
  concatenated, tokens / s², width · s², no FLOPs), `pool` to M tokens (Gemma 3's average
  pooling: no FLOPs) and `linear` to `out` (2·tokens·in·out); the class token dropped first
  when `drop_first` (llava's `default` feature strategy drops the first token: CLIP's class
  token, or a SigLIP tower's first patch), the outputs of `feature_layers` layers concatenated
  (llava's list of vision_feature_layer);
- Qwen3-VL's deepstack mergers (`deepstack`: the layers whose outputs each feed one more
  projector, `deepstack_projector`, its output added to the text model's hidden states at the
  image tokens of its first layers, which adds no token and no FLOP to FlopCounterMode): each
  merger's parameters counted once per entry of the list, its linears run once per distinct
  index of a block the tower has, 0 to `n_layers` − 1 (`qwen3_vl/modeling_qwen3_vl.py`
  Qwen3VLVisionModel.forward: `if layer_num in deepstack_visual_indexes`, the first merger of
  a repeated index);
- a learned position table of `positions` rows resampled to each image's grid (Qwen3-VL's
  `num_position_embeddings`, bilinear: a weighted sum of 4 rows, no matmul), where the table is
  not one row per patch of `image_size`.

The tokens it adds to the text: each tile's features after the projector, and the processor's
special tokens around them (`processor`, `markers`; see `kinds.image_processors`). Parameters:
every tensor above; the position table is an embedding (looked up, outside N of 6ND), the rest
layer weights. Element-wise work of the tower (norms, activations, softmax) is not counted, even
with --elementwise.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Optional

from ..records import dataclass
from ..declare import Min
from . import image_processors as proc
from .base import (ATTENTION, COLUMN, EMBEDDING, FIRST, LAYERS, REPLICATED, ROW, WEIGHTS, Kind,
                   Part)
from .registry import Entry

Positive = Annotated[int, Min(1)]
Count = Annotated[int, Min(0)]

# Processor settings of the published checkpoints where the config.json does not carry them
# (their preprocessor_config.json): Qwen2-VL / Qwen2.5-VL min_pixels 3136, max_pixels 12845056
# (Qwen/Qwen2.5-VL-7B-Instruct); InternVL3-hf 1..12 tiles of 448 with a thumbnail; Llama 4 at
# most 16 tiles (max_patches); Idefics3 / SmolVLM the longest edge 4 tiles (Idefics3ImageProcessor
# size 4·364); Pixtral the tower's image_size (PixtralVisionConfig: the largest image side).
QWEN_MIN_PIXELS, QWEN_MAX_PIXELS = 56 * 56, 12_845_056
INTERNVL_MAX_TILES, LLAMA4_MAX_TILES, IDEFICS3_EDGE_TILES = 12, 16, 4


@dataclass(frozen=True)
class ProjectorStep:
    """One step between the tower's last layer and the text model: `linear` to `out` (with a
    bias if `bias`; `input` only where a config's input width is not the width reaching it, a
    model that builds but cannot run), `norm` (a LayerNorm or RMSNorm over the width reaching
    it), `shuffle` (s = `factor`: s x s neighbouring tokens concatenated) or `pool` (average
    pooling to `tokens` tokens per tile)."""

    op: Literal["linear", "norm", "shuffle", "pool"]
    out: Optional[Positive] = None
    input: Optional[Positive] = None
    bias: bool = False
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    factor: Optional[Positive] = None
    tokens: Optional[Positive] = None


@dataclass(frozen=True)
class VisionConfig:
    """`vision:` in a model file: the image encoder, its projector and the image processor's
    rule (see the module docstring)."""

    d_model: Positive
    n_layers: Positive
    n_heads: Positive
    d_ff: Positive
    patch: Positive
    image_size: Optional[Positive] = None  # trained image (tile) side; sizes the position table
    channels: Positive = 3
    temporal_patch: Positive = 1
    mlp: Literal["plain", "gated"] = "plain"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    qkv_bias: bool = True
    out_bias: bool = True
    mlp_bias: bool = True
    qk_norm: bool = False
    layer_scale: bool = False
    patch_bias: bool = False
    cls_token: bool = False
    drop_first: bool = False  # the first output token (a class token) not passed on
    mask_token: bool = False
    position_table: bool = True
    pre_norm: Optional[Literal["layernorm", "rmsnorm"]] = None
    post_norm: Optional[Literal["layernorm", "rmsnorm"]] = None
    feature_layers: Positive = 1  # layers whose outputs are concatenated for the projector
    head: bool = False
    attention: Literal["image", "batch", "window"] = "image"
    window: Optional[Positive] = None
    full_blocks: Optional[list[Count]] = None
    merge: Positive = 1
    projector: Optional[list[ProjectorStep]] = None
    deepstack: Optional[list[int]] = None  # layers feeding a deepstack merger each
    deepstack_projector: Optional[list[ProjectorStep]] = None
    positions: Optional[Positive] = None  # rows of a resampled position table (Qwen3-VL)
    processor: Literal["fixed", "qwen", "pixtral", "tiles", "internvl", "llama4"] = "fixed"
    markers: Count = 0
    min_pixels: Optional[Positive] = None
    max_pixels: Optional[Positive] = None
    longest_edge: Optional[Positive] = None
    min_tiles: Positive = 1
    max_tiles: Optional[Positive] = None
    thumbnail: bool = True
    name: str = ""


@dataclass(frozen=True)
class Features:
    """What one image becomes: the tower's pieces and, per piece, the tokens reaching the text."""

    layout: proc.ImageLayout
    per_piece: tuple[int, ...]

    @property
    def tokens(self) -> int:
        """Image features placed in the text for one image."""
        return sum(n * t for (n, _, _), t in zip(self.layout.pieces, self.per_piece))

    @property
    def markers(self) -> int:
        return self.layout.markers


def _norm(form: str, width: int, name: str) -> list[Part]:
    parts = [Part(f"{name}.weight", width, LAYERS, (width,), REPLICATED, FIRST, module=name)]
    if form == "layernorm":
        parts.append(Part(f"{name}.bias", width, LAYERS, (width,), REPLICATED, FIRST,
                          module=name))
    return parts


def _linear(name: str, n_in: int, n_out: int, bias: bool, role: str) -> list[Part]:
    parts = [Part(f"{name}.weight", n_in * n_out, LAYERS, (n_in, n_out), role, FIRST,
                  matmul=True, module=name)]
    if bias:
        parts.append(Part(f"{name}.bias", n_out, LAYERS, (n_out,),
                          COLUMN if role == COLUMN else REPLICATED, FIRST, module=name))
    return parts


def _steps(steps: Optional[list[ProjectorStep]], width: int, prefix: str) -> list[Part]:
    """The tensors of a projector's steps, the first reading `width`-wide features."""
    parts: list[Part] = []
    for n, step in enumerate(steps or ()):
        name = f"{prefix}.{n}"
        if step.op == "linear":
            assert step.out is not None  # build() checked it
            parts += _linear(name, step.input or width, step.out, step.bias, COLUMN)
            width = step.out
        elif step.op == "norm":
            parts += _norm(step.norm, width, name)
        elif step.op == "shuffle":
            assert step.factor is not None
            width *= step.factor ** 2
    return parts


@dataclass(frozen=True)
class VisionTower(Kind):
    """An image encoder and its projector (see `VisionConfig`)."""

    c: VisionConfig
    slot = "vision"

    # ------------------------------------------------------------------------- parameters

    @property
    def patches(self) -> int:
        """Patches of a trained image: the position table's rows without the class token."""
        if self.c.positions is not None:
            return self.c.positions
        s = self.c.image_size or 0
        return (s // self.c.patch) ** 2

    @property
    def deepstack_runs(self) -> int:
        """Deepstack mergers a forward runs: one per distinct layer index the tower has."""
        # a negative index or one past the last block matches no block: built, never run
        return len({i for i in self.c.deepstack or () if 0 <= i < self.c.n_layers})

    def layer_params(self) -> list[Part]:
        """One encoder layer's tensors."""
        c, d, i = self.c, self.c.d_model, self.c.d_ff
        parts: list[Part] = []
        for name in ("q", "k", "v"):
            parts += _linear(f"attn.{name}", d, d, c.qkv_bias, COLUMN)
        parts += _linear("attn.o", d, d, c.out_bias, ROW)
        if c.qk_norm:  # InternVL: an RMSNorm over all heads' q and k
            parts += _norm("rmsnorm", d, "attn.q_norm") + _norm("rmsnorm", d, "attn.k_norm")
        if c.mlp == "gated":
            parts += _linear("mlp.gate", d, i, c.mlp_bias, COLUMN)
        parts += _linear("mlp.up", d, i, c.mlp_bias, COLUMN)
        parts += _linear("mlp.down", i, d, c.mlp_bias, ROW)
        parts += _norm(c.norm, d, "attn_norm") + _norm(c.norm, d, "mlp_norm")
        if c.layer_scale:  # InternVL's lambda_1, lambda_2
            parts += [Part("layer_scale", 2 * d, LAYERS, (2, d), REPLICATED, FIRST)]
        return parts

    def params(self, d: int, active: bool = False) -> list[Part]:
        c, w = self.c, self.c.d_model
        k = c.channels * c.temporal_patch * c.patch * c.patch
        parts = [Part("patch_embed.weight", k * w, LAYERS, (w, k), REPLICATED, FIRST,
                      matmul=True, module="patch_embed")]
        if c.patch_bias:
            parts.append(Part("patch_embed.bias", w, LAYERS, (w,), REPLICATED, FIRST,
                              module="patch_embed"))
        if c.cls_token:
            parts.append(Part("cls_token", w, LAYERS, (w,), REPLICATED, FIRST))
        if c.mask_token:  # InternVL's, never used by the forward
            parts.append(Part("mask_token", w, LAYERS, (w,), REPLICATED, FIRST))
        if c.position_table:
            rows = self.patches + int(c.cls_token)
            parts.append(Part("positions", rows * w, EMBEDDING, (rows, w), REPLICATED, FIRST,
                              lookup=True))
        if c.pre_norm:
            parts += _norm(c.pre_norm, w, "pre_norm")
        for p in self.layer_params():
            parts.append(Part(f"layers.{p.name}", c.n_layers * p.value, p.family, p.shape, p.role,
                              FIRST, matmul=p.matmul,
                              module=None if p.module is None else f"layers.{p.module}"))
        if c.post_norm:
            parts += _norm(c.post_norm, w, "post_norm")
        if c.head:  # SigLIP: probe, in_proj (q, k, v packed), out_proj, LayerNorm, MLP
            i = c.d_ff
            parts += [Part("head.probe", w, LAYERS, (w,), REPLICATED, FIRST)]
            parts += _linear("head.in_proj", w, 3 * w, True, COLUMN)
            parts += _linear("head.out_proj", w, w, True, ROW)
            parts += _norm("layernorm", w, "head.norm")
            parts += _linear("head.mlp.up", w, i, True, COLUMN)
            parts += _linear("head.mlp.down", i, w, True, ROW)
        parts += _steps(c.projector, w * c.feature_layers, "projector")
        copies = len(c.deepstack or ())
        if copies:  # one merger per listed layer, each its own tensors
            parts += [Part(p.name, copies * p.value, p.family, p.shape, p.role, FIRST,
                           matmul=p.matmul, module=p.module)
                      for p in _steps(c.deepstack_projector, w, "deepstack")]
        return parts

    # ------------------------------------------------------------------------ the images

    def default_size(self) -> Optional[tuple[int, int]]:
        """The image size counted when none is given: the trained one."""
        s = self.c.image_size
        return (s, s) if s else None

    def layout(self, height: int, width: int) -> proc.ImageLayout:
        """The pieces the tower runs for one image and the processor's special tokens."""
        c, s = self.c, self.c.image_size or 0
        if c.processor == "fixed":
            return proc.ImageLayout(((1, s, s),), c.markers, f"resized to {s}x{s}")
        if c.processor == "qwen":
            lo, hi = c.min_pixels or QWEN_MIN_PIXELS, c.max_pixels or QWEN_MAX_PIXELS
            h, w = proc.qwen_resize(height, width, c.patch * c.merge, lo, hi)
            return proc.ImageLayout(((1, h, w),), c.markers,
                                    f"resized to {h}x{w} (sides multiples of {c.patch * c.merge}, "
                                    f"{lo:,} to {hi:,} pixels)")
        if c.processor == "pixtral":
            edge = c.longest_edge or s
            h, w = proc.pixtral_resize(height, width, edge, c.patch * c.merge)
            rows = h // (c.patch * c.merge)
            return proc.ImageLayout(((1, h, w),), c.markers + rows,
                                    f"resized to {h}x{w} (longest edge at most {edge}, sides "
                                    f"multiples of {c.patch * c.merge}); a row-end token after "
                                    f"each of its {rows} rows")
        if c.processor == "tiles":
            edge = c.longest_edge or IDEFICS3_EDGE_TILES * s
            rows, cols = proc.idefics3_tiles(height, width, edge, s)
            tiles = rows * cols + 1 if rows else 1
            what = (f"{rows}x{cols} tiles of {s}x{s} + the whole image as one more"
                    if rows else f"one tile of {s}x{s}")
            return proc.ImageLayout(((tiles, s, s),), c.markers + 2 * rows * cols,
                                    f"{what} (longest edge resized to {edge}); 2 tokens before "
                                    f"each tile")
        if c.processor == "internvl":
            most = c.max_tiles or INTERNVL_MAX_TILES
            cols, rows = proc.internvl_grid(height, width, s, c.min_tiles, most)
            n = cols * rows
            tiles = n + int(c.thumbnail and n > 1)
            return proc.ImageLayout(((tiles, s, s),), c.markers,
                                    f"{rows}x{cols} tiles of {s}x{s}"
                                    + (" + a thumbnail" if tiles > n else "")
                                    + f" ({c.min_tiles} to {most} tiles)")
        most = c.max_tiles or LLAMA4_MAX_TILES
        rows, cols = proc.llama4_canvas(height, width, s, most)
        n = rows * cols
        return proc.ImageLayout(((n + int(n > 1), s, s),), c.markers + (n if n > 1 else 0),
                                f"{rows}x{cols} tiles of {s}x{s}"
                                + (" + a global tile; a separator after each tile"
                                   if n > 1 else "") + f" (at most {most})")

    def features(self, height: int, width: int, d_text: Optional[int] = None) -> Features:
        """One image's pieces and the tokens each piece puts into the text (ValueError where
        the sizes cannot run, or the projector does not end `d_text` wide)."""
        lay = self.layout(height, width)
        per = tuple(self._project(h, w, d_text)[0] for _, h, w in lay.pieces)
        return Features(lay, per)

    def _grid(self, h: int, w: int) -> tuple[int, int]:
        p = self.c.patch
        if h < p or w < p:
            raise ValueError(f"a {h}x{w} image is smaller than the vision tower's patch of {p}")
        return h // p, w // p

    def _project(self, h: int, w: int, d_text: Optional[int] = None, deepstack: bool = False
                 ) -> tuple[int, list[tuple[str, int]]]:
        """Tokens out of the projector (or one deepstack merger) for one h x w piece, and the
        FLOPs of its steps."""
        c = self.c
        rows, cols = self._grid(h, w)
        extra = int(c.cls_token) - int(c.drop_first)  # tokens beside the patch grid
        steps, prefix = ((c.deepstack_projector, "deepstack") if deepstack else
                         (c.projector, "projector"))
        width, out = c.d_model * (1 if deepstack else c.feature_layers), []
        for n, step in enumerate(steps or ()):
            name = f"{prefix}.{n}"
            tokens = rows * cols + extra
            if step.op == "linear":
                assert step.out is not None
                if step.input is not None and step.input != width:
                    raise ValueError(f"vision projector step {n} reads {step.input}-wide inputs "
                                     f"but receives {width}: this config builds but cannot run "
                                     "on images")
                out.append((name, 2 * tokens * width * step.out))  # (n×in)·(in×out)
                width = step.out
            elif step.op == "shuffle":
                s = step.factor or 1
                if extra or rows % s or cols % s:
                    raise ValueError(f"the vision projector merges {s}x{s} patches but a tile "
                                     f"has {rows}x{cols} patches"
                                     + (" beside a class token" if extra > 0 else
                                        " less a dropped first token" if extra < 0 else ""))
                rows, cols, width = rows // s, cols // s, width * s * s
            elif step.op == "pool":
                m = step.tokens or 1
                side, target = math.isqrt(rows * cols), math.isqrt(m)
                k = side // target if side * side == rows * cols and target * target == m else 0
                if extra or not k or (side // k) ** 2 != m:
                    raise ValueError(f"the vision projector pools {rows}x{cols} patches to {m} "
                                     "tokens, which this config's sizes cannot do (transformers "
                                     "fails the same way)")
                rows = cols = side // k
        if d_text is not None and width != d_text:
            raise ValueError(f"the vision projector ends {width} wide but the text model is "
                             f"{d_text} wide: this config builds but cannot run on images")
        return rows * cols + extra, out

    def images_forward(self, d: int, images: int, height: int, width: int) -> list[Part]:
        """Forward FLOPs of `images` images of height x width (every image of the forward pass:
        batch x images per sequence)."""
        c, w, i = self.c, self.c.d_model, self.c.d_ff
        lay = self.layout(height, width)
        k = c.channels * c.temporal_patch * c.patch * c.patch
        patches = tokens = pairs = head = 0
        proj: dict[str, int] = {}
        for count, h, wd in lay.pieces:
            n = images * count
            rows, cols = self._grid(h, wd)
            N = rows * cols
            T = N + int(c.cls_token)
            patches += n * N
            tokens += n * T
            pairs += n * self._pairs(rows, cols, T)
            if c.head:
                # probe q (1×d)(d×d), K/V (N×d)(d×2d), scores + values 2·2·N·d, out, MLP on 1
                head += n * (2 * w * w + 4 * N * w * w + 4 * N * w + 2 * w * w + 4 * w * i)
            for name, f in self._project(h, wd, d)[1]:
                proj[name] = proj.get(name, 0) + n * f
            if self.deepstack_runs:  # each merger's linears over the piece's patches
                for name, f in self._project(h, wd, d, deepstack=True)[1]:
                    proj[name] = proj.get(name, 0) + self.deepstack_runs * n * f
        if c.attention == "batch":  # one sequence of every image's patches
            pairs = c.n_layers * tokens * tokens
        L = c.n_layers
        mlp = (6 if c.mlp == "gated" else 4) * tokens * w * i  # (T×d)(d×I) x2 or x3
        parts = [Part("patch_embed", 2 * patches * k * w, WEIGHTS),  # (N×C·kt·p²)·(C·kt·p²×d)
                 Part("layers.attn.qkv", L * 2 * tokens * w * 3 * w, WEIGHTS),  # (T×d)·(d×3d)
                 Part("layers.attn.scores", 2 * pairs * w, ATTENTION),  # (T×hd)·(hd×T) · heads
                 Part("layers.attn.values", 2 * pairs * w, ATTENTION),  # (T×T)·(T×hd) · heads
                 Part("layers.attn.o", L * 2 * tokens * w * w, WEIGHTS),  # (T×d)·(d×d)
                 Part("layers.mlp", L * mlp, WEIGHTS)]
        if c.head:
            parts.append(Part("head", head, WEIGHTS))
        return parts + [Part(name, f, WEIGHTS) for name, f in proj.items()]

    def _pairs(self, rows: int, cols: int, T: int) -> int:
        """(query, key) pairs of one piece over all the layers (before `batch` joins pieces)."""
        c = self.c
        if c.attention != "window":
            return c.n_layers * T * T
        m = c.merge
        ws = (c.window or 0) // m // c.patch
        full = sum(1 for b in set(c.full_blocks or ()) if b < c.n_layers)
        lh, lw = rows // m, cols // m
        sa = (lh // ws) * ws * ws + (lh % ws) ** 2
        sb = (lw // ws) * ws * ws + (lw % ws) ** 2
        return full * T * T + (c.n_layers - full) * m ** 4 * sa * sb

    # ------------------------------------------------------------------------ description

    def label(self) -> str:
        """Its short name: 'SigLIP vision tower'."""
        return f"{self.c.name + ' ' if self.c.name else ''}vision tower"

    def describe(self) -> str:
        c = self.c
        name = f"{c.name} " if c.name else ""
        return (f"{name}vision tower: {c.n_layers} layers of {c.d_model:,}, MLP {c.d_ff:,}, "
                f"patch {c.patch}")

    def notes(self) -> list[str]:
        c = self.c
        att = {"image": "each image (tile) attends over its own patches",
               "batch": "every image of the forward pass in one sequence (block-diagonal mask: "
                        "the s² term is over all their patches together)",
               "window": f"windows of {c.window} pixels, full attention in blocks "
                         f"{', '.join(map(str, c.full_blocks or ())) or 'none'}"}[c.attention]
        return [f"{self.describe()}: parameters in params.total (vision.*) but not in "
                "params.active or the N of 6ND (a text token does not read them), forward FLOPs "
                f"only for the images given with --images ({att}); its element-wise work is not "
                "counted"]


def build(cfg: Any) -> Optional[VisionTower]:
    c = getattr(cfg, "vision", None)
    if c is None:
        return None
    if c.d_model % c.n_heads:
        raise ValueError(f"vision.d_model {c.d_model} must be a multiple of vision.n_heads "
                         f"{c.n_heads}")
    needs_size = ((c.position_table and c.positions is None)
                  or c.processor in ("fixed", "tiles", "internvl", "llama4"))
    if needs_size and c.image_size is None:
        raise ValueError("vision.image_size is required (the trained image size: it sizes the "
                         "position table and the processor's tiles)")
    if c.attention == "window" and c.window is None:
        raise ValueError("vision.attention: window needs vision.window (pixels per window side)")
    if c.attention == "window" and (c.window or 0) // c.merge // c.patch < 1:
        raise ValueError("vision.window must be at least vision.merge x vision.patch pixels")
    need = {"linear": "out", "shuffle": "factor", "pool": "tokens"}
    for group in ("projector", "deepstack_projector"):
        for n, step in enumerate(getattr(c, group) or ()):
            key = need.get(step.op)
            if key is not None and getattr(step, key) is None:
                raise ValueError(f"vision.{group}.{n}: a {step.op} step needs '{key}'")
    if c.deepstack and not c.deepstack_projector:
        raise ValueError("vision.deepstack needs vision.deepstack_projector (the steps of "
                         "each deepstack merger)")
    return VisionTower(c)


REGISTER = Entry(blocks=(("vision", VisionConfig),), tower=build)
