"""The named choices flopcalc knows, each defined once: what a stored value costs in bits, which
dtypes an accelerator lists a peak for, what training keeps per parameter, and the modes of
ZeRO and recomputation. Commands offer exactly these (`flopcalc.commands`); the counting uses
the same tables. Pure data: importing it costs nothing."""

from __future__ import annotations

# Storage bits per element. The scale factors of quantised formats (a few bytes per tensor, row
# or block) are not counted here.
DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
# Quantised weight formats that carry scales (`counting.quant`): bits per value, values per
# scale along a matrix's input dimension (a 2-D tile edge for `fp8-block`, 0: none), bits per
# scale, and bytes of per-tensor scales. nvfp4: E2M1 values, an FP8 E4M3 scale per 16 and an
# fp32 global scale per tensor (NVIDIA ModelOpt's NVFP4); mxfp4: E2M1 values and an E8M0 scale
# per 32 (OCP Microscaling Formats v1.0; gpt-oss ships its experts so); fp8-tensor: one fp32
# scale per tensor; fp8-block: an fp32 scale per 128 x 128 tile (DeepSeek-V3's weights).
SCALED_FORMATS = {"nvfp4": (4, 16, 8, 4), "mxfp4": (4, 32, 8, 0), "fp8-tensor": (8, 0, 0, 4),
                  "fp8-block": (8, 128, 32, 0)}
# Every dtype an accelerator datasheet may list a dense peak for.
COMPUTE_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
# Training precision: weights, gradients, and optimizer bytes per parameter besides its moments.
PRECISIONS = {
    "mixed": (2, 2, 4),  # 16-bit weights and gradients, an fp32 master copy
    "bf16": (2, 2, 0),  # pure 16-bit training, no master copy
    "fp32": (4, 4, 0),
}
OPTIMIZERS = {"adamw": 8, "sgd": 4, "adamw-8bit": 2}  # bytes per parameter of moments (fp32 m, v)
ZERO_STAGES = (0, 1, 2, 3)
RECOMPUTE = ("none", "selective", "full")
