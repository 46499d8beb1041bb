"""`flopcalc check`: compare numbers of a model report against limits, for CI budget gates.

A limit names any numeric key of `flopcalc model --format json` in dotted form
(`params.total`, `flops.forward`, `training.exact`, `flops.components.lm_head`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

from .errors import FlopcalcError
from .numbers import DECIMAL_SUFFIXES
from .registry import suggest
from .report import exact_number

Number = Union[int, float]


def numeric_leaves(doc: Any, prefix: str = "") -> Iterator[tuple[str, Number]]:
    """Every int or float in a nested dict, with its dotted key (bools are not numbers)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from numeric_leaves(value, f"{prefix}{key}.")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield prefix[:-1], doc


def parse_limit(text: Any, key: str) -> Fraction:
    """A limit: any non-negative number in the human syntax (`3.3e23`, `180B`, `27.5`)."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise FlopcalcError(f"limit for {key}: {text!r} is not a number; write e.g. 3.3e23 or 180B")
    raw = str(text).strip().replace("_", "").replace(",", "")
    scale = 1
    if raw and raw[-1].lower() in DECIMAL_SUFFIXES:
        scale, raw = DECIMAL_SUFFIXES[raw[-1].lower()], raw[:-1]
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise FlopcalcError(f"limit for {key}: '{text}' is not a number; write e.g. 3.3e23 or "
                            "180B") from None
    if not value.is_finite() or value < 0:
        raise FlopcalcError(f"limit for {key}: '{text}' must be a finite number >= 0")
    return Fraction(value) * scale


@dataclass
class LimitResult:
    status: str
    model: str
    key: str
    value: Number
    limit: Number
    margin: Number  # limit − value: negative when exceeded
    margin_pct: Optional[float]  # margin as a percentage of the limit (None for a 0 limit)
    seq: int  # the resolved settings the value was computed at
    tokens: int
    batch: int
    attention: str


def evaluate(model_name: str, report: dict[str, Any], limits: Dict[str, Any]) -> list[LimitResult]:
    values = dict(numeric_leaves(report))
    settings = report["settings"]
    results = []
    for key, raw_limit in limits.items():
        if key not in values:
            valid = sorted(k for k in values if ".components." not in k)
            hint = suggest(key, values) or f" valid keys include: {', '.join(valid)}"
            raise FlopcalcError(f"--max {key}: not a numeric key of the model report;{hint}")
        limit = parse_limit(raw_limit, key)
        value = values[key]
        margin = limit - Fraction(value)
        results.append(LimitResult(
            status="PASS" if margin >= 0 else "FAIL", model=model_name, key=key, value=value,
            limit=exact_number(limit), margin=exact_number(margin),
            margin_pct=float(100 * margin / limit) if limit else None,
            seq=settings["seq"], tokens=settings["tokens"], batch=settings["batch"],
            attention=settings["attention"]))
    return results


def parse_max_options(options: List[str]) -> Dict[str, str]:
    limits: Dict[str, str] = {}
    for text in options:
        key, sep, value = text.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise FlopcalcError(f"--max '{text}': expected KEY=VALUE, e.g. --max training.exact=3.3e23")
        limits[key.strip()] = value.strip()
    return limits


# ------------------------------------------------------------------------------- budget files

_STRICT = ConfigDict(extra="forbid", frozen=True)
Human = Union[StrictInt, float, StrictStr]


class BudgetCheck(BaseModel):
    """One entry of a budget file's `checks` list."""

    model_config = _STRICT

    model: StrictStr
    seq: Optional[Human] = None
    tgt_seq: Optional[Human] = None
    batch: Human = 1
    tokens: Optional[Human] = None
    attention: str = "full"
    set: List[StrictStr] = []
    max: Dict[StrictStr, Human]


class BudgetFile(BaseModel):
    model_config = _STRICT

    checks: List[BudgetCheck]


def read_budget(path: Path) -> BudgetFile:
    from .registry import read_mapping
    from .validation import validate

    budget = validate(BudgetFile, read_mapping(path, "budget file"), str(path))
    if not budget.checks:
        raise FlopcalcError(f"{path}: 'checks' is empty; add at least one entry with a model "
                            "and a max mapping")
    for i, entry in enumerate(budget.checks):
        if not entry.max:
            raise FlopcalcError(f"{path}: checks.{i}.max is empty; give at least one limit")
    return budget


def model_ref(entry_model: str, budget_path: Path) -> str:
    """A model path in a budget file is relative to the file; a preset name stays as is."""
    from .registry import looks_like_path

    if looks_like_path(entry_model) and not Path(entry_model).is_absolute():
        return str(budget_path.parent / entry_model)
    return entry_model


def run_budget(path: Path) -> list[LimitResult]:
    """Every limit of every entry of a budget file; an error names the entry."""
    from .numbers import parse_count, parse_length
    from .registry import load_model
    from .report import build_report

    results = []
    for i, entry in enumerate(read_budget(path).checks):
        try:
            if entry.attention not in ("full", "causal"):
                raise FlopcalcError(f"attention: '{entry.attention}' must be full or causal")
            report = build_report(
                load_model(model_ref(entry.model, path), entry.set),
                seq=None if entry.seq is None else parse_length(entry.seq, "seq"),
                tgt_seq=None if entry.tgt_seq is None else parse_length(entry.tgt_seq, "tgt_seq"),
                batch=parse_count(entry.batch, "batch"),
                tokens=None if entry.tokens is None else parse_count(entry.tokens, "tokens"),
                attention=entry.attention)  # type: ignore[arg-type]
            results += evaluate(entry.model, report.to_dict(), entry.max)
        except FlopcalcError as exc:
            raise FlopcalcError(f"{path}: checks.{i} ({entry.model}): {exc}") from None
    return results
