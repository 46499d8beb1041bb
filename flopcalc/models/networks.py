"""Networks and achievable throughput: the YAML schemas of `presets/networks/*.yaml` and
`presets/efficiency/*.yaml`, finding and loading them.

A network is two levels, as the collective model (`predict.collectives`) reads it: a fast
domain of `domain_size` devices (NVLink and NVSwitch, an Infinity Fabric mesh, a TPU slice's
ICI) with `scale_up_bandwidth` bytes/s each way per device, and a scale-out network with
`scale_out_bandwidth` bytes/s each way per device (its NIC). Each bandwidth has the share of it
that ring collectives reach (measured, cited), and NCCL's latency constants in nanoseconds.

An efficiency file is named like the accelerator preset it describes (`h100-sxm.yaml`): the
share of the dense peak the best-shaped matmul reaches per dtype (MAMF / peak), the shares of
peak a fused attention kernel reaches forward and backward and of memory bandwidth an
element-wise kernel reaches (each as best, typical and worst published values), and the number
of streaming multiprocessors (for wave quantisation). Shares are written `80.3%` or `0.803`.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from ..records import dataclass
from ..declare import Invalid, Min, Parsed, structure
from ..errors import FlopcalcError
from ..numbers import parse_bytes, parse_share, shown
from ..tables import COMPUTE_DTYPES
from .files import read_mapping, user_path

Size = Annotated[int, Parsed(parse_bytes)]
Dtype = Literal[COMPUTE_DTYPES]  # type: ignore[valid-type]


def share(text: str, where: str) -> Fraction:
    try:
        return parse_share(text, where)
    except FlopcalcError as exc:
        raise ValueError(str(exc)) from None


@dataclass(frozen=True)
class NetworkSpec:
    """A network file (see the module docstring); bandwidths per device, each way."""

    title: str
    source: str
    domain_size: Annotated[int, Min(1)]
    scale_up_bandwidth: Size
    scale_out_bandwidth: Size
    scale_up_efficiency: str
    scale_out_efficiency: str
    latency_base_ns: Annotated[int, Min(0)]
    latency_scale_up_ns: Annotated[int, Min(0)]
    latency_scale_out_ns: Annotated[int, Min(0)]
    topology: Literal["switch", "mesh", "torus"] = "switch"
    notes: str = ""
    aliases: list[str] = field(default_factory=list)  # short names that pick this preset

    def __post_init__(self) -> None:
        share(self.scale_up_efficiency, "scale_up_efficiency")
        share(self.scale_out_efficiency, "scale_out_efficiency")
        if self.scale_up_bandwidth <= 0 or self.scale_out_bandwidth <= 0:
            raise ValueError("bandwidths must be positive")

    @property
    def up(self) -> float:
        """Achievable scale-up bandwidth per device, bytes/s each way."""
        return float(self.scale_up_bandwidth * share(self.scale_up_efficiency, ""))

    @property
    def out(self) -> float:
        """Achievable scale-out bandwidth per device, bytes/s each way."""
        return float(self.scale_out_bandwidth * share(self.scale_out_efficiency, ""))


@dataclass(frozen=True)
class Spread:
    """A published range: the best, typical and worst shares (of peak or of bandwidth)."""

    best: str
    typical: str
    worst: str

    def __post_init__(self) -> None:
        values = [share(v, k) for k, v in (("best", self.best), ("typical", self.typical),
                                           ("worst", self.worst))]
        if not values[0] >= values[1] >= values[2]:
            raise ValueError("best >= typical >= worst, as shares")

    def at(self, end: str) -> float:
        return float(share(getattr(self, end), end))


@dataclass(frozen=True)
class KernelShares:
    """Another attention kernel's shares of peak on the same device, with their source."""

    forward: Spread
    backward: Spread
    title: str
    source: str


@dataclass(frozen=True)
class EfficiencySpec:
    """An efficiency file (see the module docstring)."""

    title: str
    source: str
    sms: Annotated[int, Min(1)]
    matmul: dict[Dtype, str]
    attention_forward: Spread
    attention_backward: Spread
    memory: Spread
    notes: str = ""
    # the kernel attention_forward/backward describe, and the others measured on this device
    # (`--attention-kernel NAME` picks one)
    attention_kernel: str = "flash"
    attention_title: str = "a fused flash-attention kernel"
    attention_kernels: dict[str, KernelShares] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for dtype, value in self.matmul.items():
            share(value, f"matmul.{dtype}")

    def attention(self, kernel: Optional[str]) -> tuple[str, str, Spread, Spread]:
        """The (name, title, forward, backward) shares of `kernel` (None: the default)."""
        if kernel is None or kernel.lower() == self.attention_kernel:
            return (self.attention_kernel, self.attention_title, self.attention_forward,
                    self.attention_backward)
        other = self.attention_kernels.get(kernel.lower())
        if other is None:
            known = ", ".join([f"{self.attention_kernel} (the default)",
                               *self.attention_kernels])
            raise FlopcalcError(f"--attention-kernel {shown(kernel)}: this efficiency "
                                f"file has shares for {known}; give one of those, or an "
                                "efficiency file (--efficiency FILE) with yours")
        return kernel.lower(), other.title, other.forward, other.backward

    def matmul_share(self, dtype: str) -> Optional[float]:
        value = self.matmul.get(dtype)  # type: ignore[call-overload]
        return None if value is None else float(share(value, dtype))


@dataclass(frozen=True)
class Loaded:
    name: str
    origin: str  # "preset", or the path read
    spec: Any


def _directory(folder: str) -> Path:
    from .registry import presets_dir

    return presets_dir() / folder


def names(folder: str) -> list[str]:
    from .registry import preset_names

    return preset_names(_directory(folder))


def _read(cls: type, raw: Any, label: str) -> Any:
    try:
        return structure(cls, raw)
    except (Invalid, ValueError, TypeError) as exc:
        raise FlopcalcError(f"{label}: {exc}") from None


def load_network(ref: str) -> Loaded:
    """A network preset (`dgx-h100`, `gb200-nvl72`; short names in each file's `aliases`) or a
    YAML file in the same schema."""
    from .registry import find_preset, looks_like_path, preset_aliases

    if looks_like_path(ref):
        path = user_path(ref)
        return Loaded(path.stem, str(path),
                      _read(NetworkSpec, read_mapping(path, "network file"), str(path)))
    available = names("networks")
    if ref.lower() not in {n.lower() for n in available}:
        ref = preset_aliases(_directory("networks")).get(ref.lower(), ref)
    name = find_preset(ref, available, "network",
                       f"available: {', '.join(available)}; a YAML file path works too")
    raw = read_mapping(_directory("networks") / f"{name}.yaml", "network file")
    return Loaded(name, "preset", _read(NetworkSpec, raw, f"networks/{name}.yaml"))


def load_efficiency(accelerator: str) -> Optional[Loaded]:
    """The efficiency preset named like the accelerator preset, or None (a custom device)."""
    if accelerator not in names("efficiency"):
        return None
    raw = read_mapping(_directory("efficiency") / f"{accelerator}.yaml", "efficiency file")
    return Loaded(accelerator, "preset",
                  _read(EfficiencySpec, raw, f"efficiency/{accelerator}.yaml"))


def load_efficiency_file(ref: str) -> Loaded:
    """An efficiency file given by path (or a preset name)."""
    from .registry import looks_like_path

    if not looks_like_path(ref):
        found = load_efficiency(ref.lower())
        if found is None:
            raise FlopcalcError(f"no efficiency preset '{ref}'; available: "
                                f"{', '.join(names('efficiency'))}; a YAML file path works too")
        return found
    path = user_path(ref)
    return Loaded(path.stem, str(path),
                  _read(EfficiencySpec, read_mapping(path, "efficiency file"), str(path)))


# Used for a device without an efficiency preset: the H100 SXM shares, stated in the report.
GENERIC = "h100-sxm"
