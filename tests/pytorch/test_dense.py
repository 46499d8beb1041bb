"""Cross-check against PyTorch: FlopCounterMode's forward FLOPs and PyTorch's parameter counts
for the presets built with HF transformers (GPT-2, Llama), a hand-written GPT module (heads
narrower than d_model) and torch.nn.Transformer (transformer-base, source ≠ target length), and
for every published config.json fixture (dense types; the mixtures of experts are in
tests/pytorch/test_moe.py).

Needs torch and transformers (`pip install -r tests/requirements-torch.txt`); skipped without
them. Models are built on the meta device, so even 405B parameters cost no memory.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from flopcalc.counting.model import tower_params  # noqa: E402
from flopcalc.models.registry import load_model  # noqa: E402

from tests import hfref, torchref  # noqa: E402
from tests.conftest import DATA  # noqa: E402

pytestmark = pytest.mark.torch

# Non-powers of two, the model's own context, and lengths beyond it.
SEQS = (1000, 3001)
EXTRA = {"gpt2": (1024, 4096), "gpt3": (2048, 8192), "llama-3.1-8b": (131_072,),
         "transformer-base": (256,)}
CASES = [(name, seq) for name in sorted(torchref.PRESETS)
         for seq in SEQS + EXTRA.get(name, ())]


def counts(cli, model: str, seq: int, batch: int = 1, *extra: str) -> tuple[int, int]:
    r = cli("model", model, "--seq", seq, "--attention", "full", "--batch", batch, *extra,
            "-f", "json")
    assert r.code == 0, r.err
    report = r.json()
    return report["params"]["total"], report["flops"]["forward"]


@pytest.mark.parametrize("name, seq", CASES)
def test_preset_matches_pytorch(cli, name, seq):
    ref = torchref.count(torchref.PRESETS[name], seq)
    assert counts(cli, name, seq) == (ref["params"], ref["forward_flops"])


@pytest.mark.parametrize("name", ["gpt2", "llama-3.1-8b", "transformer-base"])
def test_batch_scales_like_pytorch(cli, name):
    ref = torchref.count(torchref.PRESETS[name], 777, batch=3)
    assert counts(cli, name, 777, 3) == (ref["params"], ref["forward_flops"])


def test_heads_narrower_than_d_model(cli):
    """GPT-3 13B as Table 2.1 prints it: d_model 5140, 40 heads of 128 (a hand-written GPT
    module, since HF's GPT-2 needs heads x head_dim = d_model)."""
    arch = dict(torchref.PRESETS["gpt3-13b"], d_model=5140, d_ff=4 * 5140)
    ref = torchref.count(arch, 1000)
    assert counts(cli, "gpt3-13b", 1000, 1, "--set", "d_model=5140", "--set", "head_dim=128",
                  "--set", "d_ff=20560") == (ref["params"], ref["forward_flops"])


def test_encoder_decoder_with_source_and_target_lengths_that_differ(cli):
    """nn.Transformer with 300 source and 120 target tokens: cross-attention's keys and values
    come from the source, its queries from the target."""
    import torch

    model = torchref.build(torchref.PRESETS["transformer-base"])
    src = torch.zeros(2, 300, dtype=torch.long, device="meta")
    tgt = torch.zeros(2, 120, dtype=torch.long, device="meta")
    flops = torchref.forward_flops(model, (src, tgt))
    r = cli("model", "transformer-base", "--seq", 300, "--tgt-seq", 120, "--batch", 2, "-f",
            "json").json()
    assert r["flops"]["forward"] == flops


@pytest.mark.parametrize("name", sorted(torchref.PRESETS))
def test_reference_dims_match_presets(name):
    """torchref's architectures are typed in by hand; make sure they describe the presets."""
    spec, arch = load_model(name).spec, torchref.PRESETS[name]
    first = spec.groups(spec.output_stack)[0].layer
    att, mlp = first.mixers[0], first.ffn
    assert (arch["layers"], arch["d_model"], arch["heads"], arch["kv_heads"], arch["head_dim"],
            arch["d_ff"], arch["vocab"]) == (spec.n_layers(spec.output_stack), spec.d_model,
                                             att.heads, att.kv_heads, att.qk_dim, mlp.d_ff,
                                             spec.vocab_size)


FIXTURES = sorted(p for p in (DATA / "hf").glob("*.json"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_published_config_params(cli, path):
    """transformers' own modules on the meta device. T5: transformers 5 ties the LM head
    whatever the config says; an untied checkpoint (Flan-T5) holds V x d more."""
    config = hfref.load_config(path)
    params = hfref.param_count(hfref.build(config))
    text = hfref.text_config(config)
    raw = json.loads(path.read_text())
    if text.model_type == "t5" and not raw.get("tie_word_embeddings", True):
        params += text.vocab_size * text.d_model
    vision = sum(p.value for p in tower_params(load_model(str(path)).spec))  # not in hfref's
    assert counts(cli, str(path), 16)[0] - vision == params


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("seq", (257, 1000))
def test_published_config_flops(cli, path, seq):
    config = hfref.load_config(path)
    tgt = 100 if hfref.text_config(config).model_type == "t5" else None
    extra = ("--tgt-seq", str(tgt)) if tgt else ()
    assert counts(cli, str(path), seq, 1, *extra)[1] == hfref.forward_flops(config, seq,
                                                                            tgt_seq=tgt)
