"""`flopcalc infer`: prefill and decode FLOPs, the KV cache and weights, roofline bounds."""

from __future__ import annotations

from ..errors import FlopcalcError
from .base import Command, Render
from .common import load, platform
from .options import CAUSAL, OPTIONS, pick

# --kv-cache-dtype's names as `infer` stores them: plain dtypes (vLLM's fp8 variants are fp8;
# its paged layouts of DeepSeek's latent cache and nvfp4's scales are `serve`'s arithmetic).
PLAIN_KV = {"auto": "bf16", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}


def kv_dtype(value: str) -> str:
    """The dtype `infer` stores the cache in for a --kv-cache-dtype."""
    if value in ("fp8_ds_mla", "nvfp4_ds_mla", "nvfp4"):
        raise FlopcalcError(f"--kv-cache-dtype {value} is a vLLM cache layout with its own "
                            "scales: flopcalc serve sizes it; infer takes bf16, fp16, fp32, fp8 "
                            "or int8")
    return PLAIN_KV.get(value, value)


def run(model, *, prompt, gen, batch, kv_cache_dtype, state_dtype, weights_dtype,
        compute_dtype, attention, scan, accelerator, count, peak, bandwidth, memory_fraction,
        reserve, max_batch, images, image_size, set, curve=False):  # noqa: A002
    from ..reports.infer import build_infer_report, largest_batch

    loaded = load(model, set)
    placed: list = []
    if images or image_size:  # the image tokens join the prompt; the towers run in the prefill
        from ..counting.model import workload
        from ..reports.images import place

        grown, placed = place(loaded.spec, workload(loaded.spec, prompt, None, batch), images,
                              image_size)
        prompt = grown.seq
    hw = platform(accelerator, compute_dtype, count, peak, bandwidth,
                  memory_fraction=memory_fraction, reserve=reserve).hw
    options = dict(prompt=prompt, gen=gen, attention=attention, scan=scan,
                   kv_dtype=kv_dtype(kv_cache_dtype), state_dtype=state_dtype,
                   weights_dtype=weights_dtype, compute_dtype=compute_dtype, hw=hw)
    if max_batch:
        batch = largest_batch(loaded, hw, options)
    return build_infer_report(loaded, batch=batch, curve=curve, images=placed, **options)


COMMAND = Command(
    "infer", "Prefill and decode FLOPs with the KV context, KV-cache and weight bytes, and with "
    "--accelerator the roofline lower bounds on time and tokens/s.",
    (OPTIONS["prompt"].but(required=True, why="infer counts one request's prompt"),
     *pick("gen", "batch", "kv_cache_dtype", "state_dtype", "weights_dtype", "compute_dtype"),
     OPTIONS["attention"].but(default="causal", why=CAUSAL),
     *pick("scan", "accelerator", "count", "peak", "bandwidth", "memory_fraction", "reserve",
           "max_batch", "images", "image_size", "set")),
    run, presentation=("format", "brief", "plot"),
    plotted="decode FLOPs and bytes per step against the context", internal=("curve",),
    report=("infer", "InferReport"),
    render=Render("infer", "infer_csv", "infer_tables", "infer_brief", "plot_infer"))
