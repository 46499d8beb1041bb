"""Every preset's figures are what they were before the last change meant to move them
(`tests/golden.py` says what is recorded and how to rewrite it)."""

from __future__ import annotations

import json

import pytest

from flopcalc.models.registry import preset_names

from .golden import GOLDEN, record


def same(a: object, b: object) -> bool:
    """Counts must be equal; a float (a share, a time) may differ in its last bits when a
    change reorders the arithmetic that derives it from exact counts."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("name", preset_names())
def test_figures_unchanged(name):
    expected = json.loads((GOLDEN / f"{name}.json").read_text())
    got = record(name)
    changed = [f"{k}: {expected.get(k, '<absent>')} -> {got.get(k, '<absent>')}"
               for k in sorted(set(expected) | set(got))
               if not same(expected.get(k, ...), got.get(k, ...))]
    assert not changed, f"{len(changed)} figures changed:\n" + "\n".join(changed[:40])
