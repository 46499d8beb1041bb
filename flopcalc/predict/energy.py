"""Energy per output token under load: the devices' board power while serving over the output
tokens they make each second.

A board draws at most its configured power limit (the datasheet's TDP, `BOARD_WATTS`) and,
serving LLMs, less: "Energy Use of AI Inference: Efficiency Pathways and Test-Time Compute"
(2025) models a serving node's steady draw as centred on 0.7 of its maximum, 0.4 to 0.9 of it
between its 5th and 95th percentiles (`POWER_SHARE`). Joules per output token = devices x TDP x
share / output tokens/s, the low end at the least share and the most tokens/s, the high end at
the most share and the fewest. Only the accelerators count (not the hosts, the network, the
cooling: a data centre's PUE multiplies it).
"""

from __future__ import annotations

from typing import Optional

# (watts, where the figure comes from), by accelerator preset name (`presets/accelerators/`)
BOARD_WATTS: dict[str, tuple[float, str]] = {
    "a100-pcie-40gb": (250.0, "NVIDIA A100 datasheet (2020): PCIe 40GB, 250 W"),
    "a100-sxm-80gb": (400.0, "NVIDIA A100 datasheet: SXM4 80GB, 400 W"),
    "h100-pcie": (350.0, "NVIDIA H100 datasheet: H100 PCIe, 300-350 W (configurable)"),
    "h100-sxm": (700.0, "NVIDIA H100 datasheet: H100 SXM, up to 700 W (configurable)"),
    "h200": (700.0, "NVIDIA H200 datasheet: H200 SXM, up to 700 W (configurable)"),
    "b200": (1000.0, "NVIDIA HGX B200: 1,000 W per B200"),
    "gb200": (1200.0, "NVIDIA GB200 NVL72: up to 1,200 W per Blackwell GPU"),
    "gb300": (1400.0, "NVIDIA GB300 NVL72: up to 1,400 W per Blackwell Ultra GPU"),
    "mi300x": (750.0, "AMD Instinct MI300X data sheet: 750 W"),
    "mi325x": (1000.0, "AMD Instinct MI325X data sheet (2024): 1,000 W"),
    "mi355x": (1400.0, "AMD Instinct MI355X (OAM, liquid-cooled): 1,400 W"),
}
POWER_SHARE = (0.4, 0.7, 0.9)  # of the board's TDP while serving: low, estimate, high


def board_watts(accelerator: str) -> Optional[tuple[float, str]]:
    """The TDP of an accelerator preset and its source (None: no published figure here, as
    for the TPU v5p, or a device read from a file)."""
    return BOARD_WATTS.get(accelerator)


def joules_per_token(watts: float, devices: int,
                     tokens_per_second: tuple[float, float, float]) -> tuple[float, float, float]:
    """(low, estimate, high) joules per output token: `tokens_per_second` (low, estimate,
    high) of all `devices` together, each board at `watts` x POWER_SHARE."""
    lo_t, est_t, hi_t = tokens_per_second
    ends = ((POWER_SHARE[0], hi_t), (POWER_SHARE[1], est_t), (POWER_SHARE[2], lo_t))
    return tuple(devices * watts * share / t if t else 0.0  # type: ignore[return-value]
                 for share, t in ends)
