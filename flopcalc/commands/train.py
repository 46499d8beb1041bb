"""`flopcalc train`: days, device-hours and cost to train on D tokens, or devices for a
deadline."""

from __future__ import annotations

from ..errors import FlopcalcError
from .base import Command, Render
from .common import load, platform, recompute_setting
from .options import CAUSAL, OPTIONS, pick


def run(model, *, mfu, tokens, seq, packed, attention, scan, recompute, recompute_modules,
        accelerator, count, days,
        dtype, peak, price, images, image_size, set):  # noqa: A002
    from ..reports.train import build_train_report

    if days is not None and count is not None:
        raise FlopcalcError("give --count N (devices) or --days N (a deadline that sets the "
                            "devices), not both")
    if recompute == "selective":
        raise FlopcalcError("--recompute selective recomputes the attention core, whose time "
                            "depends on the kernels: flopcalc step times it; here choose none "
                            "or full (one more forward pass)")
    hw = platform(accelerator, dtype, count, peak, None, need_bandwidth=False).hw
    if hw is None:
        raise FlopcalcError("train needs --accelerator NAME (flopcalc accelerators lists them) "
                            "or --peak FLOP/s per device")
    loaded = load(model, set)
    setting = recompute_setting(loaded.spec, loaded.name, recompute, recompute_modules)
    if setting and "core_attn" in setting.split(","):
        raise FlopcalcError("--recompute-modules core_attn recomputes the attention core, whose "
                            "time depends on the kernels: flopcalc step times it; here give "
                            "the other modules")
    return build_train_report(loaded, hw, mfu, seq=seq, tokens=tokens,
                              attention=attention, recompute=setting or "none", price=price,
                              days=days, images=images, image_size=image_size, scan=scan,
                              packed=packed)


COMMAND = Command(
    "train", "Wall-clock days, accelerator-hours and cost to train on D tokens, for the exact "
    "count and 6ND; or, with --days, the devices needed.",
    (OPTIONS["mfu"].but(required=True, why="the time is FLOPs over the utilisation you assume"),
     *pick("tokens", "seq", "packed"), OPTIONS["attention"].but(default="causal", why=CAUSAL),
     *pick("scan", "recompute", "recompute_modules", "accelerator", "count", "days", "dtype",
           "peak", "price", "images", "image_size", "set")),
    run, presentation=("format", "brief"), report=("train", "TrainReport"),
    render=Render("train", "train_csv", "train_tables", "train_brief"))
