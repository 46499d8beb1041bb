"""JSON and CSV: for scripts and spreadsheets, every count exact.

One rule for every CSV: the first column is the model (so the CSVs of several runs concatenate
into one sheet), the run's settings follow as columns where rows would otherwise be ambiguous,
booleans are `true`/`false`, a missing value is empty, and floats are written in Python's
shortest round-trip form (`27.717`, `1.5e-05`). Text is guarded as `escape` says: control
characters escaped in every format, and a text cell a spreadsheet would run as a formula
(`=...`, `+...`, `-...`, `@...`) starts with `'`.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

from .escape import csv_text, has_raw, json_safe


def to_json(data: Any) -> str:
    import json

    # allow_nan=False: NaN and Infinity are not JSON; a report must never contain them.
    return json_safe(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


def to_yaml(data: Any) -> str:
    """A mapping as YAML (`show`). PyYAML escapes C0 and C1 but lets the bidirectional controls
    through under allow_unicode: a document holding any is written with every non-ASCII
    character escaped instead (the same values, in YAML's own escapes)."""
    import yaml

    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=96)
    if has_raw(text):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False, width=96)
    return text


def cell(value: Any) -> Any:
    """A CSV cell under the one rule above."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        value = " x ".join(map(str, value))
    if isinstance(value, str):
        return csv_text(value)
    return value


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([cell(v) for v in row] for row in rows)
    return buf.getvalue()


def leaves(data: dict[str, Any], path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(section, name, value) for every scalar of a nested dict; lists are left out (they have
    their own rows where a CSV needs them)."""
    for key, value in data.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{path}.{key}" if path else key)
        elif not isinstance(value, list):
            yield (path or key), key, value


# Units of the long CSVs (infer, train, memory): exact keys first, then the first matching word.
_UNIT_OF_KEY = {"settings.context": "tokens", "settings.seq": "tokens", "settings.prompt":
                "tokens", "settings.gen": "tokens", "decode.steps": "steps", "weights.params":
                "params", "accelerator.count": "devices", "settings.count": "devices",
                "settings.mfu": "fraction", "training.n": "params", "training.passes": "passes",
                "settings.dp": "devices", "settings.tp": "devices", "settings.pp": "devices",
                "settings.ep": "devices"}
_UNIT_OF_WORD = (("tokens_per_s", "tokens/s"), ("arithmetic_intensity", "FLOP/byte"),
                 ("peak_flops", "FLOP/s"), ("achieved_flops", "FLOP/s"),
                 ("bandwidth", "bytes/s"), ("steps", "steps"), ("seconds", "s"),
                 ("compute_s", "s"), ("memory_s", "s"), ("bytes", "bytes"), ("memory", "bytes"),
                 ("flops", "FLOPs"), ("days", "days"), ("hours", "hours"), ("pct", "%"),
                 ("tokens", "tokens"), ("factor", "x"), ("six_nd", "FLOPs"),
                 ("exact", "FLOPs"), ("mtp", "FLOPs"), ("cost", "price"), ("batch", "sequences"),
                 ("params", "params"), ("experts", "experts"))


def unit(section: str, name: str, value: Any) -> str:
    if isinstance(value, str) or isinstance(value, bool) or value is None:
        return ""
    path = f"{section}.{name}"
    if section.endswith("components"):
        return "bytes" if "bytes" in section or section.startswith("memory") else "FLOPs"
    if path in _UNIT_OF_KEY:
        return _UNIT_OF_KEY[path]
    for word, result in _UNIT_OF_WORD:
        if word in path:
            return result
    return ""


def long_csv(keys: Sequence[str], key_values: Sequence[Any], doc: dict[str, Any],
             sections: Sequence[str]) -> str:
    """A report as one row per number: the `keys` columns (model and settings), then section,
    name, value and unit."""
    rows = []
    for section in sections:
        value = doc.get(section)
        if isinstance(value, dict):
            rows += [[*key_values, sec, name, leaf, unit(sec, name, leaf)]
                     for sec, name, leaf in leaves(value, section)]
        elif value is not None and not isinstance(value, list):
            rows.append([*key_values, "result", section, value, unit("", section, value)])
    return to_csv([*keys, "section", "name", "value", "unit"], rows)
