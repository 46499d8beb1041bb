"""The `check` report: numbers of a command's JSON report held against limits, for CI budget
gates. Any command with a JSON report can be checked (`flopcalc.commands.checkable()`). A limit
names a numeric key of that report in dotted form (`params.total`, `training.exact`,
`kv_cache.bytes`, `capacity.max_concurrency`, `time.step_seconds`, `mfu`, ...).

Keys into lists: an item of a list of records is named by its `name`, `model`, `option`, `seq`,
`rank` or `kind` field, the first one every item has, distinct and without a dot
(`models.gpt3.params_total` in compare, `rows.8192.forward` in sweep, `plans.1.mfu` for plan's
best layout, `conventions.six_nd.total`); else by its index from 0.

Intervals: a prediction given as `{low, estimate, high}` (step's `time.step_seconds`, `mfu`,
`throughput.tokens_per_second`, `training.days`) is checked at its conservative end when the
key names the interval itself: `--max` against `high`, `--min` against `low`, so a gate passes
only if every value the model allows passes; name an end (`time.step_seconds.estimate`) to check
that one. Each result says which figure it compared (`compared`).

Limits use the number syntax of the figure: a length key (`settings.seq`, `crossover.seq`,
`seq`, `settings.prompt`, `settings.max_model_len`) reads `k` = 1,024; a byte key
(`kv_cache.bytes`, `memory.total`) reads KB/KiB...; a share (`mfu`, `hfu`, `utilisation`,
`*_share`, `*_efficiency`, `*_fraction`, `*_utilization`: a fraction of 1 in the JSON) reads
`0.4` or `40%`; a percentage (`*_pct`: already in percent in the JSON) reads `5` or `5%` and may
be negative; every other key reads K = 1,000. A `max` holds when value <= limit, a `min` when
value >= limit; the margin is how far inside the limit the value is (negative when outside),
also as a percentage of the limit.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Any, Iterator, Optional, Union

from ..records import dataclass
from ..errors import FlopcalcError, suggest
from ..numbers import parse_decimal, parse_limit
from .common import SCHEMA_VERSION, Report, exact_number

Number = Union[int, float]
LENGTH_KEYS = ("settings.seq", "settings.tgt_seq", "crossover.seq", "settings.prompt",
               "settings.gen", "settings.context", "decode.context_first",
               "decode.context_last", "kv_cache.tokens", "prefill.tokens", "decode.tokens")
# Last parts of a key that are lengths wherever they appear (step's `seq`, sweep's rows).
LENGTH_NAMES = ("seq", "tgt_seq", "crossover_seq", "max_model_len", "prompt", "gen")
SHARE_NAMES = ("mfu", "hfu", "utilisation", "acceptance")
SHARE_SUFFIXES = ("_share", "_efficiency", "_fraction", "_utilization")
# Fields that name an item of a list of records, in order of preference.
ITEM_NAMES = ("name", "model", "option", "seq", "rank", "kind")
ENDS = ("low", "estimate", "high")
MAX_KEY = 200  # longer keys are not compared with the report's for a suggestion, nor quoted


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _item_names(items: list) -> tuple[list[str], str]:
    """The names of a list's records (see the module docstring) and the placeholder that
    stands for them in a listing of keys: `<model>`, or `<i>` for indices."""
    for name in ITEM_NAMES:
        values = [item.get(name) for item in items]
        if all(isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))
               for v in values):
            texts = [str(v) for v in values]
            if len(set(texts)) == len(texts) and all(t and "." not in t for t in texts):
                return texts, f"<{name}>"
    return [str(i) for i in range(len(items))], "<i>"


def _leaves(doc: Any, key: str = "", shape: str = "") -> Iterator[tuple[str, str, Number]]:
    """(dotted key, key with list items as placeholders, value) of every number in `doc`."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, f"{key}{k}.", f"{shape}{k}.")
    elif isinstance(doc, list) and doc and all(isinstance(x, dict) for x in doc):
        names, placeholder = _item_names(doc)
        for name, item in zip(names, doc):
            yield from _leaves(item, f"{key}{name}.", f"{shape}{placeholder}.")
    elif _is_number(doc):
        yield key[:-1], shape[:-1], doc


def numeric_leaves(doc: Any) -> Iterator[tuple[str, Number]]:
    """Every int or float in a nested report, with its dotted key (bools are not numbers;
    lists of numbers, such as layer indices, are not figures to gate)."""
    for key, _, value in _leaves(doc):
        yield key, value


def intervals(values: dict[str, Number]) -> set[str]:
    """The keys of `{low, estimate, high}` predictions among dotted numeric keys."""
    return {key[:-4] for key in values if key.endswith(".low")
            and all(f"{key[:-4]}.{end}" in values for end in ENDS)}


def limit_kind(key: str) -> str:
    """The number syntax of a limit on `key` (see the module docstring)."""
    parts = key.split(".")
    if any(p.endswith("_pct") for p in parts):
        return "percent"
    if any(p in SHARE_NAMES or p.endswith(SHARE_SUFFIXES) for p in parts):
        return "share"
    if key in LENGTH_KEYS or parts[-1] in LENGTH_NAMES:
        return "length"
    if "bytes" in key or key.startswith("memory."):
        return "bytes"
    return "count"


def parse_key_limit(raw: Any, kind: str, what: str) -> Fraction:
    """A limit in the syntax of its key's kind, exactly."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise FlopcalcError(f"{what}: a limit is one number, e.g. 3.3e23, 180B, 8k, 40GiB or "
                            "40% (a share)")
    text = raw.strip() if isinstance(raw, str) else raw
    percent = isinstance(text, str) and text.endswith("%")
    if percent and kind not in ("share", "percent"):
        raise FlopcalcError(f"{what}: '{text}': a % limit is for a share (mfu, hfu, "
                            "utilisation, *_share, *_efficiency, *_fraction) or a percentage "
                            "(*_pct); write this figure as a number")
    if percent:
        text = text[:-1]
    if kind == "percent":  # a signed figure (conventions' delta_pct): a limit may be below 0
        return parse_decimal(text, "count", what)
    value = Fraction(parse_limit(text, kind if kind in ("length", "bytes") else "count", what))
    return value / 100 if percent else value


def key_listing(doc: Any) -> list[str]:
    """The report's numeric keys with list items as placeholders (`plans.<rank>.mfu`), each
    once, components maps left out (they are named by the model's own parts)."""
    seen: dict[str, None] = {}
    for _, shape, _ in _leaves(doc):
        if ".components." not in shape and shape != "schema_version":
            seen.setdefault(shape)
    return list(seen)


def resolve(key: str, bound: str, command: str, doc: Any,
            values: dict[str, Number], ends: set[str]) -> str:
    """The figure a limit on `key` compares: the key itself, or an interval's conservative end;
    an unknown key is an error naming the close keys, else all of them."""
    if key in values:
        return key
    if key in ends:
        return f"{key}.{'high' if bound == 'max' else 'low'}"
    listing = key_listing(doc)
    hint = ""
    if len(key) <= MAX_KEY:
        # Close in spelling (time.step_second), else keys whose last part holds the word
        # (plan's mfu: plans.<rank>.mfu; serve's ttft: timing.ttft_bound_s, ...).
        word = key.rsplit(".", 1)[-1]
        near = [k for k in listing if word and word in k.rsplit(".", 1)[-1]]
        hint = suggest(key, [*values, *ends]) or (
            " did you mean " + " or ".join(f"'{k}'" for k in near) + "?"
            if 0 < len(near) <= 4 else "")
    hint = hint or f" its numeric keys: {', '.join(listing)}"
    raise FlopcalcError(f"--{bound} {shown(key)}: not a numeric key of the {command} report;"
                        f"{hint} (flopcalc schema {command} lists them)")


def shown(key: str) -> str:
    """A key as an error quotes it: a hostile one (a budget file's megabyte) cut short."""
    return key if len(key) <= MAX_KEY else key[:MAX_KEY] + "..."


@dataclass
class LimitResult:
    status: str  # PASS or FAIL
    model: str
    command: str
    key: str  # as the limit named it
    bound: str  # max or min
    value: Number
    limit: Number
    margin: Number  # how far inside the limit: negative when it does not hold
    margin_pct: Optional[float]  # margin as a percentage of the limit (None for a 0 limit)
    settings: str  # the resolved settings the value was computed at
    unit: str = "count"  # the key's number syntax: count, length, bytes, share or percent
    compared: str = ""  # the figure compared: the key, or an interval's end (key.high)


@dataclass
class CheckReport(Report):
    schema_version: int
    command: str
    passed: bool
    rows: list[LimitResult]
    warnings: list[str] = field(default_factory=list)


SHOWN_SETTINGS = ("seq", "tgt_seq", "prompt", "gen", "batch", "tokens", "attention", "scan",
                  "kv_dtype", "weights_dtype", "compute_dtype", "dtype", "count", "devices",
                  "mfu", "recompute", "dp", "tp", "pp", "vp", "cp", "ep", "zero", "micro_batch",
                  "global_batch", "max_model_len")
# Settings shown only when a run changed them: --scan matters to chunked-scan layers alone.
QUIET_DEFAULTS = {"scan": "chunked"}


def run_settings(report: dict[str, Any]) -> dict[str, Any]:
    """A report's resolved settings: its `settings`, else (step, plan, mfu) its top-level
    figures and its layout."""
    settings = report.get("settings")
    if isinstance(settings, dict):
        return settings
    layout = report.get("layout")
    return {**{k: v for k, v in report.items() if not isinstance(v, (dict, list))},
            **(layout if isinstance(layout, dict) else {})}


def describe_settings(settings: dict[str, Any]) -> str:
    """'seq=2048 batch=1 tokens=300000000000 attention=full': the run's resolved settings."""
    return " ".join(f"{k}={settings[k]}" for k in SHOWN_SETTINGS
                    if settings.get(k) is not None and settings[k] != QUIET_DEFAULTS.get(k))


def evaluate(model: str, command: str, report: dict[str, Any], limits: dict[str, Any],
             bound: str) -> list[LimitResult]:
    """One result per limit; an unknown key is an error listing the near or valid keys."""
    values = dict(numeric_leaves(report))
    ends = intervals(values)
    results = []
    for key, raw in limits.items():
        compared = resolve(key, bound, command, report, values, ends)
        kind = limit_kind(compared)
        limit = parse_key_limit(raw, kind, f"limit for {shown(key)}")
        value = values[compared]
        margin = (limit - Fraction(value)) if bound == "max" else (Fraction(value) - limit)
        results.append(LimitResult(
            status="PASS" if margin >= 0 else "FAIL", model=model, command=command, key=key,
            bound=bound, value=value, limit=exact_number(limit), margin=exact_number(margin),
            margin_pct=float(100 * margin / abs(limit)) if limit else None,
            settings=describe_settings(run_settings(report)), unit=kind, compared=compared))
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
