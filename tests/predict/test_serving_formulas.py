"""Serving formulas a planted bug could slip past, each against an independent referee: keys
counted by looping over the mask's definition, routings enumerated one by one, per-step
roofline maxima summed step by step, hand-worked integers (the working is in the comments),
and the docs' own tables.

- Masks: Σ visible keys over decode positions, and the breakpoints where that count changes
  its affine form (a window's w, every multiple of a chunk size).
- Roofline decode time where the decode crosses a window's w or chunk boundaries: the sum of
  max(compute, memory) must be taken per affine piece, the compute/memory switch found exactly,
  and a tie counted as compute-bound (`Bound.binds`).
- Mixture of experts: experts read per step at batch 1, small and huge, against every routing.
- `flopcalc attention`: the formula column against the table of its docs page.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest

import flopcalc
from flopcalc.predict.roofline import decode_time
from flopcalc.counting.inference import Segments, _cut, affine_segments
from flopcalc.counting.traffic import weight_reads
from flopcalc.kinds.masks import Mask

from tests.conftest import ROOT, run

pytestmark = [pytest.mark.hand, pytest.mark.invariant]


def infer(cli, *args) -> dict:
    return run(cli, "infer", *args)


def visible(mask: Mask, i: int) -> int:
    """Keys j = 1..i query i may see, counted from the mask's definition (module docstring of
    kinds/masks.py, docs/commands/infer.md)."""
    def sees(j: int) -> bool:
        if mask.pattern == "window":
            return 0 <= i - j < mask.size
        if mask.pattern == "chunked":
            return (j - 1) // mask.size == (i - 1) // mask.size  # same block, j <= i
        return True  # causal
    return sum(sees(j) for j in range(1, i + 1))


CAUSAL, WINDOW_3, CHUNK_3 = Mask("causal"), Mask("window", 3), Mask("chunked", 3)
CHUNK_4 = Mask("chunked", 4)  # the CHUNKED model's local layer


# ------------------------------------------------------------------------------------ masks

@pytest.mark.parametrize("mask", [CAUSAL, WINDOW_3, CHUNK_3])
def test_sum_of_visible_keys_against_the_definition(mask):
    # Every range lo..hi of decode positions, the empty ones (hi < lo: 0 keys) included.
    for lo in range(1, 13):
        for hi in range(lo - 3, 13):
            expected = sum(visible(mask, i) for i in range(lo, hi + 1))
            assert mask.visible_keys(lo, hi) == expected, (lo, hi)


def test_breakpoints_are_a_windows_w_and_every_multiple_of_a_chunk():
    # Documented: the positions p in [lo, hi) after which the keys change their affine form.
    for lo in range(1, 12):
        for hi in range(lo, 14):
            assert list(Mask("window", 4).breakpoints(lo, hi)) == ([4] if lo <= 4 < hi else [])
            assert list(CHUNK_3.breakpoints(lo, hi)) == [p for p in range(lo, hi) if p % 3 == 0]
            assert list(CAUSAL.breakpoints(lo, hi)) == []


# Two layers, d 8, 2 heads of 4 (so K and V of 2 KV heads: 16 values, 32 bytes in bf16, per
# token and layer), plain MLP of 8, no norms, no biases, rotary, a tied table of 4 x 8.
# Params: per layer q, k, v, o 4·8·8 = 256 and the MLP 2·8·8 = 128, so 384; x 2 = 768, + the
# table 32 = 800. Layer 0 is local (window or chunked), layer 1 full.
TINY = """n_layers: 2
d_model: 8
n_heads: 2
d_ff: 8
mlp: plain
bias: false
norm: none
final_norm: false
positions: rotary
vocab_size: 4
tie_embeddings: true
"""
WINDOWED = TINY + "layer_types: [window, full]\nsliding_window: 8\n"
CHUNKED = TINY + "layer_types: [chunked, full]\nattention_chunk: 4\n"


def keys(local: Mask, c: int) -> int:
    """Keys the decode step at position c attends over, both layers together."""
    return visible(local, c) + visible(CAUSAL, c)


def step_flops(local: Mask, c: int, batch: int) -> int:
    # Weights: 2 FLOPs per matmul weight per token: 2·800 = 1,600 (the LM head, 2·8·4 = 64,
    # on the tied table, included); attention 2·h·(d_qk + d_v) = 2·2·8 = 32 per key.
    return batch * (1600 + 32 * keys(local, c))


def step_bytes(local: Mask, c: int, batch: int) -> int:
    # Every weight once, the tied table in full: 800·2 = 1,600 bytes; per sequence the K/V of
    # every key attended (32 bytes a key) and the new token's K/V in both layers (2·32 = 64).
    return 1600 + batch * (32 * keys(local, c) + 64)


def step_by_step(local: Mask, first: int, last: int, batch: int, peak: int, bandwidth: int):
    """Σ over steps of max(compute, memory) and the compute-bound steps (a tie binds compute)."""
    times = [(Fraction(step_flops(local, c, batch), peak),
              Fraction(step_bytes(local, c, batch), bandwidth)) for c in range(first, last + 1)]
    return sum(max(t) for t in times), sum(comp >= mem for comp, mem in times)


@pytest.fixture
def model(tmp_path):
    def write(text: str) -> str:
        path = tmp_path / f"model{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(text)
        return str(path)
    return write


def test_tiny_model_counts_by_hand(cli, model):
    # The per-step formulas above against the report, at the first and last step (c = 3, 14).
    d = infer(cli, model(WINDOWED), "--prompt", 2, "--gen", 12, "--batch", 4)
    assert d["weights"]["params"] == 800
    dec = d["decode"]
    # c = 3: 3 + 3 keys, 4·(1,600 + 32·6) = 7,168 FLOPs, 1,600 + 4·(32·6 + 64) = 2,624 bytes;
    # c = 14: 8 + 14 keys, 4·(1,600 + 704) = 9,216 FLOPs, 1,600 + 4·(704 + 64) = 4,672 bytes.
    assert (dec["flops_first"], dec["bytes_first"]) == (7168, 2624)
    assert (dec["flops_last"], dec["bytes_last"]) == (9216, 4672)
    # The LM head on every generated token: 2·B·G·d·V = 2·4·12·8·4.
    assert dec["components"]["lm_head"] == 3072


def test_affine_pieces_by_hand(model):
    win = flopcalc.load(model(WINDOWED)).spec
    # min(c, 8) is c up to 8, then 8: pieces end at the window's w.
    assert affine_segments(win, 3, 14).expanded() == [(3, 8), (9, 14)]
    assert affine_segments(win, 8, 14).expanded() == [(8, 8), (9, 14)]
    assert affine_segments(win, 9, 14).expanded() == [(9, 14)]
    assert affine_segments(win, 3, 8).expanded() == [(3, 8)]
    chunked = flopcalc.load(model(CHUNKED)).spec
    # (c − 1) mod 4 + 1 restarts after every multiple of 4.
    assert affine_segments(chunked, 4, 13).expanded() == [(4, 4), (5, 8), (9, 12), (13, 13)]
    assert affine_segments(chunked, 1, 3).expanded() == [(1, 3)]
    # from 6 (2 past a multiple of 4) the repeats still start at 6, not in the chunk before
    assert affine_segments(chunked, 6, 30).expanded() == [
        (6, 8), (9, 12), (13, 16), (17, 20), (21, 24), (25, 28), (29, 30)]
    assert affine_segments(chunked, 2, 12).expanded() == [(2, 4), (5, 8), (9, 12)]
    # As few explicit pieces as the period allows: from 5 (one past a multiple of 4) the cycle
    # (5, 8) starts at once and repeats 6 times, to 28; 29..30 is the tail. Starting it a
    # period later would write (5, 8) out and repeat 5 times: the same pieces, more of them
    # explicit.
    assert affine_segments(chunked, 5, 30) == Segments((), ((5, 8),), 4, 6, ((29, 30),))
    # two whole periods are already a cycle; one is written out
    assert affine_segments(chunked, 5, 12) == Segments((), ((5, 8),), 4, 2, ())
    assert affine_segments(chunked, 5, 8) == Segments(((5, 8),))


# ------------------------------------------------------------------- roofline across breaks

# Batch 4: a step costs 4·(1,600 + 32K) = 6,400 + 128K FLOPs and 1,600 + 4·(32K + 64) =
# 1,856 + 128K bytes for K keys, so on a device of peak I x bandwidth it is compute-bound when
# 6,400 + 128K >= I·(1,856 + 128K). Bandwidth 1 TB/s throughout.
BANDWIDTH = 10**12


def check_decode_time(cli, path, mask, prompt, gen, peak_t, compute_steps, binds):
    """`infer`'s decode roofline at batch 4 against the steps timed one by one (contexts
    prompt + 1 .. prompt + gen), and how many of them are compute-bound."""
    peak = peak_t * 10**11
    d = infer(cli, path, "--prompt", prompt, "--gen", gen, "--batch", 4,
              "--peak", peak, "--bandwidth", BANDWIDTH)
    rd = d["roofline"]["decode"]
    seconds, compute_bound = step_by_step(mask, prompt + 1, prompt + gen, 4, peak, BANDWIDTH)
    assert compute_bound == compute_steps
    assert rd["seconds"] == float(seconds)  # both the nearest float to one exact rational
    assert (rd["compute_bound_steps"], rd["memory_bound_steps"]) == (compute_steps,
                                                                     gen - compute_steps)
    assert rd["binds"] == binds


@pytest.mark.parametrize("peak_t, compute_steps, binds", [
    # Decode c = 3..14 with a window of 8: K = 2c up to c = 8 (6, 8, ..., 16), then 8 + c
    # (17, ..., 22).
    (15, 12, "compute"),  # I = 1.5: K <= 56.5, every step
    (21, 7, "compute, then memory"),  # I = 2.1: K <= 17.77, c = 3..9: switch after the window
    (25, 2, "compute, then memory"),  # I = 2.5: K <= 9.17, c = 3, 4: switch inside it
    (30, 0, "memory"),  # I = 3: K <= 3.25, none
])
def test_decode_time_across_a_window(cli, model, peak_t, compute_steps, binds):
    check_decode_time(cli, model(WINDOWED), Mask("window", 8), 2, 12, peak_t, compute_steps,
                      binds)


@pytest.mark.parametrize("peak_t, compute_steps, binds", [
    # Decode c = 4..13 in blocks of 4: K = block keys + c = 8, 6, 8, 10, 12, 10, 12, 14, 16, 14.
    # The first and last steps are pieces of their own (c = 4 ends a block, c = 13 starts one).
    (15, 10, "compute"),  # I = 1.5: every step
    (22, 9, "both"),  # I = 2.2: K <= 15.08, all but c = 12
    (23, 7, "compute, then memory"),  # I = 2.3: K <= 12.8, c = 4..10
    (25, 3, "compute, then memory"),  # I = 2.5: K <= 9.17, c = 4, 5, 6
])
def test_decode_time_across_chunks(cli, model, peak_t, compute_steps, binds):
    check_decode_time(cli, model(CHUNKED), Mask("chunked", 4), 3, 10, peak_t, compute_steps,
                      binds)


def test_a_tie_at_either_end_of_a_piece_binds_compute():
    # compute(c) = c against memory 5 on c = 1..5: max is 5 every step (25 in all); only c = 5
    # ties, and a tie is compute-bound (Bound.binds: compute_s >= memory_s).
    rising = decode_time(lambda c: Fraction(c), lambda c: Fraction(5), [(1, 5)])
    assert (rising.seconds, rising.compute_bound_steps, rising.memory_bound_steps) == (25, 1, 4)
    # compute(c) = 10 − c on c = 5..9: the tie is at the first step.
    falling = decode_time(lambda c: Fraction(10 - c), lambda c: Fraction(5), [(5, 9)])
    assert (falling.seconds, falling.compute_bound_steps,
            falling.memory_bound_steps) == (25, 1, 4)


# ----------------------------------------------------------------------- mixture of experts

# Two MoE layers (one group of 2), d 8, 2 heads of 4, 4 gated experts of width 4, top-2, no
# norms or biases, a tied table of 4 x 8. Params: attention 256 and router 8·4 = 32 per layer,
# each expert 3·8·4 = 96: 2·(256 + 32 + 4·96) + 32 = 1,376. A step reading x experts per layer
# reads 1,376 − 2·(4 − x)·96 = 608 + 192·x params.
MOE = TINY.replace("mlp: plain", "mlp: gated") + "moe: {experts: 4, top_k: 2, d_ff: 4}\n"


def routings(batch: int):
    """Distinct experts a step touches, for every way `batch` tokens can each pick 2 of 4."""
    choices = list(itertools.combinations(range(4), 2))
    return [len(set().union(*picks)) for picks in itertools.product(choices, repeat=batch)]


@pytest.mark.parametrize("batch", [1, 2, 3, 4])
def test_experts_read_against_every_routing(cli, model, batch):
    touched = routings(batch)  # 6^B equally likely routings
    mean = Fraction(sum(touched), len(touched))
    d = infer(cli, model(MOE), "--prompt", 5, "--gen", 2, "--batch", batch)
    assert d["weights"]["params"] == 1376
    r = d["decode"]["routing"]
    assert (r["experts"], r["top_k"]) == (4, 2)
    assert (r["least"], r["expected"], r["most"]) == (min(touched), float(mean), max(touched))
    # bf16: 2 bytes a param; whole bytes (the means are multiples of 1/8 here, so exact).
    params = {k: 608 + 192 * x for k, x in (("least", min(touched)), ("expected", mean),
                                            ("most", max(touched)))}
    assert {k: r[f"weight_bytes_{k}"] for k in params} == {k: 2 * v for k, v in params.items()}
    assert d["decode"]["bytes_components"]["weights.read"] == 2 * 2 * params["expected"]


def test_experts_read_by_hand_at_batch_1_and_3(cli, model):
    # B = 1: one token reads its 2 experts: 608 + 384 = 992 params, 1,984 bytes.
    r1 = infer(cli, model(MOE), "--prompt", 5, "--gen", 2)["decode"]["routing"]
    assert (r1["least"], r1["expected"], r1["most"]) == (2, 2, 2)
    assert r1["weight_bytes_expected"] == 1984
    # B = 3: E·(1 − (1 − k/E)^B) = 4·(1 − 1/8) = 3.5 experts (docs: infer), 608 + 672 = 1,280
    # params, 2,560 bytes; most min(4, 3·2) = 4: all 1,376 params, 2,752 bytes.
    r3 = infer(cli, model(MOE), "--prompt", 5, "--gen", 2, "--batch", 3)["decode"]["routing"]
    assert (r3["least"], r3["expected"], r3["most"]) == (2, 3.5, 4)
    assert (r3["weight_bytes_least"], r3["weight_bytes_expected"],
            r3["weight_bytes_most"]) == (1984, 2560, 2752)


def test_prefill_reads_experts_for_all_prompt_tokens(cli, model):
    # 5 prompt tokens: 4·(1 − 2^−5) = 3.875 experts, 608 + 744 = 1,352 params, 2,704 bytes, and
    # the prompt's K/V written: 5 tokens x 2 layers x 32 bytes = 320.
    assert infer(cli, model(MOE), "--prompt", 5, "--gen", 1)["prefill"]["bytes"] == 3024


def test_experts_read_at_a_huge_batch(cli, model):
    # B = 100,000 (> 65,536: floating point): 4·(1 − 2^−100,000) experts, 4 to every digit, so
    # every expert's bytes: 2,752; a step moves them + 100,000·(32K + 64) bytes of K/V.
    d = infer(cli, model(MOE), "--prompt", 5, "--gen", 2, "--batch", 100_000)["decode"]
    r = d["routing"]
    assert (r["least"], r["expected"], r["most"]) == (2, 4.0, 4)
    assert r["weight_bytes_expected"] == r["weight_bytes_most"] == 2752
    # c = 6 over 6 keys in each layer: K = 12.
    assert d["bytes_first"] == 2752 + 100_000 * (32 * 12 + 64)
    # 100,000·5 prompt tokens read every expert too.
    assert infer(cli, model(MOE), "--prompt", 5, "--gen", 1, "--batch", 100_000)["prefill"][
        "bytes"] == 2752 + 100_000 * 5 * 64


def moe_of(model, experts: int, top_k: int):
    spec = flopcalc.load(model(MOE)).spec
    moe = next(g.layer.ffn for g in spec.groups() if g.layer.routed)
    return replace(moe, experts=experts, top_k=top_k)


def test_expected_experts_are_exact_up_to_65536_tokens(model):
    # docs/commands/infer.md's E·(1 − (1 − k/E)^B) as an exact rational, for E = 8, k = 2.
    for tokens in (1, 2, 3, 65_536):
        r = moe_of(model, 8, 2).reads(8, tokens)
        assert r.expected == 8 * (1 - Fraction(3, 4) ** tokens) and r.exact is True
    assert moe_of(model, 8, 2).reads(8, 65_537).exact is False


@pytest.mark.parametrize("experts, top_k, tokens", [(2**17, 3, 70_000), (2**17, 1, 100_000)])
def test_expected_experts_in_floating_point_beyond_65536_tokens(cli, model, experts, top_k,
                                                                 tokens):
    # Where (1 − k/E)^B is far from 0 (0.20 and 0.47 here): the mean against 50-digit decimals.
    with localcontext() as ctx:
        ctx.prec = 50
        reference = experts * (1 - (1 - Decimal(top_k) / experts) ** tokens)
    path = model(MOE.replace("experts: 4, top_k: 2, d_ff: 4",
                             f"experts: {experts}, top_k: {top_k}, d_ff: 1"))
    r = infer(cli, path, "--prompt", 1, "--gen", 1, "--batch", tokens)["decode"]["routing"]
    assert abs(Decimal(r["expected"]) - reference) < Decimal("1e-6")
    # Least k; most min(E, B·k): 131,072 of 210,000 picks, or 100,000 of 131,072 experts.
    assert (r["least"], r["most"]) == (top_k, min(experts, tokens * top_k))
    assert moe_of(model, experts, top_k).reads(8, tokens).exact is False


def test_weight_reads_say_when_routing_was_not_exact(model):
    moe = flopcalc.load(model(MOE)).spec
    assert weight_reads(moe, 65_536).exact is True
    assert weight_reads(moe, 65_537).exact is False
    assert weight_reads(flopcalc.load(model(WINDOWED)).spec, 3).exact is True


def test_lookup_tables_are_read_by_the_row():
    # BERT base: positions (512 rows) and token types (2 rows) are lookups of 768 wide; its
    # token table is tied to the head and read in full. One more token reads one more row of
    # each table that has rows left: 1 → 2 tokens both tables, 2 → 3 the positions only.
    bert = flopcalc.load("bert-base").spec
    least = [weight_reads(bert, t).least for t in (1, 2, 3)]
    assert (least[1] - least[0], least[2] - least[1]) == (2 * 768, 768)


# ------------------------------------------------------------------------ attention formulas

def readme_attention_formulas() -> dict[str, str]:
    """The term table of the `flopcalc attention` page (docs/commands/attention.md): `term` →
    `formula`."""
    section = (ROOT / "docs" / "commands" / "attention.md").read_text()
    section = section.split("\n## Options")[0]
    row = re.compile(r"^\| `(\w+)` \([^|]*\) \| `([^`]+)` \|$", re.MULTILINE)
    return dict(row.findall(section))


def test_attention_formulas_are_the_readmes(cli):
    documented = readme_attention_formulas()
    assert documented == {"qk": "m·n·(2·d_k − 1)", "scale": "m·n", "mask": "m·n",
                          "softmax": "m·(3·n − 1)", "av": "m·d_v·(2·n − 1)"}
    # m = 3 queries, n = 5 keys, d_k 2, d_v 7: qk 3·5·3 = 45, scale and mask 15, softmax
    # 3·14 = 42, av 3·7·9 = 189.
    doc = cli("attention", "--n", 5, "--m", 3, "--d-k", 2, "--d-v", 7, "-f", "json").json()
    assert {t["name"]: (t["formula"], t["per_head"]) for t in doc["terms"]} == {
        "qk": (documented["qk"], 45), "scale": (documented["scale"], 15),
        "mask": (documented["mask"], 15), "softmax": (documented["softmax"], 42),
        "av": (documented["av"], 189)}


@pytest.mark.parametrize("first, last", [(1, 200), (3, 97), (6, 6), (9, 41), (100, 1000)])
@pytest.mark.parametrize("peak_t", [1, 40, 1000])
def test_repeated_chunks_sum_like_every_piece(model, first, last, peak_t):
    # The closed form over repeating chunks equals the sum over every piece written out, for
    # rooflines that flip between the bounds within chunks, across them, or never.
    spec = flopcalc.load(model(CHUNKED)).spec
    segments = affine_segments(spec, first, last)

    def compute(c):
        return Fraction(step_flops(CHUNK_4, c, 2), peak_t)

    def memory(c):
        return Fraction(step_bytes(CHUNK_4, c, 2), 50)

    assert decode_time(compute, memory, segments) == decode_time(compute, memory,
                                                                 segments.expanded())


def test_a_trillion_decode_steps_with_chunked_layers(cli, model):
    import time

    start = time.monotonic()
    r = cli("infer", model(CHUNKED), "--prompt", 5, "--gen", "1e12", "--accelerator", "h100",
            "-f", "json")
    assert r.code == 0, r.err
    assert time.monotonic() - start < 10
    d = r.json()["decode"]
    assert d["steps"] == 10**12


def test_segment_ends_are_each_pieces_ends_and_the_cycles_first_and_last_repeat():
    # a head (1..3), a cycle of two pieces over a period of 4 repeated 3 times (4..7, 8..11,
    # 12..15), a tail (16..17)
    s = Segments(((1, 3),), ((4, 5), (6, 7)), period=4, repeats=3, tail=((16, 17),))
    assert s.ends() == [1, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17]
    assert s.expanded() == [(1, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
                            (16, 17)]
    assert Segments(((1, 3), (4, 9))).ends() == [1, 3, 4, 9]
    assert Segments(((1, 3),), ((4, 5),), period=2, repeats=0).ends() == [1, 3, 4, 5]


def test_too_many_flipping_decode_steps_are_refused_not_summed_one_by_one():
    # One piece, contexts c = 0 .. 2·10⁶ + 2, repeated 2·10⁶ + 3 times one context apart:
    # compute c, memory 10⁶ + 1, so a step is memory-bound below c = 10⁶ + 1. Repeat j covers
    # c = j .. j + 2·10⁶ + 2: wholly compute-bound only from j = 10⁶ + 1, never wholly
    # memory-bound, so j = 0 .. 10⁶ flip: 1,000,001 repeats, one more than the 10⁶ summed
    # term by term.
    from flopcalc.predict.roofline import _repeated
    from flopcalc.errors import FlopcalcError

    def compute(c):
        return Fraction(c)

    def memory(c):
        return Fraction(10 ** 6 + 1)

    hi = 2 * 10 ** 6 + 2
    with pytest.raises(FlopcalcError, match=r"^too many decode steps flip between compute- and "
                       r"memory-bound to sum exactly; give fewer generated tokens$"):
        _repeated(compute, memory, 0, hi, 1, hi + 1)


def test_a_range_is_cut_after_each_cut_inside_it():
    # [1, 10] cut after 1 and after 4: [1, 1], [2, 4], [5, 10]; a cut past the end (12), at
    # the end (10) or before the start (0) changes nothing, and a repeated cut counts once
    assert _cut(1, 10, [4, 1, 12, 4, 10, 0]) == ((1, 1), (2, 4), (5, 10))
    assert _cut(3, 3, [3]) == ((3, 3),)
