"""JSON and CSV: for scripts and spreadsheets, every count exact.

One rule for every CSV: the first column is the model (so the CSVs of several runs concatenate
into one sheet), the run's settings follow as columns where rows would otherwise be ambiguous,
booleans are `true`/`false`, a missing value is empty, and floats are written in Python's
shortest round-trip form (`27.717`, `1.5e-05`). Text is guarded as `escape` says: control
characters escaped in every format, and a text cell a spreadsheet would run as a formula
(`=...`, `+...`, `-...`, `@...`) starts with `'`.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional, Sequence

from .escape import csv_text, has_raw, json_safe


def to_json(data: Any) -> str:
    """`json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)`, to the byte, written
    by hand, and the same for a report's dataclasses as for `dataclasses.asdict` of them (each
    a dict of its fields, in order). With an indent the standard library falls back to its
    pure-Python encoder, a generator per container, which cost a 10,000-row sweep as long as
    its counting; here strings go through the library's own (C) escaping, and a long list of
    records through its C encoder at once (`_records`). NaN and Infinity are not JSON and a
    report must never contain them: they raise ValueError, as json.dumps does. The characters
    JSON lets through raw (DEL, C1, the bidirectional controls) are then escaped (`json_safe`).
    """
    return json_safe(_dumps(data, "\n", _writers()))


def to_yaml(data: Any) -> str:
    """A mapping as YAML (`show`). PyYAML escapes C0 and C1 but lets the bidirectional controls
    through under allow_unicode: a document holding any is written with every non-ASCII
    character escaped instead (the same values, in YAML's own escapes)."""
    import yaml

    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=96)
    if has_raw(text):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False, width=96)
    return text


def _writers() -> dict[type, Any]:
    """How each scalar is written, by its exact type."""
    from json.encoder import encode_basestring

    return {str: encode_basestring, int: int.__repr__, float: _float, bool: _bool,
            type(None): _null}


def _bool(o: bool) -> str:
    return "true" if o else "false"


def _null(o: None) -> str:
    return "null"


_FIELDS: dict[type, Optional[tuple[str, ...]]] = {}  # a class's dataclass fields (None: none)


def _fields(cls: type) -> Optional[tuple[str, ...]]:
    if cls not in _FIELDS:
        import dataclasses

        _FIELDS[cls] = (tuple(f.name for f in dataclasses.fields(cls))
                        if dataclasses.is_dataclass(cls) else None)
    return _FIELDS[cls]


def _dumps(o: Any, newline: str, writers: dict[type, Any]) -> str:
    """`o` as JSON; `newline` is a line break and the current indent."""
    write = writers.get(o.__class__)
    if write is not None:
        return write(o)
    cls, inner = o.__class__, newline + "  "
    get, text = writers.get, writers[str]
    if cls is dict:
        if not o:
            return "{}"
        return "{" + inner + ("," + inner).join([
            (text(k) if k.__class__ is str else _key(k, text)) + ": "
            + (w(v) if (w := get(v.__class__)) is not None else _dumps(v, inner, writers))
            for k, v in o.items()]) + newline + "}"
    if cls is list or cls is tuple:
        if not o:
            return "[]"
        items = _records(o, inner) if len(o) >= _MANY else None
        if items is None:
            items = [w(v) if (w := get(v.__class__)) is not None else _dumps(v, inner, writers)
                     for v in o]
        return "[" + inner + ("," + inner).join(items) + newline + "]"
    names = _fields(cls)
    if names is not None:  # a dataclass: as asdict makes it
        return _dumps({name: getattr(o, name) for name in names}, newline, writers)
    return _dumps(_promoted(o), newline, writers)


_MANY = 32  # a list this long may be a table of records
_SCALARS = frozenset((str, int, float, bool, type(None)))
_SEPARATOR = "\x00"  # between values in the C encoder's output: JSON writes it as \u0000


def _records(rows: Any, newline: str) -> Optional[list[str]]:
    """Many records (dicts, or dataclasses of one class: a sweep's rows) as `_dumps` writes
    them, when their values are scalars or dicts of scalars: every value of every row is
    written by the standard library's C encoder in one call, and the rows by one %-format of
    their templates (keys, and a %s per value) joined. None when the rows are not like that
    (the caller writes them one by one); else one item, the rows joined as the caller would."""
    import json
    from operator import attrgetter

    cls = rows[0].__class__
    names = None if cls is dict else _fields(cls)
    if cls is not dict and not names:
        return None
    values = attrgetter(*names) if names and len(names) > 1 else None
    patterns: dict[Any, Any] = {}
    flat: list[Any] = []
    used = []
    for row in rows:
        if row.__class__ is not cls:
            return None
        if names is None:
            vals, keys = tuple(row.values()), tuple(row)
        else:
            vals = values(row) if values is not None else (getattr(row, names[0]),)
            keys = names
        kinds = tuple(map(type, vals))
        pattern = patterns.get((keys, kinds))
        if pattern is None:
            pattern = patterns[(keys, kinds)] = _pattern(keys, kinds, vals, newline)
            if pattern is None:
                return None
        template, nested = pattern
        if not nested:
            flat += vals
        else:
            start = 0
            for at, inner_keys in nested:
                d = vals[at]
                if tuple(d) != inner_keys or not _SCALARS.issuperset(map(type, d.values())):
                    return None
                flat += vals[start:at]
                flat += d.values()
                start = at + 1
            flat += vals[start:]
        used.append(template)
    encoded = json.JSONEncoder(ensure_ascii=False, allow_nan=False,
                               separators=(_SEPARATOR, ": ")).encode(flat)
    texts = encoded[1:-1].split(_SEPARATOR) if flat else []
    if len(texts) != len(flat):
        return None
    return [("," + newline).join(used) % tuple(texts)]


def _pattern(keys: tuple[Any, ...], kinds: tuple[type, ...], vals: tuple[Any, ...],
             newline: str) -> Optional[tuple[str, list[tuple[int, tuple[Any, ...]]]]]:
    """The %-template of a record with these keys and kinds of value, and the positions of its
    nested dicts (with their keys); None when a value is neither a scalar nor a dict of
    scalars."""
    from json.encoder import encode_basestring as text

    inner, deeper = newline + "  ", newline + "    "

    def name(k: Any) -> str:
        return (text(k) if k.__class__ is str else _key(k, text)).replace("%", "%%")

    if not keys:
        return "{}", []
    items, nested = [], []
    for at, (key, kind) in enumerate(zip(keys, kinds)):
        if kind in _SCALARS:
            items.append(f"{name(key)}: %s")
        elif kind is dict:
            d = vals[at]
            if not _SCALARS.issuperset(map(type, d.values())):
                return None
            nested.append((at, tuple(d)))
            body = ("{" + deeper + ("," + deeper).join(f"{name(k)}: %s" for k in d)
                    + inner + "}") if d else "{}"
            items.append(f"{name(key)}: {body}")
        else:
            return None
    return "{" + inner + ("," + inner).join(items) + newline + "}", nested


def _float(o: float) -> str:
    if o - o != 0.0:  # NaN, or an infinity (inf − inf is NaN)
        raise ValueError(f"Out of range float values are not JSON compliant: {o!r}")
    return float.__repr__(o)


def _key(key: Any, text: Any) -> str:
    """A dict key as json.dumps writes it: floats, booleans, None and ints as text."""
    if isinstance(key, str):
        return text(key)
    if isinstance(key, float):
        return text(_float(key))
    if key is True or key is False or key is None:
        return text({True: "true", False: "false", None: "null"}[key])
    if isinstance(key, int):
        return text(int.__repr__(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _promoted(o: Any) -> Any:
    """A subclass of str, int, float, list, tuple or dict as json.dumps writes it (an IntEnum
    as its int); anything else is not JSON."""
    if isinstance(o, str):
        return str.__str__(o)
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o)
    if isinstance(o, (list, tuple)):
        return list(o)
    if isinstance(o, dict):
        return dict(o)
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


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
