"""One resolver for what a run is timed on: the accelerator (`--accelerator`, with `--peak`,
`--bandwidth`, `--count`, `--memory-fraction` and `--reserve`), the network it is built into and
the achievable-throughput file that says how much of its peaks real kernels reach. Every command
that times anything (`infer`, `train`, `memory`, `mfu`, `step`, `plan`, `serve`) calls
`resolve`, so each default is taken, and each stand-in is said, the same way everywhere.

What is known about a device lives in its preset files, not here: the accelerator file names its
short names (`aliases`) and its usual system (`system`, the network preset), and the efficiency
file has the accelerator's name. A device without one (a custom `--peak`, a YAML file of one's
own) gets a stand-in, and the run says which in a warning: the H100 SXM's efficiency shares
(`networks.GENERIC`), the DGX H100 network (`FALLBACK_NETWORK`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..errors import FlopcalcError
from .accelerators import Hardware, resolve_hardware
from .networks import GENERIC, Loaded

# The network of a device whose file names no system (a custom device).
FALLBACK_NETWORK = "dgx-h100"


@dataclass(frozen=True)
class Platform:
    """The hardware of a run (None: no accelerator given, counts only), and for a timed run its
    network and efficiency file, with the warnings for every stand-in."""

    hw: Optional[Hardware]
    network: Optional[Loaded] = None
    efficiency: Optional[Loaded] = None
    warnings: tuple[str, ...] = ()


def resolve(accelerator: Optional[str], dtype: str, count: Optional[int] = None,
            peak: Optional[int] = None, bandwidth: Optional[int] = None, *,
            need_bandwidth: bool = True, memory_fraction: Fraction = Fraction(1),
            reserve: Optional[int] = None, timed: bool = False,
            network: Optional[str] = None, efficiency: Optional[str] = None) -> Platform:
    """The platform of a run. `timed`: the run is timed on a network with achievable shares, so
    both are resolved (`network` and `efficiency` name them; default: the accelerator's)."""
    if accelerator is None and (memory_fraction != 1 or reserve is not None):
        raise FlopcalcError("--memory-fraction and --reserve size an accelerator's memory: "
                            "give --accelerator NAME too")
    hw = resolve_hardware(accelerator, dtype, count or 1, peak, bandwidth, need_bandwidth,
                          memory_fraction, reserve or 0)
    if not timed or hw is None:
        if network is not None or efficiency is not None:
            raise FlopcalcError("--network and --efficiency describe an accelerator's system: "
                                "give --accelerator NAME too")
        return Platform(hw)
    from .networks import load_efficiency, load_efficiency_file, load_network

    warnings = []
    if efficiency is not None:
        eff = load_efficiency_file(efficiency)
    else:
        found = load_efficiency(hw.name)
        if found is None:
            warnings.append(f"no efficiency preset for '{hw.name}': the {GENERIC} shares are "
                            "used (give --efficiency FILE for yours)")
            found = load_efficiency(GENERIC)
        assert found is not None
        eff = found
    if network is None:
        network = hw.system  # the accelerator file's usual system
        if network is None:
            warnings.append(f"no default network for '{hw.name}': {FALLBACK_NETWORK} is used "
                            "(give --network NAME)")
            network = FALLBACK_NETWORK
    return Platform(hw, load_network(network), eff, tuple(warnings))
