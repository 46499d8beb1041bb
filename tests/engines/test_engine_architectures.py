"""`serve --engine sglang==X` / `vllm==X` refuses a model whose architecture the release does
not implement (flopcalc/engines/data/architectures.json, generated from each release's own model
registry by tools/sglang_reference/architectures.py), in one line, naming the release that has
it; a model every release implements, or one that names no architecture, is sized.

Where each expectation comes from (the releases' sources, not flopcalc):
- SGLang 0.5.5's sglang/srt/models/ has no granitemoehybrid module (nor has 0.5.5.post3's);
  0.5.23's granitemoehybrid.py:739 `EntryClass = [GraniteMoeHybridForCausalLM]`.
- SGLang 0.4.9's llama.py:723 and 0.5.5's / 0.5.23's llama.py register LlamaForCausalLM; every
  vLLM release's _VLLM_MODELS (0.6: _MODELS) has "LlamaForCausalLM".
- vLLM 0.8.0 and 0.8.5.post1 registry.py list GraniteForCausalLM, GraniteMoeForCausalLM and
  GraniteMoeSharedForCausalLM only; 0.10.0 registry.py:78 adds GraniteMoeHybridForCausalLM.
- SGLang 0.4.9 has no nemotron_h module; 0.5.5's nemotron_h.py:511 `EntryClass =
  [NemotronHForCausalLM]` (the nemotron-h-8b preset's checkpoint names that architecture).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import flopcalc
from flopcalc.errors import FlopcalcError
from tests.conftest import ROOT, run

pytestmark = [pytest.mark.engine, pytest.mark.recorded]

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "serve" / "configs"
GRANITE = CONFIGS / "granite-4.0-h-tiny.json"
LLAMA = CONFIGS / "llama-3.1-8b.json"


def refused(cli, *args) -> str:
    r = cli("serve", *map(str, args))
    assert r.code == 2, r.out[:200]
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err[:500]
    return lines[0]


@pytest.mark.parametrize("engine", ["sglang==0.5.5", "sglang==0.5.5.post2", "sglang==0.4.9"])
def test_granite_hybrid_is_refused_before_0_5_23(cli, engine: str) -> None:
    err = refused(cli, GRANITE, "--engine", engine, "--accelerator", "h100")
    assert "implements no GraniteMoeHybridForCausalLM" in err
    assert f"SGLang {engine.split('==')[1][:5]}" in err
    assert err.endswith("give --engine sglang==0.5.23")


def test_granite_hybrid_is_sized_by_0_5_23(cli) -> None:
    g = run(cli, "serve", GRANITE, "--engine", "sglang==0.5.23", "--accelerator", "h100")
    assert g["sglang"]["version"] == "0.5.23"
    assert g["sglang"]["max_total_num_tokens"] > 0


def test_the_python_api_refuses_too() -> None:
    with pytest.raises(FlopcalcError, match="SGLang 0.5.5 implements no GraniteMoeHybrid"):
        flopcalc.serve(str(GRANITE), engine="sglang==0.5.5", accelerator="h100")


@pytest.mark.parametrize("engine", ["vllm==0.8", "vllm==0.8.0", "vllm==0.6"])
def test_vllm_before_0_10_has_no_granite_hybrid(cli, engine: str) -> None:
    err = refused(cli, GRANITE, "--engine", engine, "--kv-memory", "10GiB")
    assert "implements no GraniteMoeHybridForCausalLM" in err
    assert err.endswith("give --engine vllm==0.10.0")


def test_vllm_0_10_sizes_granite_hybrid(cli) -> None:
    r = cli("serve", str(GRANITE), "--engine", "vllm==0.10", "--kv-memory", "10GiB",
            "-f", "json")
    assert r.code == 0, r.err


@pytest.mark.parametrize("engine", ["sglang==0.4.9", "sglang==0.5.5", "sglang==0.5.23",
                                    "vllm==0.6", "vllm==0.8", "vllm==0.10", "vllm==0.11",
                                    "vllm==0.33"])
def test_an_architecture_every_release_has_is_sized(cli, engine: str) -> None:
    r = cli("serve", str(LLAMA), "--engine", engine, "--kv-memory", "10GiB", "-f", "json")
    assert r.code == 0, r.err


def test_a_preset_naming_its_architecture_is_checked(cli) -> None:
    err = refused(cli, "nemotron-h-8b", "--engine", "sglang==0.4.9", "--kv-memory", "10GiB")
    assert "SGLang 0.4.9 implements no NemotronHForCausalLM (added by 0.5.5" in err


def test_a_model_naming_no_architecture_is_not_refused_for_it(cli, tmp_path: Path) -> None:
    """Llama's config.json without `architectures`: nothing to check, so sized."""
    data = json.loads(LLAMA.read_text())
    del data["architectures"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    r = cli("serve", str(path), "--engine", "vllm==0.6", "--kv-memory", "10GiB", "-f", "json")
    assert r.code == 0, r.err


@pytest.mark.parametrize("name", ["\x1b[31mLlama\x07ForCausalLM\x1b]0;pwned\x07",
                                  "A" * 10_000, "Gpt\r\nForCausalLM\u202e"])
def test_a_hostile_architecture_gets_a_clean_line(cli, tmp_path: Path, name: str) -> None:
    data = json.loads(LLAMA.read_text())
    data["architectures"] = [name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    err = refused(cli, path, "--engine", "sglang==0.5.5", "--kv-memory", "10GiB")
    assert "SGLang 0.5.5 implements no " in err
    assert "nor does any release flopcalc read" in err
    assert err.isprintable()  # no escape, bell, carriage return or direction override
    assert not any(c in err for c in "\x1b\x07\r\u202e")
    assert len(err) < 400


def test_the_lists_are_read_only_when_a_release_is_named() -> None:
    """Start-up time: plain --engine vllm never reads the generated lists."""
    code = ("import sys, flopcalc\n"
            f"flopcalc.serve({str(LLAMA)!r}, kv_memory='10GiB')\n"
            "print('flopcalc.engines.architectures' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-500:]


def test_every_release_flopcalc_knows_has_its_registry_read() -> None:
    """A release added to flopcalc's arithmetic without regenerating the lists would go
    unchecked: each SGLang release and vLLM line must have a registry read."""
    from flopcalc.engines.architectures import registry_release
    from flopcalc.engines.registry import VLLM_DEFAULTS
    from flopcalc.engines.sglang import SGLANG_RELEASES

    for version in SGLANG_RELEASES:
        assert registry_release("sglang", version) == version
    for line in VLLM_DEFAULTS:
        assert registry_release("vllm", line) is not None, line


def _tool():
    import importlib.util

    path = ROOT / "tools" / "sglang_reference" / "architectures.py"
    spec = importlib.util.spec_from_file_location("architectures_tool", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generator_reads_registries_as_the_engines_do(tmp_path: Path) -> None:
    """A made-up release: SGLang registers each EntryClass class under its `__name__` (an alias
    or an import registers the class it binds), skips packages and modules without one; vLLM's
    table is the union, a comprehension over an earlier table included."""
    tool = _tool()
    models = tmp_path / "sg" / "sglang" / "srt" / "models"
    (models / "sub").mkdir(parents=True)
    (models / "__init__.py").write_text("")
    (models / "a.py").write_text("class AForCausalLM: pass\nB = AForCausalLM\n"
                                 "class C: pass\nEntryClass = [B, C]\n")
    (models / "d.py").write_text("from sglang.srt.models.a import C as D\n"
                                 "class EModel(D): pass\nEntryClass = EModel\n")
    (models / "helpers.py").write_text("class NotRegistered: pass\n")
    (models / "sub" / "x.py").write_text("class XForCausalLM: pass\nEntryClass = XForCausalLM\n")
    assert tool.sglang_architectures(tool.Source(str(tmp_path / "sg"), "sglang")) == \
        ["AForCausalLM", "C", "EModel"]
    reg = tmp_path / "vl" / "vllm" / "model_executor" / "models"
    reg.mkdir(parents=True)
    (reg / "registry.py").write_text(
        '_TEXT = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM"), "Q": ("q", "Q")}\n'
        '_EMB = {"LlamaModel": ("llama", "X"), **{k: v for k, v in _TEXT.items() '
        'if v[1] == "LlamaForCausalLM"}}\n'
        '_OTHER = {"NotServed": ("n", "N")}\n'
        '_VLLM_MODELS = {**_TEXT, **_EMB}\n')
    assert tool.vllm_architectures(tool.Source(str(tmp_path / "vl"), "vllm")) == \
        ["LlamaForCausalLM", "LlamaModel", "Q"]
