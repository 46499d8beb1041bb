"""Weights as vLLM loads them, per device: the layouts that differ from the checkpoint's bytes.

A checkpoint's bytes (`counting.storage`) are what is on disk; vLLM allocates some tensors
larger, for its kernels. Modelled here, from vLLM's source at commit 007d500 (the paths are
in the vllm repository):

- MXFP4 routed experts (`model_executor/layers/quantization/mxfp4.py`, `Mxfp4MoEMethod.
  create_weights`): the intermediate width of one rank, I/tp (I under expert parallelism, which
  splits the experts instead), and the hidden width are rounded up by the MoE backend, and
  every tensor is allocated padded: w13 (E, 2·I', H'/2) uint8 values + (E, 2·I', H'/32) e8m0
  scales + (E, 2·I') bias, w2 (E, H', I'/2) + (E, H', I'/32) + (E, H') bias, where
  - Marlin (`Mxfp4Backend.MARLIN`: "n % 256 == 0 and k % 128 == 0"): I' = round_up(I/tp,
    128), H' = round_up(H, 256); `utils/marlin_utils_fp4.py` `prepare_moe_fp4_layer_for_marlin`
    repacks values and permutes scales and biases at the same sizes;
  - FlashInfer on SM100 (`SM100_FI_MXFP4_BF16`, `..._MXFP8_TRTLLM`): I' = round_up(I/tp,
    256), H' = round_up(H, 256); `process_weights_after_loading` keeps the biases as float32
    and adds three float32 per expert (gemm1_alpha, beta, clamp_limit);
  - FlashInfer CUTLASS on SM90 (`SM90_FI_MXFP4_BF16`, `SM100_FI_MXFP4_MXFP8_CUTLASS`): I' and
    H' rounded to 128, biases bf16, the same three float32 per expert;
  - Triton (`Mxfp4Backend.TRITON`): I' = round_up(I/tp, 64), H unpadded, biases converted to
    float32; `process_weights_after_loading` swizzles values and scales for triton_kernels
    (`utils/mxfp4_utils.py` `_swizzle_mxfp4`) and deletes the loaded values but not the loaded
    scales (`layer.w13_weight_scale`, `w2_weight_scale` stay registered beside the swizzled
    copies in the precision configs). On Hopper the value layout (HopperMXValueLayout) repacks
    at the same size and the scale layout (triton_kernels `tensor_details/layout_details/
    hopper_scale.py`, `HopperMXScaleLayout.swizzle_data`, num_warps 8) pads each matrix's
    output rows to a multiple of 2·num_warps·2·8 = 256 and its scale columns to 2: the fused
    w13 (E, round_up(2·I', 256), round_up(H/32, 2)) and w2 (E, round_up(H, 256),
    round_up(I'/32, 2)) more bytes. Blackwell's layouts are not modelled (Hopper's rule).

  Which backend runs (`get_mxfp4_backend`, default environment): SM100 with FlashInfer →
  FlashInfer BF16; SM90 → Triton (FlashInfer's SM90 path only when
  VLLM_USE_FLASHINFER_MOE_MXFP4_BF16 is set); other NVIDIA GPUs (Ampere, Ada, SM120) → Marlin,
  the fallback every CUDA GPU from SM80 runs. With no accelerator named, Marlin.

NVFP4 (ModelOpt `quant_algo: NVFP4`, compressed-tensors nvfp4; `models.quantization`): the
checkpoint holds per matrix (N outputs of one rank × K inputs) E2M1 values (N, K/2), an FP8 E4M3
scale per 16 inputs (N, K/16) and fp32 globals (weight_scale_2, input_scale; kept here at the
checkpoint's 8 bytes per matrix, whatever the kernel renames them to). The layouts by device:

- "swizzled" (Blackwell: every FlashInfer/CUTLASS/cuDNN FP4 GEMM): the block scales
  swizzled for the kernel, rows padded to 128 and scale columns to 4 (vLLM 0.33.0 `model_
  executor/layers/quantization/utils/nvfp4_utils.py` `swizzle_blockscale`, line 13; 0.11.0
  `utils/quant_utils.py` line 591, the same rule); 0.33 also pads the values to 32 rows and
  32 inputs (`pad_nvfp4_weight_for_cutlass`, line 61; called by `kernels/linear/nvfp4/
  flashinfer.py` `FlashInferCutlassNvFp4LinearKernel.process_weights_after_loading`, line
  214, and `cutlass.py`), 0.11 keeps them (`quantization/modelopt.py`
  `ModelOptNvFp4LinearMethod.process_weights_after_loading`, lines 928-980).
  Routed experts (FlashInfer CUTLASS / vLLM CUTLASS MoE; 0.33.0 `utils/flashinfer_fp4_moe.py`
  `prepare_nvfp4_moe_layer_for_fi_or_cutlass`, lines 335-456; 0.11.0 `modelopt.py` lines
  1374-1392 and `compressed_tensors/compressed_tensors_moe.py` lines 290-297; compressed-
  tensors' linear layers take the same kernels, 0.11.0 `schemes/compressed_tensors_w4a4_
  nvfp4.py` line 130): gate and up fused as w13 with scales (E, 2·I/tp, H/16) swizzled to
  (E, round_up(2·I/tp, 128), round_up(H/16, 4)) and w2's (E, H, I/tp/16) to (E, round_up(H,
  128), round_up(I/tp/16, 4)), the values kept; 0.33 refuses a gated w13 whose rows would pad
  (NotImplementedError) and pads an ungated one's values and w2's columns to match; 0.11's
  ModelOpt path asserts H/16 and I/tp/16 are multiples of 16 (its compressed-tensors path
  does not). B200's default MoE backend (FlashInfer
  TRT-LLM, its own shuffled layout) is not transcribed: its experts take this rule.
- "marlin" (every CUDA GPU before Blackwell: weight-only FP4): 0.33 pads each matrix to
  Marlin's tile (`utils/marlin_utils.py` `marlin_padded_nk`, line 222: (round_up(N, 64),
  round_up(K, 128)) or (round_up(N, 128), round_up(K, 64)), the smaller), values and fp8
  scales alike (`utils/marlin_utils_fp4.py` `prepare_fp4_layer_for_marlin`, line 220); 0.11
  repacks at the checkpoint's sizes. Marlin's MoE repacking is not transcribed (experts at the
  checkpoint's bytes).

Not modelled: Marlin's workspace (an int32 per SM × 4 per layer, a few KiB), the caching
allocator's 512-byte rounding per tensor, ROCm's paddings (`get_padding_alignment`; a CDNA
device keeps the checkpoint's bytes here).
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd
from typing import Optional

from ..records import dataclass
from ..errors import FlopcalcError
from ..kinds.base import COLUMN, EXPERT, ROW, Part, cdiv

# backend → (intermediate alignment, hidden alignment, bias bytes, float32 per expert)
MXFP4_BACKENDS: dict[str, tuple[int, int, int, int]] = {
    "marlin": (128, 256, 2, 0),
    "triton": (64, 1, 4, 0),
    "flashinfer-sm90": (128, 128, 2, 3),
    "flashinfer-sm100": (256, 256, 4, 3),
}
BACKEND_CHOICES = ("auto", *MXFP4_BACKENDS)
MXFP4_BLOCK = 32


def round_up(x: int, k: int) -> int:
    return cdiv(x, k) * k


@dataclass(frozen=True)
class Loading:
    """How the engine lays out the tensors it pads: the MXFP4 MoE backend and why."""

    mxfp4_backend: str  # one of MXFP4_BACKENDS, or "checkpoint" (no padding modelled)
    reason: str
    nvfp4: str = "checkpoint"  # one of NVFP4_LAYOUTS
    release: Optional[str] = None  # the vLLM release line whose code it follows; None: 0.33
    method: str = ""  # the checkpoint's quant_method ("compressed-tensors": 0.11 asserts less)

    def describe_nvfp4(self) -> str:
        line = self.release or "0.33"
        if self.nvfp4 == "swizzled":
            how = ("block scales swizzled, rows padded to 128 and scale columns to 4"
                   + ("" if line in OLD_NVFP4 else ", values to 32 rows and inputs")
                   + " (utils/nvfp4_utils.py swizzle_blockscale; MoE: flashinfer_fp4_moe.py)")
        elif self.nvfp4 == "marlin":
            how = ("Marlin's weight-only layout" + (" at the checkpoint's sizes"
                   if line in OLD_NVFP4 else ", each matrix padded to its tile "
                   "(marlin_utils.py marlin_padded_nk); experts as the checkpoint"))
        else:
            how = "as the checkpoint stores them"
        return f"NVFP4 as vLLM {line} loads it: {how}"

    def describe(self) -> str:
        if self.mxfp4_backend == "checkpoint":
            return ("vLLM's loading layout: MXFP4 experts as the checkpoint stores them "
                    f"({self.reason})")
        i, h, bias, _ = MXFP4_BACKENDS[self.mxfp4_backend]
        pad = (f"intermediate per rank rounded up to {i}"
               + (f", hidden to {h}" if h > 1 else "") + f", biases {8 * bias}-bit"
               + (", the loaded scales kept beside their swizzled copy (Hopper's layout: rows "
                  "to 256)" if self.mxfp4_backend == "triton" else ""))
        return (f"vLLM's loading layout: MXFP4 experts as its {self.mxfp4_backend} MoE backend "
                f"allocates them ({pad}; {self.reason}; "
                "model_executor/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights)")


NVFP4_LAYOUTS = ("swizzled", "marlin", "checkpoint")
OLD_NVFP4 = ("0.6", "0.8", "0.10", "0.11")  # release lines following 0.11.0's code
NVFP4_GROUP = 16


def nvfp4_layout(architecture: Optional[str]) -> str:
    """How vLLM lays NVFP4 out on the device: FP4 tensor cores (Blackwell, SM100 and SM120:
    CUTLASS's FP4 GEMMs take the same swizzled scales) or Marlin."""
    if architecture in ("blackwell", "blackwell-rtx"):
        return "swizzled"
    if architecture in ("cdna3", "cdna4", "tpu-v5p"):
        return "checkpoint"
    return "marlin"


def choose(backend: str, architecture: Optional[str], release: Optional[str] = None,
           method: str = "") -> Loading:
    """The MXFP4 MoE backend: `backend` as given, or vLLM's choice for the device
    (`get_mxfp4_backend`, its default environment); and the NVFP4 layout for the device
    (`method`: the checkpoint's quant_method, "" for --weights-dtype)."""
    picked = _choose_mxfp4(backend, architecture)
    return Loading(picked.mxfp4_backend, picked.reason, nvfp4_layout(architecture), release,
                   method)


def _choose_mxfp4(backend: str, architecture: Optional[str]) -> Loading:
    if backend != "auto":
        if backend not in MXFP4_BACKENDS:
            raise FlopcalcError(f"--mxfp4-backend {str(backend)[:40]!r} is not one of "
                                f"{', '.join(BACKEND_CHOICES)}")
        return Loading(backend, f"--mxfp4-backend {backend}")
    if architecture in ("cdna3", "cdna4", "tpu-v5p"):
        return Loading("checkpoint", f"{architecture}: its paddings are not modelled")
    if architecture == "blackwell":
        return Loading("flashinfer-sm100", "SM100 with FlashInfer: get_mxfp4_backend")
    if architecture == "hopper":
        return Loading("triton", "SM90 with triton_kernels: get_mxfp4_backend")
    if architecture is None:
        return Loading("marlin", "no accelerator named: Marlin, the fallback every CUDA GPU "
                       "from SM80 runs")
    return Loading("marlin", f"{architecture}: get_mxfp4_backend's fallback")


def marlin_padded_nk(n: int, k: int, group: int = NVFP4_GROUP) -> tuple[int, int]:
    """vLLM 0.33's `marlin_padded_nk`: the cheaper of the two tile families, K kept a multiple
    of the group."""
    lcm128, lcm64 = 128 * group // gcd(128, group), 64 * group // gcd(64, group)
    candidates = ((round_up(n, 64), round_up(k, lcm128)), (round_up(n, 128), round_up(k, lcm64)))
    return min(candidates, key=lambda nk: (nk[0] * nk[1], nk[0] + nk[1]))


def nvfp4_matrix_bytes(n: int, k: int, layout: str, release: Optional[str]) -> Fraction:
    """Bytes of the values and fp8 block scales of one NVFP4 linear weight of N output rows and
    K inputs (one rank's) as vLLM allocates them under `layout` ("checkpoint": as stored)."""
    old = (release or "0.33") in OLD_NVFP4
    if layout == "swizzled":  # (N, K/2) values; scales (round_up(N, 128), round_up(K/16, 4))
        vals = Fraction(n * k, 2) if old else Fraction(round_up(n, 32) * round_up(k, 32), 2)
        return vals + round_up(n, 128) * round_up(cdiv(k, NVFP4_GROUP), 4)
    if layout == "marlin" and not old:  # values and scales at Marlin's padded tile
        n, k = marlin_padded_nk(n, k)
    return Fraction(n * k, 2) + n * cdiv(k, NVFP4_GROUP)


def nvfp4_bytes(p: Part, layout: str, tp: int, ep: int, release: Optional[str],
                gated: bool = True, method: str = "") -> Optional[Fraction]:
    """Bytes of the values and block scales one device holds of an NVFP4 weight (a linear
    layer's n_in × n_out, or a routed expert stack E × n_in × n_out; `gated`: its layer has a
    gate beside up) as vLLM loads it under `layout` ("checkpoint": as stored); None for a
    tensor it does not repack (biases; Marlin's experts). The fp32 globals are not included."""
    if layout not in NVFP4_LAYOUTS or not p.matmul:
        return None
    if len(p.shape) == 2 and p.role != EXPERT:
        n_in, n_out = p.shape
        if p.role == COLUMN:
            n_out //= tp
        elif p.role == ROW:
            n_in //= tp
        return nvfp4_matrix_bytes(n_out, n_in, layout, release)
    if len(p.shape) != 3 or p.role != EXPERT or layout == "marlin":
        return None
    experts, n_in, n_out = p.shape
    local, split = (experts // ep, 1) if ep > 1 else (experts, tp)
    down = _down(p)
    hidden, inter = (n_out, n_in) if down else (n_in, n_out)
    if inter % split:
        raise FlopcalcError(f"--tp {tp} must divide the experts' width {inter:,}")
    i_p = inter // split
    if layout == "checkpoint":  # (E, rows, cols/2) values and (E, rows, cols/16) scales
        return Fraction(local * hidden * i_p, 2) + local * (
            hidden * cdiv(i_p, NVFP4_GROUP) if down else i_p * cdiv(hidden, NVFP4_GROUP))
    old = (release or "0.33") in OLD_NVFP4
    # 0.11.0's ModelOpt MoE asserts it (modelopt.py lines 1375, 1384); its compressed-tensors
    # MoE (compressed_tensors_moe.py lines 291-297) swizzles without asserting
    if old and method != "compressed-tensors" and (hidden % 256 or i_p % 256):
        raise FlopcalcError(
            f"NVFP4 experts of width {i_p:,} per rank and hidden {hidden:,}: vLLM 0.11's CUTLASS "
            "MoE asserts both are multiples of 256 (modelopt.py, 'Expected weight_scale.dim(1) "
            "to be divisible by 16'); change --tp or use --engine vllm (0.33)")
    i_pad = i_p
    if not old and (2 * i_p if gated else i_p) % 128:
        if gated:
            raise FlopcalcError(
                f"NVFP4 experts of width {i_p:,} per rank: vLLM 0.33's FlashInfer CUTLASS MoE "
                "does not pad a gated w13 (2·I/tp must be a multiple of 128: NotImplementedError "
                "in prepare_nvfp4_moe_layer_for_fi_or_cutlass); change --tp")
        i_pad = round_up(i_p, 128)  # ungated: w13 rows and w2 columns padded to the scales'
    vals = Fraction(local * hidden * i_pad, 2)
    if down:  # w2 scales (E, H, I/16) → (E, round_up(H, 128), round_up(I/16, 4))
        return vals + local * round_up(hidden, 128) * round_up(cdiv(i_pad, NVFP4_GROUP), 4)
    # gate or up: half of w13's (E, round_up(2·I, 128), round_up(H/16, 4)) when gated
    rows = round_up(i_p, 64) if gated else round_up(i_p, 128)
    return vals + local * rows * round_up(cdiv(hidden, NVFP4_GROUP), 4)


def nvfp4_extra(p: Part, layout: str, tp: int, ep: int, release: Optional[str],
                gated: bool = True, method: str = "") -> Fraction:
    """What vLLM's `layout` adds to (or, never, takes from) one device's share of an NVFP4
    tensor as stored: padded values and block scales."""
    loaded = nvfp4_bytes(p, layout, tp, ep, release, gated, method)
    if loaded is None:
        return Fraction(0)
    return loaded - nvfp4_bytes(p, "checkpoint", tp, ep, release, gated)


def _down(p: Part) -> bool:
    """Whether an expert tensor belongs to the down projection (vLLM's w2, input I, output H),
    by the module the MLP declares it in (`experts.down`), not by its shape: gpt-oss's
    gate, up and down matrices are all 2880 × 2880."""
    return bool(p.module) and p.module.rsplit(".", 1)[-1] == "down"


def mxfp4_expert_bytes(p: Part, backend: str, tp: int, ep: int) -> Optional[Fraction]:
    """Bytes one device holds of an MXFP4 routed-expert tensor (a matrix stack E × n_in × n_out
    or its bias E × n_out) as `backend` allocates it; None when the part is not one."""
    if p.role != EXPERT or backend not in MXFP4_BACKENDS or len(p.shape) not in (2, 3):
        return None
    i_align, h_align, bias_bytes, _ = MXFP4_BACKENDS[backend]
    experts = p.shape[0]
    if ep > 1:  # whole experts on each rank, the intermediate width unsplit
        local, part = experts // ep, 1
    else:
        local, part = experts, tp
    down = _down(p)
    if len(p.shape) == 3:
        n_in, n_out = p.shape[1:]
        hidden, inter = (n_out, n_in) if down else (n_in, n_out)
        if inter % part:
            raise FlopcalcError(f"--tp {tp} must divide the experts' width {inter:,}")
        h, i = round_up(hidden, h_align), round_up(inter // part, i_align)
        # values ½ byte, one e8m0 scale per 32 along the input: gate/up (E, I', H'/32), down
        # (E, H', I'/32); FlashInfer's three float32 per expert once a layer, with down
        rows, k = (h, i) if down else (i, h)
        extra = local * 4 * MXFP4_BACKENDS[backend][3] if down else 0
        return Fraction(local * h * i, 2) + local * rows * cdiv(k, MXFP4_BLOCK) + extra
    (n_out,) = p.shape[1:]
    if down:  # w2_bias (E, H'): every rank holds it whole
        return Fraction(local * round_up(n_out, h_align) * bias_bytes)
    if n_out % part:
        raise FlopcalcError(f"--tp {tp} must divide the experts' width {n_out:,}")
    return Fraction(local * round_up(n_out // part, i_align) * bias_bytes)


def triton_scale_copies(parts: list[Part], tp: int, ep: int) -> int:
    """Bytes of the swizzled scale copies the Triton backend keeps beside the loaded scales for
    one MoE layer on one device (Hopper's layout), from its MXFP4 expert weight stacks: gate
    and up fused as w13, down as w2."""
    weights = [p for p in parts if p.role == EXPERT and len(p.shape) == 3]
    if not weights:
        return 0
    i_align = MXFP4_BACKENDS["triton"][0]
    experts = weights[0].shape[0]
    local, part = (experts // ep, 1) if ep > 1 else (experts, tp)
    align_rows, align_cols = 2 * 8 * 2 * 8, 2  # 2·num_warps·2·8, num_warps = 8
    total, w13_rows, hidden = 0, 0, 0
    for p in weights:
        n_in, n_out = p.shape[1:]
        if _down(p):  # w2: H rows, I'/32 scale columns
            i = round_up(n_in // part, i_align)
            total += local * round_up(n_out, align_rows) * \
                round_up(cdiv(i, MXFP4_BLOCK), align_cols)
        else:
            w13_rows += round_up(n_out // part, i_align)
            hidden = n_in
    if w13_rows:
        total += local * round_up(w13_rows, align_rows) * \
            round_up(cdiv(hidden, MXFP4_BLOCK), align_cols)
    return total
