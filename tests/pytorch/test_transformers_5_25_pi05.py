"""π0.5 (`pi05`, transformers 5.25: flopcalc/models/hf/pi05.py and kinds/action_expert.py)
against transformers itself: parameters of PI05ForConditionalGeneration on the meta device at
the default config and at variants; FLOPs of one training forward (the prefix of images and
prompt through PaliGemma, one denoising step of the action expert) of a shrunk copy against
FlopCounterMode (eager attention, CPU, fp32), equal to `flopcalc model CONFIG --seq TEXT
--images N --image-size S`. Skipped where the installed transformers is older."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import flopcalc  # noqa: E402
from flopcalc.errors import FlopcalcError  # noqa: E402
from tests import sweep  # noqa: E402

_VERSION = tuple(int(p) for p in transformers.__version__.split(".")[:2] if p.isdigit())
pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(_VERSION < (5, 25), reason="needs transformers 5.25 (installed: "
                                 f"{transformers.__version__}); its pi05 type")]

S, VOCAB = 16, 97  # image side (4 × 4 patches of 4: 16 image tokens), text vocabulary
TEXT = dict(model_type="gemma", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=1, head_dim=16, vocab_size=VOCAB)
VISION = dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=48,
              num_hidden_layers=2, num_attention_heads=4, patch_size=4, image_size=S,
              vision_use_head=False)
DIT = dict(model_type="gemma", hidden_size=48, intermediate_size=80, num_hidden_layers=2,
           num_attention_heads=4, num_key_value_heads=1, head_dim=16)


def keys(text=None, vision=None, dit=None, **top):
    """PI05Config keys around the shrunk backbone and expert (their entries overridden)."""
    vlm = dict(model_type="paligemma", projection_dim=64, image_token_id=VOCAB,
               text_config={**TEXT, **(text or {})}, vision_config={**VISION, **(vision or {})})
    vlm["projection_dim"] = vlm["text_config"]["hidden_size"]
    return {"vlm_config": vlm, "dit_config": {**DIT, **(dit or {})}, "chunk_size": 5,
            "max_action_dim": 7, **top}


VARIANTS = {
    "shrunk": keys(),
    # an expert of one layer (it reads the backbone's first layer's keys), biased attention
    "one-layer-expert": keys(dit=dict(num_hidden_layers=1, attention_bias=True)),
    # grouped queries in both (2 key/value heads), a longer chunk, wider actions
    "gqa": keys(text=dict(num_key_value_heads=2), dit=dict(num_key_value_heads=2),
                chunk_size=9, max_action_dim=12),
    # a wider expert MLP, three backbone layers, an untied flag (PaliGemmaModel has no head)
    "wide": keys(text=dict(num_hidden_layers=3, tie_word_embeddings=False),
                 dit=dict(intermediate_size=160, num_hidden_layers=3)),
}


def _build(config, device):
    torch.manual_seed(0)
    with torch.device(device), warnings.catch_warnings(), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return transformers.PI05ForConditionalGeneration._from_config(
            config, attn_implementation="eager", dtype=torch.float32)


def _torch_flops(config, batch, text, cameras):
    from torch.utils.flop_counter import FlopCounterMode

    model = _build(config, "cpu").train()
    per_image = (S // VISION["patch_size"]) ** 2
    torch.manual_seed(1)
    ids = torch.cat([torch.full((batch, cameras * per_image), VOCAB),
                     torch.randint(0, VOCAB, (batch, text))], dim=1)
    inputs = dict(input_ids=ids, pixel_values=torch.randn(batch, cameras, 3, S, S),
                  pixel_attention_mask=torch.ones(batch, cameras, dtype=torch.bool),
                  timestep=torch.full((batch,), 0.5))
    with FlopCounterMode(display=False) as counter, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model(**inputs)
    return counter.get_total_flops()


def test_default_config_is_transformers_count():
    # PI05Config() built by PI05ForConditionalGeneration on the meta device: 3,353,433,872
    # parameters (SigLIP 412,442,352 + projector 2,361,344 + Gemma 2B without a head
    # 2,508,531,712 + the expert 427,932,672 + action and time projections 2,165,792)
    config = sweep.config_of("pi05", {})
    assert sweep.flopcalc_report(sweep.saved(config), seq=8).params.total == 3_353_433_872


@pytest.mark.parametrize("name", VARIANTS)
def test_params(name):
    config = sweep.config_of("pi05", VARIANTS[name])
    model = _build(config, "meta")
    expected = sum(p.numel() for p in model.parameters())
    assert sweep.flopcalc_report(sweep.saved(config), seq=8).params.total == expected


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("batch, text, cameras", [(1, 3, 1), (2, 6, 2)])
def test_forward_flops(name, batch, text, cameras):
    config = sweep.config_of("pi05", VARIANTS[name])
    ours = sweep.flopcalc_report(sweep.saved(config), seq=text, batch=batch, images=cameras,
                                 image_size=f"{S}x{S}")
    assert ours.settings.seq == text + cameras * (S // VISION["patch_size"]) ** 2
    assert ours.flops.forward == _torch_flops(config, batch, text, cameras)


def test_expert_must_match_backbone_keys():
    # an expert with 2 key/value heads beside a backbone of 1: transformers' shared cache
    # cannot concatenate their keys; flopcalc names the mismatch
    config = sweep.config_of("pi05", keys(dit=dict(num_key_value_heads=2)))
    with pytest.raises(FlopcalcError, match="key/value heads"):
        sweep.flopcalc_report(sweep.saved(config), seq=8)


def test_decode_is_refused():
    config = sweep.config_of("pi05", keys())
    with pytest.raises(FlopcalcError, match="action expert"):
        sweep.flopcalc_report(sweep.saved(config), seq=0, command="infer", prompt=4, gen=2)
