"""What the commands' runners share: loading MODEL, the one rule that ties --count to a parallel
layout, the platform a timed run resolves, and the expert layout's defaults."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..errors import FlopcalcError


def load(model: str, overrides: Optional[Sequence[str]] = None) -> Any:
    """A preset name, a YAML or config.json path (or a directory holding one), with `--set`
    overrides: the validated, resolved model."""
    from ..models.registry import load_model

    if not isinstance(model, str):
        raise FlopcalcError(f"MODEL must be a preset name or a path, got {model!r}")
    return load_model(model, overrides or ())


def data_parallel(count: Optional[int], dp: int, tp: int, pp: int, cp: int = 1) -> int:
    """--dp, checked against --count = dp x tp x pp (x cp), or derived from it when --dp is not
    given: the one rule of every command with a parallel layout."""
    ways = tp * pp * cp
    if count is None or count == dp * ways:
        return dp
    if dp != 1 or count % ways:
        what = "dp x tp x pp" + (" x cp" if cp > 1 else "")
        others = "--tp and --pp" + (" and --cp" if cp > 1 else "")
        raise FlopcalcError(f"--count {count} must be {what} = {dp * ways}; give --count with "
                            f"{others} alone to derive --dp")
    return count // ways


def platform(accelerator: Optional[str], dtype: str, count: Optional[int] = None,
             peak: Optional[int] = None, bandwidth: Optional[int] = None, **kw: Any) -> Any:
    """The platform of a run (`models.hardware.resolve`)."""
    from ..models.hardware import resolve

    return resolve(accelerator, dtype, count, peak, bandwidth, **kw)


def machine(accelerator: Optional[str], dtype: str, count: int, peak: Optional[int],
            network: Optional[str], efficiency: Optional[str],
            attention_kernel: Optional[str] = None, flash: bool = True) -> tuple[Any, Any]:
    """The hardware and the Machine of a training step (`step`, `plan`)."""
    from ..predict.plans import machine_for

    if attention_kernel is not None and not flash:
        raise FlopcalcError("--attention-kernel names a flash kernel and --no-flash runs the "
                            "eager one: give one of them")
    if accelerator is None:
        raise FlopcalcError("this command needs --accelerator NAME (flopcalc accelerators "
                            "lists them)")
    found = platform(accelerator, dtype, count, peak, timed=True, network=network,
                     efficiency=efficiency)
    return found.hw, machine_for(found, attention_kernel)


def routed(spec: Any) -> bool:
    """Whether some layer of `spec` has routed experts."""
    return any(k.ep_units() for g in spec.groups() for _, k in g.layer.slots())


def expert_tp(spec: Any, etp: Optional[int], tp: int, ep: int) -> int:
    """--etp, or its default (`counting.memory.default_etp`); given for a dense model, an
    error: there is nothing to split."""
    from ..counting.memory import default_etp

    if not routed(spec):
        if etp is not None:
            raise FlopcalcError("--etp applies to mixtures of experts; this model is dense")
        return 1
    return etp or default_etp(tp, ep)


def config_json(origin: str) -> Any:
    """The Hugging Face config.json a model was read from (None: a preset or model file)."""
    from pathlib import Path

    path = Path(origin)
    if path.is_dir():
        path = path / "config.json"
    return path if path.suffix == ".json" and path.is_file() else None


def recompute_setting(spec: Any, name: str, recompute: Optional[str],
                      modules: Optional[str]) -> Optional[str]:
    """The recompute setting of `--recompute` and `--recompute-modules` (Megatron-Core's
    selective modules, as a comma list in `counting.recompute.MODULES` order), refused where
    the two disagree or the model lacks a module."""
    if modules is None:
        return recompute
    from ..counting.recompute import MODULES, canonical, lacking

    if recompute == "op":
        raise FlopcalcError("--recompute-modules is Megatron-Core's selective recomputation, "
                            "--recompute op torchtitan's per-op checkpointing: give one of them")
    if recompute == "full":  # (none is memory's default: the list then says what is done)
        raise FlopcalcError("--recompute-modules recomputes modules selectively (Megatron-Core's "
                            "--recompute-granularity selective), --recompute full every layer: "
                            "give one of them")
    if len(modules) > 1_000:
        raise FlopcalcError(f"--recompute-modules: too long; the modules are "
                            f"{', '.join(MODULES)}")
    try:
        setting = canonical(m.strip() for m in modules.replace(" ", ",").split(",")
                            if m.strip())
    except ValueError as e:
        raise FlopcalcError(f"--recompute-modules: {e}") from None
    problem = lacking(spec, setting, name)
    if problem:
        raise FlopcalcError(problem)
    return setting
