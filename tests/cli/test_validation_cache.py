"""The validation cache: same answers, pydantic skipped on a hit, and nothing in it can change a
figure (it holds only digests of inputs that validated; every count comes from the input)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flopcalc.models import cache, registry
from flopcalc.models.files import read_mapping
from flopcalc.models.overrides import apply_overrides
from flopcalc.errors import FlopcalcError

pytestmark = [pytest.mark.invariant, pytest.mark.behaviour]


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
    seen = json.loads((cache_dir / "configs.json").read_text())["validated"] if (
        cache_dir / "configs.json").exists() else []
    raw = apply_overrides(read_mapping(registry.presets_dir() / "gpt2.yaml",
                                                         "model file"), ["n_kv_heads=5"])
    assert cache.key(raw) not in seen


def test_float_and_int_are_different_keys():
    assert cache.key({"d_model": 768}) != cache.key({"d_model": 768.0})
    assert cache.key({"final_norm": True}) != cache.key({"final_norm": 1})


@pytest.mark.parametrize("damage", [
    "not json", json.dumps({"versions": "flopcalc 0.0.0", "validated": []}), json.dumps([1, 2]),
    json.dumps({"versions": 1, "validated": [{"a": 1}, 5]}),
])
def test_a_damaged_or_foreign_cache_is_ignored(cache_dir, damage):
    (cache_dir / "configs.json").write_text(damage)
    assert registry.load_model("gpt2").spec.d_model == 768


def planted(cache_dir: Path, raw: dict) -> None:
    """Mark `raw` as validated in the cache, as someone who can write the directory could."""
    path = cache_dir / "configs.json"
    data = json.loads(path.read_text())
    data["validated"].append(cache.key(raw))
    path.write_text(json.dumps(data))


def gpt2_raw(*overrides: str) -> dict:
    raw = read_mapping(registry.presets_dir() / "gpt2.yaml", "model file")
    return apply_overrides(raw, overrides)


@pytest.mark.parametrize("edit", [
    "n_kv_heads=5",  # valid types, broken invariant
    "mlp=swiglu",  # not a choice
    "layer_types=[window]",  # no window size
    "n_layers=1000000000000",
    "bias.qkv=1",  # not a boolean
    "d_model=768.0",
])
def test_a_planted_entry_cannot_pass_an_invalid_input(cache_dir, cli, edit):
    registry.load_model("gpt2")
    planted(cache_dir, gpt2_raw(edit))
    r = cli("model", "gpt2", "--set", edit, "-f", "json")
    assert r.code == 2 and r.out == "" and r.err.startswith("flopcalc: error: gpt2: ")


def test_the_cache_holds_no_figures(cache_dir, cli):
    # The attack: a hand-edited entry for gpt2 at 6 layers must not pass a budget.
    registry.load_model("gpt2")
    text = (cache_dir / "configs.json").read_text()
    assert "768" not in text and "n_layers" not in text
    (cache_dir / "configs.json").write_text(text.replace("12", "6"))
    r = cli("check", "gpt2", "--max", "params.total=100M")
    assert r.code == 1


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "huge", "directory"])
def test_a_cache_file_that_is_not_a_small_regular_file_is_ignored(cache_dir, kind):
    import time

    path = cache_dir / "configs.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        path.write_text(json.dumps({"versions": "x", "validated": ["a" * 32] * 100_000}))
    else:
        path.mkdir()
    start = time.monotonic()
    assert registry.load_model("gpt2").spec.d_model == 768
    assert time.monotonic() - start < 5


def test_no_home_no_cache(tmp_path, monkeypatch):
    # A system user whose home does not exist: nothing is created, the run still works.
    home = tmp_path / "nonexistent"
    for name in ("FLOPCALC_CACHE_DIR", "XDG_CACHE_HOME", "FLOPCALC_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    assert registry.load_model("gpt2").spec.d_model == 768
    assert not home.exists()


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


KIND_PROBE = ("import sys; from flopcalc.cli import main; main(sys.argv[1:]);"
              "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules"
              " if m.startswith('flopcalc.kinds.')), file=sys.stderr)")


def kinds_imported(cache_dir: Path, *args: str) -> list[str]:
    import subprocess
    import sys

    env = {**os.environ, "FLOPCALC_CACHE_DIR": str(cache_dir)}
    r = subprocess.run([sys.executable, "-c", KIND_PROBE, *args], env=env,
                       capture_output=True, text=True, check=True)
    return eval(r.stderr.strip().splitlines()[-1])  # the probe's own printed list


def test_a_run_imports_only_the_kinds_its_model_names(cache_dir):
    """With the kinds listing remembered, gpt3 imports no state-space or linear-attention
    module, and a Mamba-2 model imports its own and nothing else new."""
    kinds_imported(cache_dir, "model", "gpt3", "-f", "json")  # writes the listing
    assert (cache_dir / "kinds.json").exists()
    plain = kinds_imported(cache_dir, "model", "gpt3", "-f", "json")
    assert "mamba2" not in plain and "gated_deltanet" not in plain and "vision" not in plain
    first = kinds_imported(cache_dir, "model", "mamba2-2.7b", "-f", "json")  # validated anew
    again = kinds_imported(cache_dir, "model", "mamba2-2.7b", "-f", "json")  # remembered
    assert set(first) - set(plain) == set(again) - set(plain) == {"mamba2"}


@pytest.mark.parametrize("listing", [
    '{"files": "%s", "modules": {"attention_layers": {"layer_types": ["mamba2"], '
    '"blocks": ["mamba2"]}}}',  # forged: points mamba2 at the wrong module
    '{"files": "%s", "modules": {"no_such_module": {"layer_types": [], "blocks": []}}}',
    '{"files": "%s", "modules": []}',
    "not json",
])
def test_a_wrong_kinds_listing_costs_a_full_import_never_a_wrong_count(cache_dir, cli, listing):
    from flopcalc.kinds import registry as kinds

    expected = cli("model", "mamba2-2.7b", "-f", "json").json()["params"]["total"]
    text = listing % kinds._fingerprint() if "%s" in listing else listing
    (cache_dir / "kinds.json").write_text(text)
    kinds._listing.cache_clear()
    try:
        assert cli("model", "mamba2-2.7b", "-f", "json").json()["params"]["total"] == expected
        r = cli("model", "gpt3", "-f", "json")
        assert r.code == 0, r.err
        assert r.json()["params"]["total"] == 174_604_259_328
    finally:
        kinds._listing.cache_clear()
