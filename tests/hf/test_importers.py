"""The Hugging Face importers of the model zoo: the six importer bugs (each from the config.json
transformers 5.24's save_pretrained writes, with the model's own counts in
tests/data/hf/zoo/expected.json), aliases under either name, the names of imported configs, and
the layouts transformers cannot run, refused in one line."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest

import flopcalc
from flopcalc.models import hf

pytestmark = [pytest.mark.recorded, pytest.mark.behaviour]

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
ZOO = DATA / "zoo"
EXPECTED = json.loads((ZOO / "expected.json").read_text())["bugs"]


def load(name: str) -> dict:
    return json.loads((ZOO / f"{name}.json").read_text())


def counts(tmp_path, data: dict, seq: int = 12, batch: int = 2, name: str = "config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    r = flopcalc.model(str(path), seq=seq, batch=batch)
    return r.params.total, r.flops.forward


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_bug_configs_count_as_transformers_builds_them(tmp_path, bug):
    want = EXPECTED[bug]
    assert counts(tmp_path, load(bug), want["seq"], want["batch"]) == \
        (want["params"], want["forward"])


def test_bug1_qwen3_moe_reads_num_local_experts(tmp_path):
    # save_pretrained writes Qwen3MoeConfig's num_experts as num_local_experts; published
    # Qwen3-MoE files say num_experts. Both are the same model.
    saved = load("1_qwen3_moe")
    assert "num_local_experts" in saved and "num_experts" not in saved
    published = {("num_experts" if k == "num_local_experts" else k): v for k, v in saved.items()}
    assert counts(tmp_path, saved) == counts(tmp_path, published)


def test_bug2_deepseek_v3_routes_every_layer_whatever_moe_layer_freq(tmp_path):
    saved = load("2_deepseek_v3")
    assert saved["moe_layer_freq"] == 2
    layers = flopcalc.model(str(ZOO / "2_deepseek_v3.json"), seq=12, batch=2).layers
    assert sum(x.n_layers for x in layers if "MoE" in x.kind) == 4
    assert counts(tmp_path, saved) == counts(tmp_path, {**saved, "moe_layer_freq": 1})


def test_bug3_qwen2_moe_gate_without_shared_expert():
    # d = 64: the gate d → 1 is 64 parameters per layer (2 layers) and (24×64)·(64×1) = 3,072
    # FLOPs per layer at 2 × 12 tokens.
    doc = flopcalc.model(str(ZOO / "3_qwen2_moe.json"), seq=12, batch=2).to_dict()
    assert doc["params"]["components"]["decoder.mlp.shared_gate.weight"] == 2 * 64
    assert doc["flops"]["components"]["decoder.mlp.shared_gate"] == 2 * 2 * 24 * 64


def test_bug4_untied_bert_keeps_both_output_biases():
    doc = flopcalc.model(str(ZOO / "4_bert.json"), seq=12, batch=2).to_dict()
    c = doc["params"]["components"]
    assert (c["lm_head.bias"], c["lm_head.extra_bias"]) == (128, 128)
    tied = flopcalc.model(str(DATA / "bert-base-uncased.json")).to_dict()["params"]
    assert "lm_head.extra_bias" not in tied["components"]


@pytest.mark.parametrize("bug", ["5a_gemma", "5b_gemma2", "5c_gemma3_text"])
def test_bug5_gemma_attention_bias(tmp_path, bug):
    # q 64 + k 32 + v 32 + o 64 = 192 per layer, 2 layers.
    saved = load(bug)
    with_bias, _ = counts(tmp_path, saved)
    without, _ = counts(tmp_path, {**saved, "attention_bias": False})
    assert with_bias - without == 2 * 192


def test_bug6_qwen2_moe_qkv_bias(tmp_path):
    # q 64 + k 32 + v 32 = 128 per layer, 2 layers; o never has one.
    saved = load("6_qwen2_moe")
    without, _ = counts(tmp_path, saved)
    with_bias, _ = counts(tmp_path, {**saved, "qkv_bias": True})
    assert with_bias - without == 2 * 128
    del saved["qkv_bias"]  # Qwen2MoeConfig's default is true
    assert counts(tmp_path, saved)[0] == with_bias


LLAMA_TINY = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
              "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 64, "rms_norm_eps": 1e-5}


def test_internlm3_reads_qkv_bias_and_bias(tmp_path):
    # Published InternLM3 files say qkv_bias and bias (attribute_map aliases of attention_bias
    # and mlp_bias): q 64 + k 32 + v 32 + o 64 and gate 96 + up 96 + down 64 per layer.
    base = {**LLAMA_TINY, "model_type": "internlm3", "num_hidden_layers": 2}
    plain, _ = counts(tmp_path, base)
    aliased, _ = counts(tmp_path, {**base, "qkv_bias": True, "bias": True})
    canonical, _ = counts(tmp_path, {**base, "attention_bias": True, "mlp_bias": True})
    assert aliased == canonical == plain + 2 * (192 + 256)


def test_exaone_reads_num_layers(tmp_path):
    # EXAONE 3's files say num_layers, layer_norm_epsilon and activation_function.
    base = {**LLAMA_TINY, "model_type": "exaone"}
    assert counts(tmp_path, {**base, "num_layers": 3}) == \
        counts(tmp_path, {**base, "num_hidden_layers": 3})


def test_gpt2_and_t5_read_either_name(tmp_path):
    gpt2 = json.loads((DATA / "gpt2.json").read_text())
    renamed = {{"n_embd": "hidden_size", "n_layer": "num_hidden_layers",
                "n_head": "num_attention_heads", "n_positions": "max_position_embeddings"
                }.get(k, k): v for k, v in gpt2.items()}
    assert counts(tmp_path, renamed) == counts(tmp_path, gpt2)


def test_a_config_json_is_named_after_its_directory(tmp_path, cli):
    for name, layers in (("Qwen2-0.5B", 24), ("Qwen2-0.5B-deep", 30)):
        (tmp_path / name).mkdir()
        data = json.loads((DATA / "qwen2-0.5b.json").read_text())
        (tmp_path / name / "config.json").write_text(json.dumps(
            {**data, "num_hidden_layers": layers}))
    a, b = tmp_path / "Qwen2-0.5B", tmp_path / "Qwen2-0.5B-deep" / "config.json"
    assert flopcalc.model(str(a)).to_dict()["model"]["name"] == "Qwen2-0.5B"
    doc = flopcalc.compare([str(a), str(b)], seq=128).to_dict()
    assert [m["model"] for m in doc["models"]] == ["Qwen2-0.5B", "Qwen2-0.5B-deep"]
    # A file named otherwise keeps its stem.
    assert flopcalc.model(str(DATA / "qwen2-0.5b.json")).to_dict()["model"]["name"] == \
        "qwen2-0.5b"


def test_a_hugging_face_cache_snapshot_is_named_after_its_repository(tmp_path):
    snapshot = tmp_path / "models--Qwen--Qwen2-0.5B" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((DATA / "qwen2-0.5b.json").read_text())
    assert flopcalc.model(str(snapshot)).to_dict()["model"]["name"] == "Qwen2-0.5B"


def test_standard_input_takes_name_or_path(monkeypatch, cli):
    import io
    import sys

    data = {**json.loads((DATA / "qwen2-0.5b.json").read_text()),
            "_name_or_path": "Qwen/Qwen2-0.5B-Instruct"}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(data).encode())))
    r = cli("model", "-", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["model"]["name"] == "Qwen2-0.5B-Instruct"


FALCON = {"model_type": "falcon", "vocab_size": 128, "hidden_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4}


@pytest.mark.parametrize("data, message", [
    ({**FALCON, "new_decoder_architecture": True, "parallel_attn": False},
     "new_decoder_architecture with parallel_attn false does not run in transformers"),
    ({**FALCON, "num_ln_in_parallel_attn": 2},
     "num_ln_in_parallel_attn 2 without new_decoder_architecture does not run"),
    ({"model_type": "gpt_bigcode", "vocab_size": 128, "n_embd": 64, "n_layer": 2, "n_head": 4,
      "n_positions": 64, "add_cross_attention": True},
     "add_cross_attention (cross-attention in a decoder without an encoder) is not counted"),
])
def test_layouts_outside_the_count_are_one_line(cli, tmp_path, data, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    r = cli("model", str(path))
    assert r.code == 2 and message in r.err and len(r.err.strip().splitlines()) == 1


def test_each_model_type_has_one_converter():
    # Converter modules are merged into one table: a type defined twice would silently take
    # whichever module sorts last.
    seen: dict[str, str] = {}
    for info in pkgutil.iter_modules(hf.__path__):
        module = importlib.import_module(f"{hf.__name__}.{info.name}")
        for model_type in getattr(module, "CONVERTERS", {}):
            assert model_type not in seen, (model_type, seen.get(model_type), info.name)
            seen[model_type] = info.name
    assert {"phi", "falcon", "opt", "bloom", "mpt", "granite", "exaone4", "olmo3",
            "cohere2", "apertus"} <= set(hf.supported())
