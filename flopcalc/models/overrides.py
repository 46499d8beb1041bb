"""`--set KEY=VALUE`: change any config field before validation, exactly as if the YAML said it.

The value is read as YAML (`true`, `4096`, `[window, full]`), so it is checked by the same
schema as a file; dotted keys reach nested groups (`bias.qkv=false`, `moe.top_k=4`)."""

from __future__ import annotations

import copy
from typing import Any, Iterable

from ..errors import FlopcalcError


def parse_override(text: str) -> tuple[list[str], Any]:
    """'bias.qkv=false' → (['bias', 'qkv'], False). The value is read as a YAML scalar."""
    from .files import parse_yaml

    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise FlopcalcError(f"--set '{text}': expected KEY=VALUE, e.g. --set n_layers=48")
    parsed = parse_yaml(value, f"--set {key}") if value.strip() else None
    if isinstance(parsed, dict):
        raise FlopcalcError(f"--set {key}: give a value or a [list], not a mapping; set nested "
                            f"keys one by one ({key}.KEY=VALUE)")
    return key.split("."), parsed


def apply_overrides(raw: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """A copy of `raw` with each override applied. Unknown keys are left for validation to
    reject, so a typo gets the same message as in a YAML file."""
    overrides = list(overrides)
    if not overrides:
        return raw
    out = copy.deepcopy(raw)
    for text in overrides:
        path, value = parse_override(text)
        node = out
        for part in path[:-1]:
            child = node.get(part)
            if isinstance(child, bool) and part == "bias":
                child = {"qkv": child, "attn_out": child, "mlp": child}
            if child is None:
                child = {}
            if not isinstance(child, dict):
                raise FlopcalcError(f"--set {'.'.join(path)}: '{part}' is not a group of keys")
            node[part] = child
            node = child
        node[path[-1]] = value
    return out
