"""Cross-check against PyTorch: FlopCounterMode's forward FLOPs and PyTorch's parameter counts
for the same architectures built with HF transformers (GPT-2, Llama), a hand-written GPT module
(GPT-3 13B, whose heads are narrower than d_model) and torch.nn.Transformer (transformer-base).

Needs torch and transformers (`pip install torch==2.13.0 transformers`); skipped without them.
Models are built on the meta device, so even 405B parameters cost no memory.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from flopcalc.registry import load_model  # noqa: E402

from . import torchref  # noqa: E402
from .conftest import DATA  # noqa: E402

pytestmark = pytest.mark.torch

# Non-powers of two, the model's own context, and lengths beyond it.
SEQS = (1000, 3001)
EXTRA = {"gpt2": (1024, 4096), "gpt3": (2048, 8192), "llama-3.1-8b": (131_072,),
         "transformer-base": (256,)}
CASES = [(name, seq) for name in sorted(torchref.PRESETS)
         for seq in SEQS + EXTRA.get(name, ())]


def flopcalc_counts(cli, model: str, seq: int, batch: int = 1) -> tuple[int, int]:
    r = cli("model", model, "--seq", seq, "--attention", "full", "--batch", batch, "-f", "json")
    assert r.code == 0, r.err
    report = r.json()
    return report["params"]["total"], report["flops"]["forward"]


@pytest.mark.parametrize("name, seq", CASES)
def test_preset_matches_pytorch(cli, name, seq):
    ref = torchref.count(torchref.PRESETS[name], seq)
    assert flopcalc_counts(cli, name, seq) == (ref["params"], ref["forward_flops"])


@pytest.mark.parametrize("name", ["gpt2", "llama-3.1-8b", "transformer-base"])
def test_batch_scales_like_pytorch(cli, name):
    ref = torchref.count(torchref.PRESETS[name], 777, batch=3)
    assert flopcalc_counts(cli, name, 777, batch=3) == (ref["params"], ref["forward_flops"])


@pytest.mark.parametrize("path", sorted((DATA / "hf").glob("*.json")), ids=lambda p: p.stem)
@pytest.mark.parametrize("seq", SEQS)
def test_hf_config_matches_pytorch(cli, path, seq):
    ref = torchref.count_hf_config(path, seq)
    assert flopcalc_counts(cli, str(path), seq) == (ref["params"], ref["forward_flops"])


@pytest.mark.parametrize("name", sorted(torchref.PRESETS))
def test_reference_dims_match_presets(name):
    """torchref's architectures are typed in by hand; make sure they describe the presets."""
    cfg, arch = load_model(name).config, torchref.PRESETS[name]
    assert (arch["layers"], arch["d_model"], arch["heads"], arch["kv_heads"], arch["head_dim"],
            arch["d_ff"], arch["vocab"]) == (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.kv_heads,
                                             cfg.d_head, cfg.d_ff, cfg.vocab_size)
