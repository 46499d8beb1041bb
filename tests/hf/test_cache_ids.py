"""Model ids (`org/name`, `models--org--name`) read offline from a Hugging Face cache folder the
tests build themselves, in huggingface_hub's documented layout; a preset answers for a model id
no cache holds."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from flopcalc import api
from flopcalc.errors import FlopcalcError

from tests.conftest import run_process

pytestmark = [pytest.mark.published, pytest.mark.behaviour]

# A one-layer Llama: q, o 256×256, k, v 256×128, gate, up 256×512, down 512×256 = 589,824;
# embedding and untied head 2·64·256 = 32,768; two layer norms and the final norm 768:
# 623,360 parameters.
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
        "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 1, "vocab_size": 64, "max_position_embeddings": 256,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
PARAMS = 623_360
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache(root: Path, org: str, name: str, config: dict = TINY, commit: str = COMMIT) -> Path:
    """`root` laid out as huggingface_hub's cache holding org/name's config.json at main."""
    folder = root / f"models--{org}--{name}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snap = folder / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture
def hub(tmp_path, monkeypatch):
    root = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.chdir(tmp_path)  # no file here is named like a model id
    return root


def test_a_model_id_reads_the_main_snapshot(hub):
    cache(hub, "acme", "Tiny-1B")
    r = api.model("acme/Tiny-1B")
    assert r.params.total == PARAMS
    assert r.model.name == "Tiny-1B"
    # a later revision in refs/main is the one read
    (hub / "models--acme--Tiny-1B" / "refs" / "main").write_text("f" * 40)
    with pytest.raises(FlopcalcError, match="not|neither"):
        api.model("acme/Tiny-1B")


def test_the_cache_folder_name_and_path(hub):
    folder = cache(hub, "acme", "Tiny-1B")
    assert api.model("models--acme--Tiny-1B").params.total == PARAMS
    assert api.model(str(folder)).params.total == PARAMS


def test_hf_home_and_the_default_place(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    cache(tmp_path / "home" / "hub", "acme", "Tiny-1B")
    assert api.model("acme/Tiny-1B").params.total == PARAMS
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    cache(tmp_path / "user" / ".cache" / "huggingface" / "hub", "acme", "Other-2B")
    assert api.model("acme/Other-2B").params.total == PARAMS


def test_a_cached_checkpoint_brings_its_quantization(hub):
    cache(hub, "acme", "Tiny-FP8", {**TINY, "quantization_config": {
        "quant_method": "fp8", "weight_block_size": [128, 128]}})
    # 589,824 fp8 values + 36 fp32 tile scales + the rest in bf16 (33,536·2)
    w = api.serve("acme/Tiny-FP8", kv_memory="1GiB").weights
    assert w.bytes == 589_824 + 144 + 67_072


def test_a_ref_that_is_not_a_hash_is_not_followed(hub):
    cache(hub, "acme", "Tiny-1B", commit="../../../../etc")
    with pytest.raises(FlopcalcError, match="Hugging Face cache"):
        api.model("acme/Tiny-1B")


def test_the_cache_wins_over_a_preset(hub):
    cache(hub, "openai", "gpt-oss-20b")
    assert api.model("openai/gpt-oss-20b").params.total == PARAMS


def test_a_preset_answers_for_an_uncached_id_and_says_so(tmp_path):
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "empty"), "NO_COLOR": "1"}
    r = run_process("model", "openai/gpt-oss-20b", "--format", "json", env=env)
    assert r.returncode == 0, r.stderr
    # gpt-oss-20b's preset: 20,914,757,184 parameters (OpenAI's model card: 20.91B)
    assert json.loads(r.stdout)["params"]["total"] == 20_914_757_184
    assert "not in the Hugging Face cache" in r.stderr and "gpt-oss-20b" in r.stderr
    # by the preset's name when no preset records the repository
    r = run_process("model", "Qwen/Qwen3-14B", "--format", "json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["model"]["name"] == "qwen3-14b"


def test_an_unknown_id_is_one_line_and_exit_2(tmp_path):
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "empty")}
    r = run_process("model", "acme/Nowhere-7B", env=env)
    assert r.returncode == 2 and r.stdout == ""
    line = r.stderr.strip()
    assert "\n" not in line and "acme/Nowhere-7B" in line and "huggingface-cli download" in line


def test_online_fetch_only_when_asked(hub, tmp_path, monkeypatch):
    # a stand-in for huggingface_hub: records the call, "downloads" the tiny config
    import types

    calls = []

    def hf_hub_download(repo_id, filename, cache_dir=None):
        calls.append((repo_id, filename))
        path = tmp_path / "fetched" / "config.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(TINY))
        return str(path)

    monkeypatch.setitem(sys.modules, "huggingface_hub",
                        types.SimpleNamespace(hf_hub_download=hf_hub_download))
    monkeypatch.delenv("FLOPCALC_ONLINE", raising=False)
    with pytest.raises(FlopcalcError, match="neither a file"):
        api.model("acme/Remote-1B")
    assert calls == []  # offline unless asked
    monkeypatch.setenv("FLOPCALC_ONLINE", "1")
    assert api.model("acme/Remote-1B").params.total == PARAMS
    assert calls == [("acme/Remote-1B", "config.json")]  # config.json alone
