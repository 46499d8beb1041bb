"""The `check` report: numbers of a command's JSON report held against limits, for CI budget
gates. A limit names any numeric key of that report in dotted form (`params.total`,
`training.exact`, `kv_cache.bytes`, `days.exact`, `flops.components.lm_head`, ...).

Limits use the number syntax of the option the key echoes: a length key (`settings.seq`,
`crossover.seq`, `settings.prompt`) reads `k` = 1,024; a byte key (`kv_cache.bytes`,
`memory.total`) reads KB/KiB...; every other key reads K = 1,000. A `max` holds when value <=
limit, a `min` when value >= limit; the margin is how far inside the limit the value is
(negative when outside), also as a percentage of the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterator, Optional, Union

from ..errors import FlopcalcError, suggest
from ..numbers import Kind, parse_limit
from .common import SCHEMA_VERSION, Report, exact_number

Number = Union[int, float]
LENGTH_KEYS = ("settings.seq", "settings.tgt_seq", "crossover.seq", "settings.prompt",
               "settings.gen", "settings.context", "decode.context_first",
               "decode.context_last", "kv_cache.tokens", "prefill.tokens", "decode.tokens")


def numeric_leaves(doc: Any, prefix: str = "") -> Iterator[tuple[str, Number]]:
    """Every int or float in a nested dict, with its dotted key (bools are not numbers)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from numeric_leaves(value, f"{prefix}{key}.")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield prefix[:-1], doc


def limit_kind(key: str) -> Kind:
    """The number syntax of a limit on `key` (see the module docstring)."""
    if key in LENGTH_KEYS:
        return "length"
    if "bytes" in key or key.startswith("memory."):
        return "bytes"
    return "count"


@dataclass
class LimitResult:
    status: str  # PASS or FAIL
    model: str
    command: str
    key: str
    bound: str  # max or min
    value: Number
    limit: Number
    margin: Number  # how far inside the limit: negative when it does not hold
    margin_pct: Optional[float]  # margin as a percentage of the limit (None for a 0 limit)
    settings: str  # the resolved settings the value was computed at
    unit: str = "count"  # the number syntax of the key: count, length or bytes (limit_kind)


@dataclass
class CheckReport(Report):
    schema_version: int
    command: str
    passed: bool
    rows: list[LimitResult]
    warnings: list[str] = field(default_factory=list)


SHOWN_SETTINGS = ("seq", "tgt_seq", "prompt", "gen", "batch", "tokens", "attention", "scan",
                  "kv_dtype", "weights_dtype", "compute_dtype", "dtype", "count", "mfu",
                  "recompute", "dp", "tp", "pp", "ep", "zero")
# Settings shown only when a run changed them: --scan matters to chunked-scan layers alone.
QUIET_DEFAULTS = {"scan": "chunked"}


def describe_settings(settings: dict[str, Any]) -> str:
    """'seq=2048 batch=1 tokens=300000000000 attention=full': the run's resolved settings."""
    return " ".join(f"{k}={settings[k]}" for k in SHOWN_SETTINGS
                    if settings.get(k) is not None and settings[k] != QUIET_DEFAULTS.get(k))


def evaluate(model: str, command: str, report: dict[str, Any], limits: dict[str, Any],
             bound: str) -> list[LimitResult]:
    """One result per limit; an unknown key is an error listing the near or valid keys."""
    values = dict(numeric_leaves(report))
    results = []
    for key, raw in limits.items():
        if key not in values:
            valid = sorted(k for k in values if ".components." not in k)
            hint = suggest(key, values) or f" valid keys include: {', '.join(valid)}"
            raise FlopcalcError(f"--{bound} {key}: not a numeric key of the {command} report;"
                                f"{hint}")
        limit = Fraction(parse_limit(raw, limit_kind(key), f"limit for {key}"))
        value = values[key]
        margin = (limit - Fraction(value)) if bound == "max" else (Fraction(value) - limit)
        results.append(LimitResult(
            status="PASS" if margin >= 0 else "FAIL", model=model, command=command, key=key,
            bound=bound, value=value, limit=exact_number(limit), margin=exact_number(margin),
            margin_pct=float(100 * margin / limit) if limit else None,
            settings=describe_settings(report.get("settings", {})), unit=limit_kind(key)))
    return results


def parse_limit_options(options: list[str], bound: str) -> dict[str, str]:
    """`--max KEY=VALUE` options as a mapping (the values are parsed per key later)."""
    limits: dict[str, str] = {}
    for text in options:
        key, sep, value = text.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise FlopcalcError(f"--{bound} '{text}': expected KEY=VALUE, e.g. --{bound} "
                                "training.exact=3.3e23")
        limits[key.strip()] = value.strip()
    return limits


def build_check_report(results: list[LimitResult]) -> CheckReport:
    return CheckReport(SCHEMA_VERSION, "check", all(r.status == "PASS" for r in results),
                       results)
