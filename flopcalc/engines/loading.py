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

Not modelled: Marlin's workspace (an int32 per SM × 4 per layer, a few KiB), the caching
allocator's 512-byte rounding per tensor, ROCm's paddings (`get_padding_alignment`; a CDNA
device keeps the checkpoint's bytes here).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..errors import FlopcalcError
from ..kinds.base import EXPERT, Part, cdiv

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


def choose(backend: str, architecture: Optional[str]) -> Loading:
    """The MXFP4 MoE backend: `backend` as given, or vLLM's choice for the device
    (`get_mxfp4_backend`, its default environment)."""
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
