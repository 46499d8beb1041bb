"""The named choices flopcalc knows, each defined once: what a stored value costs in bits, which
dtypes an accelerator lists a peak for, what training keeps per parameter, and the modes of
ZeRO and recomputation. Commands offer exactly these (`flopcalc.commands`); the counting uses
the same tables. Pure data: importing it costs nothing."""

from __future__ import annotations

# Storage bits per element. The scale factors of quantised formats (a few bytes per tensor, row
# or block) are not counted here.
DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
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
