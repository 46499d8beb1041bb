"""Vision towers against FlopCounterMode, end to end: a tiny multimodal model of each tower kind
runs on images (CPU, fp32, eager attention, training mode), its input ids laid out as
flopcalc's processor rules place the image (`kinds.image_processors`: the features and the
special tokens around them), and `flopcalc model CONFIG --seq TEXT --images N --image-size HxW`
must equal the whole forward: the text model at text + image tokens plus every tower and
projector. Two image sizes (or two trained sizes, where the processor resizes to it) per kind.
The processors' rules themselves are checked in tests/kinds/test_vision.py."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import flopcalc  # noqa: E402
from flopcalc.models.registry import load_model  # noqa: E402

pytestmark = pytest.mark.torch

IMG, TXT, MARK = 7, 3, 11  # placeholder, ordinary text and marker token ids
PRE, POST = 4, 3  # text tokens before and after the images
LLAMA = dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=1,
             num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
VIT = dict(hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=4,
           patch_size=8)


def saved(config) -> Path:
    tmp = Path(tempfile.mkdtemp())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config.save_pretrained(tmp)
    return tmp / "config.json"


def measured(config, inputs: dict) -> int:
    torch.manual_seed(0)
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForImageTextToText.from_config(
            config, attn_implementation="eager", dtype=torch.float32).train()
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            try:
                model(**inputs, use_cache=False)
            except AttributeError as exc:  # Llama 4 raises after the whole forward (5.24)
                if "image_outputs" not in str(exc):
                    raise
    return counter.get_total_flops()


def tower(path: Path):
    (t,) = load_model(str(path)).spec.towers
    return t


def ids(blocks: list[list[int]]) -> "torch.Tensor":
    """[text] + each image's block + [text]."""
    return torch.tensor([[TXT] * PRE + [t for b in blocks for t in b] + [TXT] * POST])


def check(config, inputs: dict, images: int, size: tuple[int, int], path: Path) -> None:
    ours = flopcalc.model(str(path), seq=PRE + POST, images=images,
                          image_size=f"{size[0]}x{size[1]}")
    assert ours.settings.seq == inputs["input_ids"].shape[1]
    assert ours.flops.forward == measured(config, inputs)


def plain_block(t, size) -> list[int]:
    """One image's ids: its special tokens (as ordinary ids) then its features."""
    f = t.features(*size)
    return [MARK] * f.markers + [IMG] * f.tokens


# ------------------------------------------------------------------ fixed-size towers

@pytest.mark.parametrize("kind, S, strategy, layer", [
    ("clip_vision_model", 32, "default", -2), ("clip_vision_model", 48, "full", [-1, -2]),
    ("siglip_vision_model", 32, "full", -1), ("siglip_vision_model", 48, "default", -1)])
def test_llava(kind, S, strategy, layer):
    config = transformers.LlavaConfig(
        vision_config=dict(model_type=kind, **VIT, image_size=S), text_config=LLAMA,
        image_token_index=IMG, vision_feature_select_strategy=strategy,
        vision_feature_layer=layer)
    path = saved(config)
    t = tower(path)
    block = plain_block(t, (S, S))
    check(config, dict(input_ids=ids([block]), pixel_values=torch.randn(1, 3, S, S)), 1,
          (S, S), path)


@pytest.mark.parametrize("S", [32, 48])
def test_paligemma(S):
    config = transformers.PaliGemmaConfig(
        vision_config=dict(model_type="siglip_vision_model", **VIT, image_size=S,
                           vision_use_head=False),
        text_config=dict(LLAMA, model_type="gemma", head_dim=16), image_token_index=IMG,
        projection_dim=64, hidden_size=64, vocab_size=512)
    path = saved(config)
    x = ids([plain_block(tower(path), (S, S))])
    check(config, dict(input_ids=x, pixel_values=torch.randn(1, 3, S, S),
                       token_type_ids=torch.zeros_like(x)), 1, (S, S), path)


@pytest.mark.parametrize("S, head, images", [(64, False, 1), (96, True, 2)])
def test_gemma3(S, head, images):
    config = transformers.Gemma3Config(
        vision_config=dict(model_type="siglip_vision_model", **VIT, image_size=S,
                           vision_use_head=head),
        text_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         vocab_size=512, sliding_window=8),
        mm_tokens_per_image=16, image_token_index=IMG, boi_token_index=8, eoi_token_index=9)
    path = saved(config)
    f = tower(path).features(S, S)
    assert (f.tokens, f.markers) == (16, 2)
    x = ids([[8] + [IMG] * 16 + [9]] * images)
    check(config, dict(input_ids=x, pixel_values=torch.randn(images, 3, S, S),
                       token_type_ids=(x == IMG).long()), images, (S, S), path)


# ------------------------------------------------------------------ tiled towers

@pytest.mark.parametrize("cls, size, scale", [
    ("Idefics3Config", (32, 32), 2), ("Idefics3Config", (40, 60), 2),
    ("SmolVLMConfig", (70, 50), 4)])
def test_idefics3(cls, size, scale):
    S = 32 if scale == 2 else 64
    config = getattr(transformers, cls)(vision_config=dict(**VIT, image_size=S),
                                        text_config=LLAMA, scale_factor=scale,
                                        image_token_id=IMG)
    path = saved(config)
    t = tower(path)
    (tiles, _, _), = t.layout(*size).pieces
    x = ids([plain_block(t, size)])
    check(config, dict(input_ids=x, pixel_values=torch.randn(1, tiles, 3, S, S)), 1, size,
          path)


@pytest.mark.parametrize("size, qk", [((32, 32), False), ((40, 60), True)])
def test_internvl(size, qk):
    config = transformers.InternVLConfig(
        vision_config=dict(**VIT, image_size=32, use_qk_norm=qk,
                           norm_type="rms_norm" if qk else "layer_norm"),
        text_config=dict(LLAMA, model_type="qwen2"), image_token_id=IMG)
    path = saved(config)
    t = tower(path)
    (tiles, _, _), = t.layout(*size).pieces
    check(config, dict(input_ids=ids([plain_block(t, size)]),
                       pixel_values=torch.randn(tiles, 3, 32, 32)), 1, size, path)


@pytest.mark.parametrize("size", [(32, 32), (48, 100)])
def test_llama4(size):
    d = 48
    config = transformers.Llama4Config(
        vision_config=dict(hidden_size=d, intermediate_size=4 * d, num_hidden_layers=2,
                           num_attention_heads=4, image_size=32, patch_size=8,
                           vision_output_dim=96, projector_input_dim=96,
                           projector_output_dim=96, pixel_shuffle_ratio=0.5),
        text_config=dict(hidden_size=64, intermediate_size=64, intermediate_size_mlp=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16, vocab_size=512, num_local_experts=2,
                         interleave_moe_layer_step=2, no_rope_layer_interval=2,
                         attention_chunk_size=16),
        image_token_index=IMG, boi_token_index=8, eoi_token_index=9)
    path = saved(config)
    t = tower(path)
    (tiles, _, _), = t.layout(*size).pieces
    x = ids([plain_block(t, size)])
    inputs = dict(input_ids=x, pixel_values=torch.randn(tiles, 3, 32, 32))
    ours = flopcalc.model(str(path), seq=PRE + POST, images=1,
                          image_size=f"{size[0]}x{size[1]}")
    # transformers runs every routed expert on every token (tests/sweep/cases_sparse.py)
    text = config.text_config
    extra = (text.num_local_experts - text.num_experts_per_tok) * 6 * x.shape[1] * 64 * 64
    assert ours.settings.seq == x.shape[1]
    assert ours.flops.forward + extra == measured(config, inputs)


# ------------------------------------------------------------------ resized towers

def pixtral_inputs(t, sizes: list[tuple[int, int]], batch: int = 1):
    """The resized images, padded into one batch tensor, and each sequence's ids: rows of
    features ending in a break token (the processor's [IMG_BREAK] / [IMG_END])."""
    merged = t.c.patch * t.c.merge
    resized = [t.layout(h, w).pieces[0][1:] for h, w in sizes]
    hm, wm = max(h for h, _ in resized), max(w for _, w in resized)
    pv = torch.zeros(batch * len(sizes), 3, hm, wm)
    for i, (h, w) in enumerate(resized * batch):
        pv[i, :, :h, :w] = torch.randn(3, h, w)
    blocks = [sum(([IMG] * (w // merged) + [MARK] for _ in range(h // merged)), [])
              for h, w in resized]
    x = ids(blocks).repeat(batch, 1)
    return dict(input_ids=x, pixel_values=pv, image_sizes=torch.tensor(resized * batch))


@pytest.mark.parametrize("size, images, batch", [((32, 48), 1, 1), ((64, 64), 2, 1),
                                                 ((40, 24), 1, 2)])
def test_mistral3(size, images, batch):
    config = transformers.Mistral3Config(
        vision_config=dict(model_type="pixtral", **VIT, image_size=128, head_dim=12),
        text_config=dict(LLAMA, model_type="mistral", head_dim=16), image_token_index=IMG,
        spatial_merge_size=2)
    path = saved(config)
    inputs = pixtral_inputs(tower(path), [size] * images, batch)
    ours = flopcalc.model(str(path), seq=PRE + POST, images=images, batch=batch,
                          image_size=f"{size[0]}x{size[1]}")
    assert ours.settings.seq == inputs["input_ids"].shape[1]
    assert ours.flops.forward == measured(config, inputs)


@pytest.mark.parametrize("size", [(24, 40), (100, 60)])
def test_llava_pixtral(size):
    config = transformers.LlavaConfig(
        vision_config=dict(model_type="pixtral", **VIT, image_size=64),
        text_config=dict(LLAMA, model_type="mistral", head_dim=16), image_token_index=IMG,
        vision_feature_select_strategy="full", vision_feature_layer=-1)
    path = saved(config)
    check(config, pixtral_inputs(tower(path), [size]), 1, size, path)


def qwen_inputs(config, t, size, images):
    """Each image's patches (C·tp·p² values each) with its grid, and the ids
    <|vision_start|> pads <|vision_end|>."""
    _, h, w = t.layout(*size).pieces[0]
    grid = (1, h // t.c.patch, w // t.c.patch)
    n = grid[1] * grid[2]
    f = t.features(*size)
    block = [config.vision_start_token_id] + [IMG] * f.tokens + [config.vision_end_token_id]
    x = ids([block] * images)
    return dict(input_ids=x, pixel_values=torch.randn(images * n, 3 * 2 * t.c.patch ** 2),
                image_grid_thw=torch.tensor([grid] * images),
                mm_token_type_ids=(x == IMG).long())


QWEN_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                 rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                      mrope_section=[2, 3, 3]))
QWEN_IDS = dict(image_token_id=IMG, video_token_id=13, vision_start_token_id=20,
                vision_end_token_id=21)


@pytest.mark.parametrize("size, images", [((32, 48), 1), ((60, 90), 2)])
def test_qwen2_vl(size, images):
    config = transformers.Qwen2VLConfig(
        vision_config=dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, patch_size=4,
                           temporal_patch_size=2, spatial_merge_size=2, mlp_ratio=3),
        text_config=QWEN_TEXT, **QWEN_IDS)
    path = saved(config)
    t = tower(path)
    check(config, qwen_inputs(config, t, size, images), images, size, path)


@pytest.mark.parametrize("size, images", [((48, 80), 1), ((60, 90), 2), ((100, 36), 1)])
def test_qwen2_5_vl(size, images):
    config = transformers.Qwen2_5_VLConfig(
        vision_config=dict(depth=3, hidden_size=32, intermediate_size=56, num_heads=4,
                           patch_size=4, temporal_patch_size=2, spatial_merge_size=2,
                           out_hidden_size=64, window_size=32, fullatt_block_indexes=[1]),
        text_config=QWEN_TEXT, **QWEN_IDS)
    path = saved(config)
    t = tower(path)
    check(config, qwen_inputs(config, t, size, images), images, size, path)


def test_the_saved_configs_reload_from_show(tmp_path):
    """`flopcalc show` of a wrapper prints a preset whose vision block reloads to the same
    counts, images included."""
    config = transformers.Qwen2_5_VLConfig(
        vision_config=dict(depth=3, hidden_size=32, intermediate_size=56, num_heads=4,
                           patch_size=4, out_hidden_size=64, window_size=32,
                           fullatt_block_indexes=[1]),
        text_config=QWEN_TEXT, **QWEN_IDS)
    path = saved(config)
    from flopcalc.commands import load
    from flopcalc.models.validation import validate_model
    from flopcalc.render.data import to_yaml
    from flopcalc.reports.listing import config_data

    loaded = load(str(path))
    preset = tmp_path / "qwen.yaml"
    preset.write_text(to_yaml(config_data(validate_model(loaded.raw, loaded.label)[0])))
    a = flopcalc.model(str(path), seq=9, images=2, image_size="60x90")
    b = flopcalc.model(str(preset), seq=9, images=2, image_size="60x90")
    assert (a.params.total, a.flops.forward) == (b.params.total, b.flops.forward)
    assert json.dumps(a.flops.components) == json.dumps(b.flops.components)


@pytest.mark.parametrize("name", ["gemma-3-27b.json", "sparse/llama-4-scout.json"])
def test_published_wrappers_are_the_whole_model(name):
    """The published configs' whole models on the meta device (language model, tower and
    projector): Gemma3ForConditionalGeneration 27,432,406,640; Llama4ForConditionalGeneration."""
    from tests.conftest import DATA

    path = DATA / "hf" / name
    raw = json.loads(path.read_text())
    if raw["model_type"] == "llama4":  # the file's `attn_temperature_tuning: 4`, read as true
        raw["text_config"]["attn_temperature_tuning"] = True
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert flopcalc.model(str(path), seq=8).params.total == sum(
        p.numel() for p in model.parameters())
