"""`serve --language-model-only`: a multimodal checkpoint served without its vision tower, as
vLLM's --language-model-only (0.33) or --limit-mm-per-prompt with image and video 0 (0.10,
0.11) loads it, and refused where the engine loads the tower whatever the limits."""

from __future__ import annotations

import pytest

from flopcalc import api

from tests.conftest import DATA

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

QWEN36 = str(DATA / "hf" / "quant" / "qwen3.6-35b-a3b-nvfp4.json")
# Qwen3.6-35B-A3B's tower: 446,571,248 parameters (worked in tests/kinds/
# test_qwen_vision_towers.py), kept in bf16 by the checkpoint: 893,142,496 bytes
TOWER_BYTES = 2 * 446_571_248


def test_the_tower_leaves_the_weights_and_the_memory_goes_to_the_cache():
    run = dict(accelerator="rtx-5090", max_model_len=32768, kv_dtype="fp8")
    whole = api.serve(QWEN36, **run)
    text = api.serve(QWEN36, language_model_only=True, **run)
    assert whole.weights.device_bytes[0] - text.weights.device_bytes[0] == TOWER_BYTES
    a = whole.capacity.memory.stages[0].available_bytes
    b = text.capacity.memory.stages[0].available_bytes
    assert b - a == TOWER_BYTES
    assert any("446,571,248 params) is not loaded" in line for line in text.conventions)


@pytest.mark.parametrize("model, engine, says", [
    (QWEN36, "vllm==0.8", "vLLM 0.8 loads the vision tower"),
    (QWEN36, "sglang", "sglang loads the vision tower"),
    ("llama-3.1-8b", "vllm", "has no vision tower")])
def test_refused_where_nothing_is_left_out(cli, model, engine, says):
    r = cli("serve", model, "--language-model-only", "--engine", engine, "--kv-memory", "1GiB")
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1
