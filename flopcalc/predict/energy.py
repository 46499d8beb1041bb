"""Energy per output token under load: the devices' board power while serving over the output
tokens they make each second.

A board draws at most its configured power limit (the datasheet's TDP: each accelerator
preset's `board_watts`, with its source) and, serving LLMs, less: "Energy Use of AI Inference: Efficiency Pathways and Test-Time Compute"
(2025) models a serving node's steady draw as centred on 0.7 of its maximum, 0.4 to 0.9 of it
between its 5th and 95th percentiles (`POWER_SHARE`). Joules per output token = devices x TDP x
share / output tokens/s, the low end at the least share and the most tokens/s, the high end at
the most share and the fewest. Only the accelerators count (not the hosts, the network, the
cooling: a data centre's PUE multiplies it).
"""

from __future__ import annotations

POWER_SHARE = (0.4, 0.7, 0.9)  # of the board's TDP while serving: low, estimate, high


def joules_per_token(watts: float, devices: int,
                     tokens_per_second: tuple[float, float, float]) -> tuple[float, float, float]:
    """(low, estimate, high) joules per output token: `tokens_per_second` (low, estimate,
    high) of all `devices` together, each board at `watts` x POWER_SHARE."""
    lo_t, est_t, hi_t = tokens_per_second
    ends = ((POWER_SHARE[0], hi_t), (POWER_SHARE[1], est_t), (POWER_SHARE[2], lo_t))
    return tuple(devices * watts * share / t if t else 0.0  # type: ignore[return-value]
                 for share, t in ends)
