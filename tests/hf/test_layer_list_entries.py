"""A per-layer list with an entry the family does not know gets one line naming the key and the
index of the first bad entry (and what the entries may be), exit 2; the layer count it
contradicts is named the same way. Each case is a published config.json with one entry changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.behaviour

HF = Path(__file__).resolve().parents[1] / "data" / "hf"

# (config, key, the entries to cycle through when the config has no list, what may be listed)
CASES = [
    ("gated_deltanet/qwen3-next-80b-a3b-instruct.json", "layer_types",
     ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
     "'linear_attention', 'full_attention'"),
    ("mamba2_hybrids/granite-4.0-h-small.json", "layer_types", None, "'mamba'"),
    ("linear_hybrids/kimi-linear-48b-a3b.json", "mlp_layer_types", ["dense", "sparse"],
     "'dense', 'sparse'"),
    ("sparse/deepseek-v3.2.json", "mlp_layer_types", ["dense", "sparse"],
     "'dense', 'sparse'"),
    ("mamba2_hybrids/nemotron-h-8b-base-8k.json", "layers_block_type",
     ["mamba", "attention", "mlp"], "'mamba'"),
]


def _write(tmp_path: Path, data: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def _one_line(r) -> str:
    assert r.code == 2 and r.out == "", (r.code, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.err, r.err
    return lines[0]


@pytest.mark.parametrize("name,key,cycle,allowed", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("index", [0, 5])
def test_an_unknown_entry_is_named_with_its_index(cli, tmp_path, name, key, cycle, allowed,
                                                  index):
    data = json.loads((HF / name).read_text())
    text = data.get("text_config", data)
    n = text["num_hidden_layers"]
    listed = list(text.get(key) or [cycle[i % len(cycle)] for i in range(n)])
    if key == "layers_block_type":
        text.pop("hybrid_override_pattern", None)
    listed[index] = "bogus"
    text[key] = listed
    line = _one_line(cli("model", _write(tmp_path, data)))
    assert f"{key}[{index}] = 'bogus' must be one of" in line and allowed in line


def test_a_pattern_character_is_named_with_its_index(cli, tmp_path):
    data = json.loads((HF / "mamba2_hybrids/nemotron-h-8b-base-8k.json").read_text())
    pattern = data["hybrid_override_pattern"]
    data["hybrid_override_pattern"] = pattern[:7] + "X" + pattern[8:]
    line = _one_line(cli("model", _write(tmp_path, data)))
    assert "hybrid_override_pattern[7] = 'X' must be M, *, - or E" in line


@pytest.mark.parametrize("name,key,cycle,allowed", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_a_list_shorter_than_the_layer_count_is_named(cli, tmp_path, name, key, cycle, allowed):
    data = json.loads((HF / name).read_text())
    text = data.get("text_config", data)
    n = text["num_hidden_layers"]
    listed = list(text.get(key) or [cycle[i % len(cycle)] for i in range(n)])
    text[key] = listed[:-1]
    line = _one_line(cli("model", _write(tmp_path, data)))
    assert f"{key} has {n - 1:,} entries, num_hidden_layers is {n:,}" in line
