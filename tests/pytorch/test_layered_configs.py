"""Layered architectures against transformers 5 and PyTorch 2.13, run for real on CPU: small
configs designed to break assumptions (odd head widths, windows shorter than the sequence,
patterns that do not start with a window layer, encoder and decoder lengths that differ) for
every dense model type flopcalc imports.

For each: parameters; FlopCounterMode forward FLOPs (eager attention) at a length that is not a
multiple of the window and one shorter than it, batch 1 and 3; the (query, key) pairs the mask
each attention call receives lets through, layer by layer, against `--attention causal`; and,
for the windowed decoders, every decode step over the sliding-window cache. `expected.json`
records the same numbers for runs without torch (tests/hf/test_recorded_layers.py); these tests redo
them live. The reference code is tests/hfref.py.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests import hfref  # noqa: E402
from tests.conftest import DATA, run  # noqa: E402

pytestmark = pytest.mark.torch

SMALL = sorted((DATA / "hf" / "small").glob("*.json"))
SMALL = [p for p in SMALL if p.name != "expected.json"]


def config_of(path):
    return hfref.load_config(path)


def report(cli, path, *args) -> dict:
    return run(cli, "model", path, *args)


def lengths(path):
    t5 = json.loads(path.read_text())["model_type"] == "t5"
    return [(13, 7 if t5 else None), (4, 9 if t5 else None)]


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_params(cli, path):
    config = config_of(path)
    params = hfref.param_count(hfref.build(config, "cpu"))
    raw = json.loads(path.read_text())
    if raw["model_type"] == "t5" and not raw.get("tie_word_embeddings", True):
        params += raw["vocab_size"] * raw["d_model"]  # transformers 5 ties T5's head regardless
    assert report(cli, path, "--seq", 8)["params"]["total"] == params


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_forward_flops(cli, path, batch):
    config = config_of(path)
    for seq, tgt in lengths(path):
        torch_flops = hfref.forward_flops(config, seq, batch, tgt_seq=tgt, device="cpu")
        extra = ["--tgt-seq", tgt] if tgt else []
        doc = report(cli, path, "--seq", seq, "--batch", batch, *extra)
        assert doc["flops"]["forward"] == torch_flops, (seq, tgt)


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_causal_pairs_are_the_masks_visible_entries(cli, path):
    """--attention causal counts each layer's visible pairs: compare the attention-matrix FLOPs
    with 2·h·(d_qk + d_v) per visible entry of the masks transformers builds."""
    config = hfref.text_config(config_of(path))
    heads = config.num_attention_heads if hasattr(config, "num_attention_heads") else \
        config.num_heads
    head = getattr(config, "head_dim", None) or getattr(config, "d_kv", None) or \
        config.hidden_size // heads
    for seq, tgt in lengths(path):
        pairs = hfref.visible_pairs(config, seq, tgt_seq=tgt)
        extra = ["--tgt-seq", tgt] if tgt else []
        doc = report(cli, path, "--seq", seq, "--attention", "causal", *extra)
        assert doc["flops"]["attention"] == sum(pairs.values()) * 2 * heads * 2 * head


WINDOWED = [p for p in SMALL if json.loads(p.read_text()).get("sliding_window")]


@pytest.mark.parametrize("path", WINDOWED, ids=lambda p: p.stem)
def test_window_layers_as_transformers_derives_them(cli, path):
    """The layer kinds flopcalc derives equal the layer_types transformers builds."""
    config = hfref.text_config(config_of(path))
    types = getattr(config, "layer_types", None) or ["sliding_attention"] * \
        config.num_hidden_layers
    doc = report(cli, path)
    window = [g["n_layers"] for g in doc["layers"] if g["kind"].startswith("sliding window")]
    assert sum(window) == types.count("sliding_attention")


@pytest.mark.parametrize("path", WINDOWED, ids=lambda p: p.stem)
def test_decode_over_a_sliding_window_cache(cli, path):
    """A window layer's decode step attends over min(c, w) keys: transformers' keys per step
    and layer, turned into attention FLOPs, equal flopcalc's step by step."""
    config = hfref.text_config(config_of(path))
    prompt, gen = 3, 9  # the window (at most 6) fills up part way through
    trace = hfref.decode_cache_lengths(config, prompt, gen)
    heads = config.num_attention_heads
    head = getattr(config, "head_dim", None) or config.hidden_size // heads
    for step, keys in enumerate(trace["keys"][1:], start=1):
        c = prompt + step
        r = cli("infer", str(path), "--prompt", str(c - 1), "--gen", "1", "-f", "json").json()
        assert r["decode"]["attention"] == 4 * heads * head * sum(keys), c
