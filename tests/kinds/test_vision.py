"""Vision towers by hand (kinds/vision.py, kinds/image_processors.py, models/hf/multimodal.py):
a toy vision-language model small enough that every count is worked in the comment beside it,
the published Gemma 3 27B and Llama 4 Scout configs with their towers, each attention layout,
the processors' rules against what transformers' processors return, and the errors.

The toy: a text model of 2 layers, d 64, 4 heads, a gated SiLU MLP of 128, RMSNorm, a tied
vocabulary of 1,000; a CLIP-like tower of 2 layers, d 32, 4 heads, MLP 64, patch 8, trained at
32 x 32 (N = 16 patches, T = 17 tokens with the class token), LayerNorms before and after, a
llava projector 32 → 64 → 64 with biases after dropping the class token.
"""

from __future__ import annotations

import json

import pytest

from flopcalc.kinds import image_processors as proc

from tests.conftest import DATA, run

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.recorded, pytest.mark.behaviour]

TOY = """n_layers: 2
d_model: 64
n_heads: 4
d_ff: 128
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
max_seq_len: 4096
vocab_size: 1000
tie_embeddings: true
vision:
  d_model: 32
  n_layers: 2
  n_heads: 4
  d_ff: 64
  patch: 8
  image_size: 32
  cls_token: true
  drop_first: true
  pre_norm: layernorm
  post_norm: layernorm
  projector: [{op: linear, out: 64, bias: true}, {op: linear, out: 64, bias: true}]
"""


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(TOY)
    return str(path)


def vision(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k.startswith("vision.")}


def test_tower_params(cli, toy):
    c = run(cli, "model", toy)["params"]["components"]
    # patch conv 3·8²·32 = 6,144 (no bias); class token 32; positions (16 + 1)·32 = 544;
    # per layer q, k, v, o 32·32 + 32 each, fc1 32·64 + 64, fc2 64·32 + 32, two LayerNorms of
    # 2·32: 4·1,056 + 2,112 + 2,080 + 128 = 8,544 (= 4d² + 2dI + 9d + I), x 2 layers;
    # projector 32·64 + 64 = 2,112 and 64·64 + 64 = 4,160.
    v = vision(c)
    assert v["vision.patch_embed.weight"] == 6144
    assert v["vision.cls_token"] == 32 and v["vision.positions"] == 544
    assert v["vision.layers.attn.q.weight"] == 2 * 1024 and v["vision.layers.mlp.up.bias"] == 128
    assert v["vision.projector.0.weight"] == 2048 and v["vision.projector.1.bias"] == 64
    assert sum(v.values()) == 6144 + 32 + 544 + 64 + 64 + 2 * 8544 + 2112 + 4160 == 30208
    text = sum(x for k, x in c.items() if not k.startswith("vision."))
    # text: table 64,000; per layer q, k, v, o 4·64² = 16,384, MLP 3·64·128 = 24,576, two
    # RMSNorms 128; final norm 64
    assert text == 64000 + 2 * (16384 + 24576 + 128) + 64


def test_no_images_counts_the_text_and_says_so(cli, toy):
    doc = run(cli, "model", toy, "--seq", 10)
    assert not vision(doc["flops"]["components"])
    assert doc["settings"]["seq"] == 10 and doc["settings"]["images"] == []
    line = next(x for x in doc["conventions"] if x.startswith("no images"))
    assert "(30,208 params) are in params.total" in line and "--images N" in line


def test_one_image_per_sequence(cli, toy):
    doc = run(cli, "model", toy, "--seq", 10, "--images", 1)
    f = doc["flops"]["components"]
    # T = 17 per image (16 patches + class token): patch conv 2·16·192·32 = 196,608; per layer
    # q, k, v (17×32)·(32×96) 104,448, o 34,816, scores and values 2·17²·32 = 18,496 each, MLP
    # 4·17·32·64 = 139,264, x 2 layers; projector on 16 tokens: 2·16·32·64 = 65,536 and
    # 2·16·64·64 = 131,072
    assert vision(f) == {"vision.patch_embed": 196608, "vision.layers.attn.qkv": 2 * 104448,
                         "vision.layers.attn.scores": 2 * 18496,
                         "vision.layers.attn.values": 2 * 18496,
                         "vision.layers.attn.o": 2 * 34816, "vision.layers.mlp": 2 * 139264,
                         "vision.projector.0": 65536, "vision.projector.1": 131072}
    # the 16 image tokens join the 10 text tokens: the text model at 26
    assert doc["settings"]["seq"] == 26
    (i,) = doc["settings"]["images"]
    assert (i["image_tokens"], i["special_tokens"], i["tokens"], i["text_tokens"]) == (16, 0, 16,
                                                                                     10)
    text = run(cli, "model", toy, "--seq", 26)["flops"]["forward"]
    assert doc["flops"]["forward"] == text + sum(vision(f).values())
    assert any("16 tokens join the 10 text tokens" in x for x in doc["conventions"])


def test_batch_and_images_multiply(cli, toy):
    one = run(cli, "model", toy, "--seq", 10, "--images", 1)["flops"]["components"]
    doc = run(cli, "model", toy, "--seq", 10, "--images", 3, "--batch", 2)
    # 2 sequences of 3 images: every tower part 6 times; the text model at 10 + 3·16 = 58
    assert vision(doc["flops"]["components"]) == {k: 6 * v for k, v in vision(one).items()}
    assert doc["settings"]["seq"] == 58


def test_image_size_is_the_trained_one_for_a_fixed_processor(cli, toy):
    a = run(cli, "model", toy, "--images", 1, "--seq", 4)
    b = run(cli, "model", toy, "--images", 1, "--seq", 4, "--image-size", "480x640")
    assert a["flops"] == b["flops"]
    assert "resized to 32x32" in b["settings"]["images"][0]["rule"]


def test_infer_and_train_with_images(cli, toy):
    inf = run(cli, "infer", toy, "--prompt", 10, "--gen", 4, "--images", 2)
    model = run(cli, "model", toy, "--seq", 10, "--images", 2)
    # the prefill is the forward with the images: prompt 10 + 2·16 = 42 tokens, masked (infer
    # counts causal by default; model prints that count beside its full one)
    assert inf["prefill"]["flops"] == model["flops"]["forward_causal"]
    causal = run(cli, "model", toy, "--seq", 10, "--images", 2, "--attention", "causal")
    assert causal["flops"]["forward"] == model["flops"]["forward_causal"]
    assert inf["prefill"]["tokens"] == 42 and inf["decode"]["context_first"] == 43
    # decode steps read the text model's weights only: as without a tower
    plain = run(cli, "infer", toy, "--prompt", 42, "--gen", 4)
    assert inf["decode"]["bytes"] == plain["decode"]["bytes"]
    # the prefill reads the tower's 30,208 weights once more, bf16: 60,416 bytes
    assert inf["prefill"]["bytes"] == plain["prefill"]["bytes"] + 60416
    tr = run(cli, "train", toy, "--mfu", "0.5", "--peak", "1P", "--seq", 10, "--images", 2,
             "--tokens", 42_000)
    # 3 x forward per token (over the 42 positions) x D
    assert tr["training"]["exact"] == 3 * model["flops"]["forward_causal"] * 1000
    assert tr["settings"]["seq"] == 42


def test_errors(cli, toy, tmp_path):
    r = cli("model", "gpt2", "--images", 1)
    assert r.code == 2 and "no vision tower" in r.err
    r = cli("model", toy, "--image-size", "32x32")
    assert r.code == 2 and "--image-size goes with --images" in r.err
    r = cli("model", toy, "--images", 1, "--image-size", "big")
    assert r.code == 2 and "HEIGHTxWIDTH" in r.err
    bad = tmp_path / "bad.yaml"
    bad.write_text(TOY.replace("projector: [{op: linear", "projector: [{op: pool}, {op: linear"))
    r = cli("model", str(bad))
    assert r.code == 2 and "pool step needs 'tokens'" in r.err
    dynamic = tmp_path / "dynamic.yaml"  # no trained size: Qwen's processor, no position table
    dynamic.write_text(TOY.replace("  image_size: 32\n", "  position_table: false\n"
                                   "  processor: qwen\n"))
    r = cli("model", str(dynamic), "--images", 1)
    assert r.code == 2 and r.err.strip() == ("flopcalc: error: --images: give --image-size HxW: "
                                             "the vision tower has no fixed image size")
    wide = tmp_path / "wide.yaml"
    wide.write_text(TOY.replace("{op: linear, out: 64, bias: true}]",
                                "{op: linear, out: 48, bias: true}]"))
    r = cli("model", str(wide), "--images", 1)
    assert r.code == 2 and "ends 48 wide but the text model is 64 wide" in r.err


# --------------------------------------------------------------------- attention layouts

def _tower(**keys):
    from flopcalc.kinds.vision import VisionConfig, VisionTower

    base = dict(d_model=32, n_layers=2, n_heads=4, d_ff=64, patch=4)
    return VisionTower(VisionConfig(**{**base, **keys}))


def test_window_attention_pairs():
    t = _tower(attention="window", window=32, merge=2, full_blocks=(1,), position_table=False,
               processor="qwen", mlp="gated")
    # a 48 x 80 image: 12 x 20 patches, merged 6 x 10; windows of 32/2/4 = 4 merged tokens:
    # rows 4 + 2, columns 4 + 4 + 2, so Σa² = 16 + 4 = 20, Σb² = 16 + 16 + 4 = 36, each merged
    # token 2² patches: a window layer scores 2⁴·20·36 = 11,520 pairs, the full one 240² =
    # 57,600
    assert t._pairs(12, 20, 240) == 11520 + 57600
    parts = {p.name: p.value for p in t.images_forward(32, 1, 48, 80)}
    assert parts["layers.attn.scores"] == 2 * (11520 + 57600) * 32


def test_batch_attention_joins_every_image():
    t = _tower(attention="batch", position_table=False, processor="pixtral", image_size=64,
               mlp="gated")
    # three 16 x 16 images: 16 patches each, one sequence of 48: 2 layers x 48² pairs
    parts = {p.name: p.value for p in t.images_forward(32, 3, 16, 16)}
    assert parts["layers.attn.scores"] == 2 * 2 * 48 * 48 * 32
    assert parts["layers.mlp"] == 2 * 6 * 48 * 32 * 64  # gated: 3 matmuls


def test_siglip_head():
    t = _tower(head=True, image_size=16, patch_bias=True)
    # N = 16: probe q 2·32², K/V 4·16·32², scores + values 4·16·32, out 2·32², MLP 4·32·64
    parts = {p.name: p.value for p in t.images_forward(32, 1, 16, 16)}
    assert parts["head"] == 2 * 1024 + 4 * 16 * 1024 + 4 * 16 * 32 + 2 * 1024 + 4 * 32 * 64


# --------------------------------------------------------------------- published configs

def test_gemma3_27b_whole_model(cli):
    doc = run(cli, "model", str(DATA / "hf" / "gemma-3-27b.json"), "--seq", 100,
              "--images", 1)
    p = doc["params"]
    v = sum(vision(p["components"]).values())
    # SigLIP 896/14 (N = 4,096), d 1,152, I 4,304, 27 layers, no head: conv 3·14²·1,152 +
    # 1,152 = 678,528; positions 4,096·1,152 = 4,718,592; layers 27·(4d² + 2dI + 9d + I) =
    # 27·15,239,504 = 411,466,608; post LayerNorm 2,304: 416,866,032. Projector: the RMSNorm
    # 1,152 and 1,152 x 5,376 = 6,193,152. With the text model's 27,009,346,304:
    # 27,432,406,640, Gemma3ForConditionalGeneration on the meta device.
    assert v == 416_866_032 + 6_194_304
    assert p["total"] == 27_432_406_640
    f = vision(doc["flops"]["components"])
    # per image, T = 4,096: conv 2·4,096·588·1,152 = 5,549,064,192; per layer 8Td² + 4T²d +
    # 4TdI = 43,486,543,872 + 77,309,411,328 + 81,235,476,480 → ×27; the projector on the 256
    # pooled tokens 2·256·1,152·5,376 = 3,170,893,824
    assert f["vision.patch_embed"] == 5_549_064_192
    assert sum(f.values()) - f["vision.projector.2"] == 5_460_392_411_136
    assert f["vision.projector.2"] == 3_170_893_824
    # 256 image tokens + <start_of_image>, <end_of_image>
    assert doc["settings"]["seq"] == 100 + 258


def test_llama4_scout_whole_model(cli):
    doc = run(cli, "model", str(DATA / "hf" / "sparse" / "llama-4-scout.json"))
    v = sum(vision(doc["params"]["components"]).values())
    # d 1,408, I 5,632, 34 layers, 336/14 tiles (N = 576): unfold + linear 3·14²·1,408 =
    # 827,904; class token 1,408; positions 577·1,408 = 812,416; two LayerNorms 5,632; layers
    # 34·(4d² + 2dI + 9d + I) = 34·23,807,872 = 809,467,648; adapter fc1 5,632·4,096 and fc2
    # 4,096²: 850,960,896; projector 4,096 x 5,120 = 20,971,520
    assert v == 850_960_896 + 20_971_520
    assert doc["params"]["total"] == 107_769_861_120 + v


def test_show_prints_the_vision_block_and_it_reloads(cli, tmp_path):
    path = str(DATA / "hf" / "gemma-3-27b.json")
    shown = cli("show", path)
    assert shown.code == 0 and "vision:" in shown.out and "op: pool" in shown.out
    preset = tmp_path / "g.yaml"
    preset.write_text(shown.out)
    a = run(cli, "model", path, "--images", 2, "--seq", 50)
    b = run(cli, "model", str(preset), "--images", 2, "--seq", 50)
    assert a["params"]["total"] == b["params"]["total"]
    assert a["flops"]["components"] == b["flops"]["components"]


def test_wrapper_without_a_tower_counts_the_language_model(cli, tmp_path):
    text = json.loads((DATA / "hf" / "qwen2-0.5b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llava_onevision", "text_config": text,
                                "vision_config": {"model_type": "siglip_vision_model"}}))
    doc = run(cli, "model", str(path))
    plain = run(cli, "model", str(DATA / "hf" / "qwen2-0.5b.json"))
    assert doc["params"]["total"] == plain["params"]["total"]
    assert "siglip_vision_model encoder and projector" in doc["model"]["notes"]
    assert cli("model", str(path), "--images", 1).code == 2


# --------------------------------------------------------------------- processors' rules

# What transformers 5.24's processors return (PIL backends; Llama 4's own tiling functions),
# recorded by running those processors on images of these sizes.
SIZES = [(224, 224), (480, 640), (1080, 1920), (37, 1000), (3000, 500), (336, 337), (50, 60),
         (2048, 1536)]
QWEN_CLASS = [(16, 16), (34, 46), (52, 94), (2, 72), (174, 28), (24, 24), (4, 4), (82, 60)]
QWEN_HUB = [(16, 16), (34, 46), (78, 138), (2, 72), (214, 36), (24, 24), (4, 4), (146, 110)]
PIXTRAL_1024 = [(224, 224), (480, 640), (576, 1024), (48, 1008), (1024, 176), (336, 352),
                (64, 64), (1024, 768)]
PIXTRAL_1540 = [(224, 224), (504, 644), (868, 1540), (56, 1008), (1540, 280), (336, 364),
                (56, 84), (1540, 1176)]
IDEFICS3 = [(4, 4, 17), (3, 4, 13), (3, 4, 13), (1, 4, 5), (4, 1, 5), (4, 4, 17), (4, 4, 17),
            (4, 3, 13)]
INTERNVL = [1, 13, 9, 13, 7, 1, 13, 13]
LLAMA4 = [((1, 1), 1), ((2, 2), 5), ((3, 5), 16), ((1, 3), 4), ((8, 2), 17), ((1, 2), 3),
          ((1, 1), 1), ((4, 3), 13)]


@pytest.mark.parametrize("i, size", list(enumerate(SIZES)))
def test_processor_rules(i, size):
    h, w = size
    assert tuple(x // 14 for x in proc.qwen_resize(h, w, 28, 3136, 28 * 28 * 1280)) == \
        QWEN_CLASS[i]
    assert tuple(x // 14 for x in proc.qwen_resize(h, w, 28, 3136, 12_845_056)) == QWEN_HUB[i]
    assert proc.pixtral_resize(h, w, 1024, 16) == PIXTRAL_1024[i]
    assert proc.pixtral_resize(h, w, 1540, 28) == PIXTRAL_1540[i]
    for edge, tile in ((4 * 364, 364), (4 * 512, 512)):
        rows, cols = proc.idefics3_tiles(h, w, edge, tile)
        assert (rows, cols, rows * cols + 1 if rows else 1) == IDEFICS3[i]
    cols, rows = proc.internvl_grid(h, w, 448, 1, 12)
    assert cols * rows + (cols * rows > 1) == INTERNVL[i]
    a, b = proc.llama4_canvas(h, w, 336, 16)
    assert ((a, b), a * b + (a * b > 1)) == LLAMA4[i]


def test_preset_is_the_published_config(cli):
    """presets/gemma-3-27b-vision.yaml counts as google/gemma-3-27b-pt's config.json (whose
    whole model is checked on the meta device in tests/pytorch/test_vision.py)."""
    for args in (("--seq", 100), ("--seq", 100, "--images", 2, "--attention", "causal")):
        a = run(cli, "model", "gemma-3-27b-vision", *args)
        b = run(cli, "model", str(DATA / "hf" / "gemma-3-27b.json"), *args)
        assert a["params"]["components"] == b["params"]["components"]
        assert a["flops"]["components"] == b["flops"]["components"]
    assert a["params"]["total"] == 27_432_406_640


@pytest.mark.parametrize("text, size", [
    ("448", (448, 448)), ("448x336", (448, 336)), ("448×336", (448, 336)),
    (" 448 X 336 ", (448, 336)), (1024, (1024, 1024)), ("1x1000000", (1, 1_000_000)),
    (None, None)])
def test_image_size_reads_height_by_width_or_a_square(text, size):
    from flopcalc.counting.images import parse_size

    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "abc", "1x2x3", "1000001", "448x0", "-5", "x448", ""])
def test_an_image_size_that_is_not_two_positive_integers_is_refused(text):
    from flopcalc.counting.images import parse_size

    with pytest.raises(ValueError) as e:
        parse_size(text)
    assert str(e.value) == ("--image-size must be HEIGHTxWIDTH in pixels (e.g. 448x448, or "
                            f"448), got {text!r}")
