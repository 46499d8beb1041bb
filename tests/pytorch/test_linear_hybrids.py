"""Kimi Linear, MiniMax-01 and LFM2 against transformers 5.24: the presets' totals are the
parameters of the models built on the meta device from the published configs
(tests/data/hf/linear_hybrids/, SOURCES.md there), and those configs import to the presets'
figures; a decode step of small models, run for real on a cache, is flopcalc's recurrence plus
the differences its notes name (Hugging Face's 2-column decode conv, its element-wise delta
rule, its kᵀv matmul, its re-expanded MLA). Forward FLOPs, variants and the cache bytes after a
real generate are in the sweep (tests/sweep/cases_linear_hybrids.py)."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import flopcalc  # noqa: E402

from tests.conftest import DATA  # noqa: E402

pytestmark = pytest.mark.torch
HYBRIDS = DATA / "hf" / "linear_hybrids"

# (fixture, preset, parameters of the model transformers builds from it)
PUBLISHED = [("kimi-linear-48b-a3b", "kimi-linear-48b-a3b", 49_122_675_072),
             ("minimax-text-01", "minimax-text-01", 456_089_655_296)]


def hf_config(name: str):
    from transformers import AutoConfig

    raw = json.loads((HYBRIDS / f"{name}.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Kimi's rope_scaling: null, deprecated but inert
        return AutoConfig.for_model(raw.pop("model_type"), **raw)


def meta_params(config) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("fixture, preset, total", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_presets_are_the_published_models(fixture, preset, total):
    config = hf_config(fixture)
    assert meta_params(config) == total
    imported = flopcalc.model(str(HYBRIDS / f"{fixture}.json"), seq=4096)
    shipped = flopcalc.model(preset, seq=4096)
    assert imported.params.total == shipped.params.total == total
    assert imported.params.active == shipped.params.active
    assert imported.flops.forward == shipped.flops.forward


def test_the_kimi_checkpoint_layer_lists_are_one_indexed():
    config = hf_config("kimi-linear-48b-a3b")
    assert [i for i, t in enumerate(config.layer_types) if t == "full_attention"] == [
        3, 7, 11, 15, 19, 23, 26]
    doc = flopcalc.load(str(HYBRIDS / "kimi-linear-48b-a3b.json")).spec
    mixers = [layer.mixers[0].slot for layer in doc.layers]
    assert [i for i, m in enumerate(mixers) if m == "attn"] == [3, 7, 11, 15, 19, 23, 26]


# ------------------------------------------------------------------------------ decode steps

TINY = {
    "kimi_linear": dict(vocab_size=97, hidden_size=64, intermediate_size=96,
                        moe_intermediate_size=24, num_hidden_layers=5, num_attention_heads=4,
                        num_key_value_heads=4, kv_lora_rank=16, qk_rope_head_dim=8,
                        qk_nope_head_dim=16, v_head_dim=12, num_local_experts=4,
                        num_experts_per_tok=2, linear_head_dim=8, linear_num_heads=4,
                        linear_conv_kernel_dim=4, pad_token_id=0, bos_token_id=1,
                        eos_token_id=2),
    "minimax": dict(vocab_size=97, hidden_size=64, intermediate_size=48, num_hidden_layers=4,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    num_local_experts=4, num_experts_per_tok=2, block_size=16),
    "lfm2": dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, conv_L_cache=3,
                 full_attn_idxs=[1, 3], block_multiple_of=16),
}


def hf_decode_step(model_type: str, batch: int, prompt: int) -> tuple[int, object]:
    """FlopCounterMode's count of one decode step after a prompt of `prompt` tokens (eval mode,
    eager attention and experts, fp32), and the config."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(model_type, **TINY[model_type])
    torch.manual_seed(0)
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                                 experts_implementation="eager").eval()
        ids = torch.randint(3, 97, (batch, prompt + 1))
        with torch.no_grad():
            out = model(ids[:, :prompt], use_cache=True)
            with FlopCounterMode(display=False) as counter:
                model(ids[:, prompt:], cache=out.cache, use_cache=True)
    return counter.get_total_flops(), config


def saved(config) -> dict:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config.save_pretrained(tmp)
        return json.loads((Path(tmp) / "config.json").read_text())


def ours_decode_step(config, batch: int, prompt: int):
    """flopcalc's first decode step after `prompt` tokens, and its components."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(saved(config)))
        doc = flopcalc.infer(str(path), prompt=prompt, gen=1, batch=batch).to_dict()
    return doc["decode"]["flops_first"], doc["decode"]["components"]


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("prompt", [3, 20])
def test_kimi_decode_step(batch, prompt):
    hf, c = hf_decode_step("kimi_linear", batch, prompt)
    ours, parts = ours_decode_step(c, batch, prompt)
    H, D, K = c.linear_num_heads, c.linear_head_dim, c.linear_conv_kernel_dim
    kda = sum(t == "linear_attention" for t in c.layer_types)
    mla = len(c.layer_types) - kda
    # KDA: Hugging Face's conv over a K-column state returns 2 columns (2·B·3HD·K more); its
    # delta rule (7·H·D² + 2·H·D per token here) is element-wise, 0 to FlopCounterMode.
    conv_extra = 2 * batch * 3 * H * D * K
    scan = batch * (7 * H * D * D + 2 * H * D)
    # MLA: Hugging Face re-expands all P + 1 latents with kv_b and scores decompressed heads;
    # flopcalc decodes weight-absorbed.
    h, R, r, n, v = (c.num_attention_heads, c.kv_lora_rank, c.qk_rope_head_dim,
                     c.qk_nope_head_dim, c.v_head_dim)
    keys = prompt + 1
    hf_mla = (2 * batch * keys * R * h * (n + v) + 2 * batch * h * keys * (n + r)
              + 2 * batch * h * keys * v)
    ours_mla = (2 * batch * h * n * R + 2 * batch * h * keys * (R + r) + 2 * batch * h * keys * R
                + 2 * batch * h * R * v)
    assert parts["decoder.kda.scan.delta"] + parts["decoder.kda.scan.decay"] + \
        parts["decoder.kda.scan.readout"] == kda * scan
    assert hf == ours + kda * (conv_extra - scan) + mla * (hf_mla - ours_mla)


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("prompt", [5, 37])
def test_minimax_decode_step(batch, prompt):
    hf, c = hf_decode_step("minimax", batch, prompt)
    ours, parts = ours_decode_step(c, batch, prompt)
    H, D = c.num_attention_heads, c.head_dim
    lightning = sum(t == "linear_attention" for t in c.layer_types)
    # Hugging Face's token loop counts kᵀv, a (D×1)·(1×D) matmul, and q·S: 4·H·D² per token;
    # flopcalc's recurrence is 3 + 2 per state value (λ·S and its add are element-wise there).
    assert hf == ours + lightning * batch * (4 - 5) * H * D * D
    assert parts["decoder.lightning.scan.update"] == lightning * 3 * batch * H * D * D


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("prompt", [2, 9])
def test_lfm2_decode_step(batch, prompt):
    hf, c = hf_decode_step("lfm2", batch, prompt)
    ours, _ = ours_decode_step(c, batch, prompt)
    convs = sum(t == "conv" for t in c.layer_types)
    # Hugging Face's update over a K-column state returns 2 output columns, one thrown away.
    assert hf == ours + convs * 2 * batch * c.hidden_size * c.conv_L_cache
