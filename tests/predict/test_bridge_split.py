"""The development and held-out halves of Megatron-Bridge's published runs (tests/bridge_runs.py
`half`): a fixed rule, so that the held-out figures in docs/validation-training.md are of runs
no constant was tuned to."""

from __future__ import annotations

import hashlib

import pytest

from tests.bridge_runs import CONFIGURATION, half, runs

pytestmark = pytest.mark.behaviour


def test_the_halves_are_the_rules():
    rows = runs()
    for r in rows:
        key = "/".join(str(r.get(k)) for k in CONFIGURATION)
        odd = hashlib.sha256(key.encode()).digest()[0] % 2
        assert half(r) == ("held-out" if odd else "development")
    # counted once when the rule was fixed: 80 development runs, 119 held out
    assert sum(half(r) == "development" for r in rows) == 80
    assert sum(half(r) == "held-out" for r in rows) == 119


def test_a_configuration_measured_in_several_releases_stays_in_one_half():
    seen: dict[tuple, str] = {}
    for r in runs():
        key = tuple(r.get(k) for k in CONFIGURATION)
        assert seen.setdefault(key, half(r)) == half(r)
    assert len(seen) == 83  # distinct configurations among the 199 runs
