"""Every preset's figures are what they were before the last change meant to move them
(`tests/golden/__init__.py` says what is recorded and how to rewrite it)."""

from __future__ import annotations

import json

import pytest

from flopcalc.models.registry import preset_names

from tests.golden import (GOLDEN, read, record, record_text, record_workflows, record_zoo,
                     zoo_types)

pytestmark = pytest.mark.golden


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


@pytest.mark.parametrize("name", preset_names())
def test_wording_unchanged(name):
    # the notes, "how this was counted" lines and layer descriptions a user reads
    expected = json.loads((GOLDEN / "text" / f"{name}.json").read_text())
    got = record_text(name)
    changed = [f"{k}:\n  {expected.get(k, '<absent>')!r}\n  -> {got.get(k, '<absent>')!r}"
               for k in sorted(set(expected) | set(got)) if expected.get(k, ...) != got.get(k, ...)]
    assert not changed, f"{len(changed)} lines changed (python -m tests.golden {name} if " \
        "meant):\n" + "\n".join(changed[:20])


def test_zoo_is_recorded_for_every_type():
    assert sorted(p.name[:-len(".json.gz")] for p in (GOLDEN / "zoo").glob("*.json.gz")) == \
        zoo_types()


@pytest.mark.parametrize("model_type", zoo_types())
def test_zoo_unchanged(model_type):
    changed = _changes(read(GOLDEN / "zoo" / f"{model_type}.json.gz"), record_zoo(model_type))
    assert not changed, f"{len(changed)} figures or lines changed (python -m tests.golden " \
        f"{model_type} if meant):\n" + "\n".join(changed[:40])


def _changes(expected: dict, got: dict) -> list[str]:
    return [f"{section} {k}: {expected[section].get(k, '<absent>')!r} -> "
            f"{got[section].get(k, '<absent>')!r}"
            for section in ("numbers", "text")
            for k in sorted(set(expected[section]) | set(got[section]))
            if not same(expected[section].get(k, ...), got[section].get(k, ...))]


@pytest.mark.parametrize("name", preset_names())
def test_workflows_unchanged(name):
    changed = _changes(read(GOLDEN / "workflows" / f"{name}.json.gz"), record_workflows(name))
    assert not changed, f"{len(changed)} figures or lines changed (python -m tests.golden " \
        f"{name} if meant):\n" + "\n".join(changed[:40])
