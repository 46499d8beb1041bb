"""The validated-config cache: same answers, pydantic skipped on a hit, never trusted blindly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flopcalc.models import cache, registry
from flopcalc.errors import FlopcalcError


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FLOPCALC_NO_CACHE", raising=False)
    return tmp_path


def forbid_pydantic(monkeypatch):
    def boom(raw, label):
        raise AssertionError("validated again")

    import flopcalc.models.validation

    monkeypatch.setattr(flopcalc.models.validation, "validate_model", boom)


def test_second_load_skips_validation_and_matches(cache_dir, monkeypatch):
    first = registry.load_model("llama-3.1-8b").spec
    assert (cache_dir / "configs.json").exists()
    forbid_pydantic(monkeypatch)
    assert registry.load_model("llama-3.1-8b").spec == first


def test_an_override_is_a_different_entry(cache_dir, monkeypatch):
    registry.load_model("gpt2")
    forbid_pydantic(monkeypatch)
    with pytest.raises(AssertionError):
        registry.load_model("gpt2", ["n_layers=13"])


def test_invalid_configs_are_never_stored(cache_dir):
    for _ in range(2):
        with pytest.raises(FlopcalcError, match="n_kv_heads=5 must divide"):
            registry.load_model("gpt2", ["n_kv_heads=5"])
    entries = json.loads((cache_dir / "configs.json").read_text())["entries"] if (
        cache_dir / "configs.json").exists() else {}
    assert not any('"n_kv_heads":5' in key for key in entries)


def test_float_and_int_are_different_keys():
    assert cache.key({"d_model": 768}) != cache.key({"d_model": 768.0})
    assert cache.key({"final_norm": True}) != cache.key({"final_norm": 1})


@pytest.mark.parametrize("damage", [
    "not json", json.dumps({"versions": "flopcalc 0.0.0", "entries": {}}), json.dumps([1, 2]),
])
def test_a_damaged_or_foreign_cache_is_ignored(cache_dir, damage):
    (cache_dir / "configs.json").write_text(damage)
    assert registry.load_model("gpt2").spec.d_model == 768


def test_a_tampered_entry_is_revalidated(cache_dir, monkeypatch):
    registry.load_model("gpt2")
    path = cache_dir / "configs.json"
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry["d_model"] = -1
    path.write_text(json.dumps(data))
    assert registry.load_model("gpt2").spec.d_model == 768


@pytest.mark.parametrize("edit", [
    {"n_kv_heads": 5, "mlp": "swiglu"},  # an impossible model: must never be counted
    {"n_kv_heads": 5},  # valid types, broken invariant
    {"layer_types": ["window"]},  # no window size
    {"n_layers": 10**12},
    {"bias": {"qkv": 1}},
])
def test_an_entry_that_breaks_an_invariant_is_validated_again(cache_dir, cli, edit):
    registry.load_model("gpt2")
    path = cache_dir / "configs.json"
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry.update(edit)
    path.write_text(json.dumps(data))
    doc = cli("model", "gpt2", "--elementwise", "-f", "json")
    assert doc.code == 0 and doc.json()["params"]["total"] == 124_439_808


def test_no_cache_and_unwritable_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOPCALC_NO_CACHE", "1")
    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(tmp_path))
    registry.load_model("gpt2")
    assert not any(tmp_path.iterdir())
    monkeypatch.delenv("FLOPCALC_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(blocker / "sub"))
    assert registry.load_model("gpt2").spec.n_layers() == 12


def test_json_path_never_imports_pydantic_once_cached(cache_dir):
    import subprocess
    import sys

    env = {**os.environ, "FLOPCALC_CACHE_DIR": str(cache_dir)}
    probe = ("import sys, runpy; sys.argv=['flopcalc','model','gpt3','-f','json'];"
             "from flopcalc.cli import main; main(sys.argv[1:]);"
             "print('pydantic' in sys.modules, 'rich' in sys.modules, file=sys.stderr)")
    subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, check=True)
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, check=True)
    assert second.stderr.split()[-2:] == ["False", "False"]
