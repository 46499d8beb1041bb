"""The paged-cache engine's small rules, each on specs built by hand: vLLM's bisection for the
longest length that fits, a shared prefix's blocks per group, pipeline partitions and the
page of each kind of spec. The vLLM-recorded cases (`tests/engines/test_vllm_planning.py`) hit
these rules only at a few points; here each is checked against a brute-force definition or a
hand-worked integer."""

from __future__ import annotations

import pytest

from flopcalc.engines import vllm as E
from flopcalc.errors import FlopcalcError
from flopcalc.kinds.base import EngineCache, EngineState

pytestmark = [pytest.mark.hand, pytest.mark.invariant, pytest.mark.behaviour]


def full(i: int = 0, bs: int = 16, per_token: int = 10) -> E.LayerSpec:
    return E.LayerSpec(i, f"layers.{i}", "full", bs, per_token)


def sliding(i: int = 0, bs: int = 16, window: int = 40, per_token: int = 10) -> E.LayerSpec:
    return E.LayerSpec(i, f"layers.{i}", "sliding", bs, per_token, window=window)


def brute_longest(groups: list[E.Group], bpb: int, check: int, length: int,
                  in_flight: int) -> int:
    """The definition: the largest n in 1..length whose blocks fit in `check` bytes, 0 if
    none (vLLM bisects; blocks grow with n, so the two agree)."""
    best = 0
    for n in range(1, length + 1):
        if bpb * sum(g.blocks_per_request(n, in_flight) for g in groups) <= check:
            best = n
    return best


@pytest.mark.parametrize("check", [0, 99, 100, 101, 250, 999, 1000, 1600, 2300, 10 ** 6])
@pytest.mark.parametrize("length", [1, 2, 15, 16, 17, 64, 100, 161])
def test_longest_length_that_fits_is_the_largest_n_whose_blocks_fit(check, length):
    groups = [E.Group([full()]), E.Group([sliding(1)])]
    got = E._estimate_len(groups, 100, check, length, in_flight=8)
    assert got == brute_longest(groups, 100, check, length, 8)


def test_longest_length_by_hand():
    # one full layer, 16-token blocks of 100 bytes: 1,000 bytes hold 10 blocks = 160 tokens
    groups = [E.Group([full()])]
    assert E._estimate_len(groups, 100, 1000, 1000, 0) == 160
    assert E._estimate_len(groups, 100, 1000, 150, 0) == 150  # never past max_model_len
    assert E._estimate_len(groups, 100, 99, 1000, 0) == 0  # not even one token


def test_a_plan_that_does_not_fit_says_the_estimate():
    # 2 full layers of 10 bytes a token, 16-token blocks: a 320-byte block; 64 tokens need 4.
    layers = [full(0), full(1)]
    engine = E.Engine(max_model_len=64)
    p = E.plan(layers, engine, [320 * 4], 2)  # room for 4 blocks, one of them the null block
    assert not p.fits
    assert p.estimated_max_len == 48  # 3 blocks of 16 beside the null block
    assert "estimated maximum model length is 48." in p.error
    assert p.needed_bytes == 320 * 4
    p = E.plan(layers, engine, [320], 2)  # the null block only
    assert not p.fits and p.estimated_max_len == 0
    assert p.error.startswith("No available memory for the cache blocks.")
    p = E.plan(layers, engine, [320 * 5], 2)
    assert p.fits and p.estimated_max_len is None and p.error == ""
    # 1-token blocks of 20 bytes: 40 bytes hold the null block and one token
    p = E.plan([full(0, bs=1), full(1, bs=1)], E.Engine(max_model_len=64, block_size=1),
               [40], 2)
    assert p.estimated_max_len == 1
    assert "estimated maximum model length is 1." in p.error


@pytest.mark.parametrize("kind, held", [("full", 6), ("mla", 6), ("indexer", 6),
                                        ("sliding", 0), ("chunked", 0), ("state", 0)])
def test_a_shared_prefix_is_held_once_only_where_every_token_is_kept(kind, held):
    # 100 prefix tokens in 16-token blocks: 6 whole blocks in a group that keeps every token
    spec = E.LayerSpec(0, "layers.0", kind, 16, 10, window=40, chunk=64, state_bytes=160)
    p = E.plan([spec], E.Engine(max_model_len=256), [10 ** 9], 1)
    assert E.shared_prefix_blocks(p, 100) == [held]


def test_shared_prefix_blocks_follow_each_groups_block_size():
    layers = [full(0, bs=16), sliding(1, bs=16), full(2, bs=16), sliding(3, bs=16)]
    p = E.plan(layers, E.Engine(max_model_len=256), [10 ** 9], 4)
    assert sorted(E.shared_prefix_blocks(p, 95)) == [0, 5]  # 95 // 16 = 5 in the full group
    assert [g.layout for g in p.groups] in (["full", "sliding"], ["sliding", "full"])


@pytest.mark.parametrize("layers, pp, parts", [
    (8, 1, [8]), (8, 2, [4, 4]), (9, 2, [5, 4]), (10, 4, [2, 3, 3, 2]), (7, 4, [2, 2, 2, 1]),
    (5, 3, [2, 2, 1])])
def test_pipeline_partition_gives_the_remainder_to_the_stages_before_the_last(layers, pp, parts):
    # vLLM's get_pp_indices: remainder r goes to stages p-2, p-3, ..., p-1-r
    assert E.pp_partition(layers, pp) == parts
    assert sum(parts) == layers


def test_blocks_per_request_of_each_kind_by_hand():
    L, T = 1000, 24
    assert full(bs=16).blocks_per_request(L, T) == 63  # cdiv(1000, 16)
    # window 40: cdiv(min(39 + 24, 1000), 16) + 1 = cdiv(63, 16) + 1 = 5
    assert sliding(window=40).blocks_per_request(L, T) == 5
    assert sliding(window=40).blocks_per_request(50, T) == 5  # cdiv(50, 16) + 1
    assert replace_extra(sliding(window=40), 2).blocks_per_request(L, T) == 6  # 65 -> 5, +1
    chunked = E.LayerSpec(0, "c", "chunked", 16, 10, chunk=64)
    assert chunked.blocks_per_request(L, T) == 6  # cdiv(88, 16)
    assert chunked.blocks_per_request(40, T) == 3  # cdiv(40, 16)
    state = E.LayerSpec(0, "s", "state", 16, state_bytes=160, speculative_blocks=2)
    assert state.blocks_per_request(L, T) == 3  # 1 + 2 speculative
    aligned = E.LayerSpec(0, "s", "state", 16, state_bytes=160, speculative_blocks=2,
                          checkpoint_blocks=3, align=True)
    assert aligned.blocks_per_request(L, T) == 7  # 2 + 2 + 3


def replace_extra(x: E.LayerSpec, extra: int) -> E.LayerSpec:
    from dataclasses import replace
    return replace(x, extra_retained=extra)


def test_pages_of_each_spec():
    assert full(bs=16, per_token=10).page_bytes == 160
    assert E.LayerSpec(0, "s", "state", 16, state_bytes=999).page_bytes == 999
    assert E.LayerSpec(0, "s", "state", 16, state_bytes=999, padded=1024).page_bytes == 1024
    g = E.Group([full(0, per_token=10), full(1, per_token=20)], uniform_type=True)
    assert g.page_bytes == 160 + 320 and g.block_bytes() == 480
    assert g.block_bytes({"layers.1"}) == 320
    assert E.Group([full(0, per_token=10), full(1, per_token=20)]).page_bytes == 160


def test_engine_properties_by_hand():
    e = E.Engine(max_model_len=10, pp=3, max_num_batched_tokens=100)
    assert (e.concurrent_batches, e.in_flight_tokens) == (4, 400)  # pp + 1 with async
    e = E.Engine(max_model_len=10, pp=3, max_num_batched_tokens=100, async_scheduling=False)
    assert (e.concurrent_batches, e.in_flight_tokens) == (3, 300)
    e = E.Engine(max_model_len=10, model_dtype="fp16", mamba_cache_dtype="fp32")
    assert (e.value_bytes("auto"), e.conv_bytes, e.ssm_bytes) == (2, 4, 4)
    e = E.Engine(max_model_len=10, mamba_ssm_cache_dtype="fp32")
    assert (e.conv_bytes, e.ssm_bytes) == (2, 4)


def test_token_bytes_of_each_cache_layout():
    e = E.Engine(max_model_len=10)
    attn = EngineCache("full", heads=2, k_dim=64, v_dim=32)
    assert E.token_bytes(attn, e, False) == 2 * 96 * 2
    assert E.token_bytes(attn, E.Engine(max_model_len=10, kv_dtype="fp8"), False) == 2 * 96
    # nvfp4: d/2 + d/16 bytes per head and side: (32 + 4) + (16 + 2) = 54 per head
    assert E.token_bytes(attn, E.Engine(max_model_len=10, kv_dtype="nvfp4"), False) == 108
    mla = EngineCache("mla", heads=1, k_dim=576, rope_dim=64)
    assert E.token_bytes(mla, e, False) == 576 * 2
    # fp8_ds_mla: 512 + 512/128·4 + 2·64 = 656; a sparse model serves fp8 that way
    assert E.token_bytes(mla, E.Engine(max_model_len=10, kv_dtype="fp8_ds_mla"), False) == 656
    assert E.token_bytes(mla, E.Engine(max_model_len=10, kv_dtype="fp8"), True) == 656
    assert E.token_bytes(mla, E.Engine(max_model_len=10, kv_dtype="fp8"), False) == 576
    assert E.token_bytes(mla, E.Engine(max_model_len=10, kv_dtype="nvfp4_ds_mla"), False) == 352
    assert E.token_bytes(EngineCache("indexer", heads=1, k_dim=128), e, True) == 132
    # the error names the fix: softmax attention's fp8 layout
    with pytest.raises(FlopcalcError, match="latent-attention .*model has softmax attention: "
                                            "choose fp8$"):
        E.token_bytes(attn, E.Engine(max_model_len=10, kv_dtype="fp8_ds_mla"), False)
    with pytest.raises(FlopcalcError, match="^--kv-cache-dtype nvfp4 packs softmax attention's K and "
                                            "V; for latent attention vLLM has nvfp4_ds_mla$"):
        E.token_bytes(mla, E.Engine(max_model_len=10, kv_dtype="nvfp4"), False)
    odd = EngineCache("mla", heads=1, k_dim=320, rope_dim=64)
    with pytest.raises(FlopcalcError, match="^nvfp4_ds_mla is DeepSeek's layout for a 512-wide "
                                            "latent and 64 rotary dims; choose fp8 or auto$"):
        E.token_bytes(odd, E.Engine(max_model_len=10, kv_dtype="nvfp4_ds_mla"), False)


def test_state_bytes_count_draft_copies_and_each_dtype_class():
    cache = EngineCache("state", states=(EngineState("conv", 10, "conv", per_draft=3),
                                         EngineState("ssm", 100, "state")))
    e = E.Engine(max_model_len=10, speculative_tokens=2, mamba_ssm_cache_dtype="fp32")
    assert E.state_bytes(cache, e) == (10 + 3 * 2) * 2 + 100 * 4  # 432


@pytest.mark.parametrize("n_full, n_sliding, sizes", [
    (4, 3, [4, 3]),  # 4 < 1.5·3: groups of the larger count, 4; the sliding group is short
    (6, 3, [3, 3, 3]),  # 6 ≥ 1.5·3: groups of the smaller count, 3: the full layers make two
    (5, 4, [5, 4]),
    (6, 4, [3, 3, 4]),  # 6 = 1.5·4 is not below it: groups of 4, so the 6 full layers make
])                      # cdiv(6, 4) = 2 groups of 3 (every other layer)
def test_hybrid_groups_take_the_larger_count_only_when_under_one_and_a_half_times(
        n_full, n_sliding, sizes):
    # vLLM's _get_kv_cache_groups_uniform_page_size (kv_cache_planning.py:521-532): group size
    # max if max < 1.5·min else min; each type's layers split into cdiv(n, size) groups, taking
    # every cdiv-th layer
    layers = [full(i) for i in range(n_full)] + [sliding(n_full + i) for i in range(n_sliding)]
    groups = E._hybrid_groups(layers)
    assert [len(g.layers) for g in groups] == sizes
    if n_full == 6 and n_sliding == 3:
        assert [x.layer for x in groups[0].layers] == [0, 2, 4]


def test_a_prefill_kernel_that_keeps_no_checkpoint_asks_for_no_blocks_and_no_multiple():
    # Gated DeltaNet's checkpoints belong to FlashInfer's prefill (1 block, on multiples of
    # 64); under Triton's prefill there are none, and no alignment beyond 1
    gdn = EngineCache("state", checkpoint_blocks=1, checkpoint_alignment=64,
                      checkpoint_kernel="flashinfer")
    flashinfer = E.Engine(max_model_len=1024)
    triton = E.Engine(max_model_len=1024, gdn_prefill_backend="triton")
    assert E._checkpoint(gdn, flashinfer) == (1, 64)
    assert E._checkpoint(gdn, triton) == (0, 1)
    mamba2 = EngineCache("state", checkpoint_blocks=1)  # every kernel keeps Mamba-2's
    assert E._checkpoint(mamba2, triton) == (1, 1)


def test_each_cache_of_a_layer_has_its_own_name():
    # a layer holding attention and a state (Falcon-H1's parallel mixers) has two caches;
    # vLLM keys every cache by its own layer name
    caches = [(0, (EngineCache("full", heads=2, k_dim=4, v_dim=4), EngineCache("state"))),
              (1, (EngineCache("full", heads=2, k_dim=4, v_dim=4),))]
    layers, _ = E.engine_layers(caches, E.Engine(max_model_len=1024))
    assert [x.name for x in layers] == ["layers.0", "layers.0.1", "layers.1"]


def test_a_latent_attention_hybrid_aligns_its_block_to_128_tokens():
    # Kimi Linear's shape: latent attention (576 bf16 values, 1,152 bytes a token) beside a
    # state layer of 100,000 bf16 values (200,000 bytes). Without prefix caching the block
    # only has to hold the state page: k = max(16, 16) = 16 would give 16·⌈200,000 / (16 ·
    # 1,152)⌉ = 176 tokens, but an MLA hybrid's kernel block is at least 128
    # (platforms/interface.py:1083-1088): 128·⌈200,000 / (128 · 1,152)⌉ = 256 tokens, a
    # page of 256 · 1,152 = 294,912 bytes, the state padded to it
    caches = [(0, (EngineCache("mla", heads=1, k_dim=576, rope_dim=64),)),
              (1, (EngineCache("state", states=(EngineState("ssm", 100_000, "state"),)),))]
    layers, alignment = E.engine_layers(caches, E.Engine(max_model_len=1024,
                                                         prefix_caching=False))
    assert alignment == E.Alignment(256, 1152, 200_000, 294_912, 128)
    assert [x.block_size for x in layers] == [256, 1024]  # the state keeps one whole-length block
    softmax = [(0, (EngineCache("full", heads=1, k_dim=288, v_dim=288),)), caches[1]]
    _, plain = E.engine_layers(softmax, E.Engine(max_model_len=1024, prefix_caching=False))
    assert plain is not None and (plain.block_size, plain.align_multiple) == (176, 16)


def test_unifying_pages_pads_a_state_page_even_where_it_divides_the_largest():
    # kv_cache_planning.py:346-408: an attention page that divides the largest grows by
    # whole blocks (16 tokens of 10 bytes, 160 bytes, under a 320-byte page: 32 tokens),
    # but a state page is padded, never multiplied, even when it divides (80 into 320)
    layers = [full(0, per_token=20), full(1), E.LayerSpec(2, "layers.2", "state", 1024,
                                                          state_bytes=80)]
    out = E._unify_pages(layers)
    assert (out[0].block_size, out[0].padded) == (16, None)
    assert (out[1].block_size, out[1].padded) == (32, None)
    assert (out[2].block_size, out[2].padded, out[2].page_bytes) == (1024, 320, 320)


def test_the_hybrid_manager_off_promotes_windows_beside_latent_attention_too():
    # kv_cache_planning.py:744-816: with full-attention layers present, sliding and chunked
    # layers are made full; latent attention is full attention there
    mla = E.LayerSpec(0, "layers.0", "mla", 16, 10)
    out = E._promote([mla, sliding(1), E.LayerSpec(2, "layers.2", "chunked", 16, 10,
                                                   chunk=64)])
    assert [(x.layout, x.window, x.chunk) for x in out] == [("mla", None, None),
                                                          ("full", None, None),
                                                          ("full", None, None)]
    alone = [sliding(0), sliding(1)]  # no full layer: nothing to promote to
    assert E._promote(alone) == alone


def test_a_drafters_layers_are_marked_as_its_own():
    # a drafter's layers, state or attention, are flagged draft (they sit on the last
    # pipeline stage) and named draft.layers.N; the target's are not
    state = EngineCache("state", states=(EngineState("ssm", 100, "state"),))
    attn = EngineCache("full", heads=1, k_dim=8, v_dim=8)
    layers, _ = E.engine_layers([(0, [state]), (1, [attn])], E.Engine(max_model_len=16),
                                draft=[(2, [state]), (3, [attn])])
    assert [(x.name, x.draft) for x in layers] == [
        ("layers.0", False), ("layers.1", False), ("draft.layers.2", True),
        ("draft.layers.3", True)]


def test_the_hybrid_alignment_sizes_pages_by_the_latent_cache_not_the_indexer():
    # beside state layers the attention page of one token is the first non-indexer cache's,
    # whichever order a layer lists them in: MLA's 576 values (512 latent + 64 rotary) at
    # 2 bytes (auto = bf16) = 1,152 bytes, not the indexer's 128 + 4 = 132
    state = EngineCache("state", states=(EngineState("ssm", 100, "state"),))
    indexer = EngineCache("indexer", heads=1, k_dim=128)
    mla = EngineCache("mla", heads=1, k_dim=576, rope_dim=64)
    _, align = E.engine_layers([(0, [state]), (1, [indexer, mla])], E.Engine(max_model_len=16))
    assert align is not None and align.attention_page_1 == 1152


def test_the_mtp_drafter_layers_follow_the_targets():
    # vLLM's DeepSeek MTP drafter registers its module as layer num_hidden_layers + k:
    # DeepSeek-V3's 61 layers put its one module at 61 (the checkpoint's model.layers.61)
    import flopcalc

    spec = flopcalc.load("deepseek-v3").spec
    assert [i for i, _ in E.mtp_caches(spec, 1)] == [61]


def test_a_page_that_does_not_divide_the_largest_is_padded_unless_it_is_latent():
    # unify_kv_cache_spec_page_size: a smaller attention page that does not divide the
    # largest keeps its block and is padded to it (a backend reading pages by block stride);
    # latent attention's and the indexer's backends do not, and vLLM raises. 16 tokens of 20
    # bytes (320) under 16 of 30 (480): 480 % 320 = 160, so the 320 page is padded to 480.
    out = E._unify_pages([full(0, per_token=20), sliding(1, per_token=30)])
    assert [(x.block_size, x.padded, x.page_bytes) for x in out] == [(16, 480, 480),
                                                                     (16, None, 480)]
    for kind in ("mla", "indexer"):
        latent = E.LayerSpec(0, "layers.0", kind, 16, 20)
        with pytest.raises(FlopcalcError) as caught:
            E._unify_pages([latent, sliding(1, per_token=30)])
        assert str(caught.value) == ("the latent-attention page (320 bytes) does not divide "
                                     "the largest page (480); vLLM cannot unify them")


def test_an_engine_cache_of_an_unknown_kind_or_state_class_is_refused():
    engine = E.Engine(max_model_len=16)
    with pytest.raises(FlopcalcError, match="an engine cache of layout 'paged': layouts are full, "):
        E.engine_layers([(0, [EngineCache("paged")])], engine)
    with pytest.raises(FlopcalcError, match="an engine cache of layout 'paged'"):  # a drafter's
        E.engine_layers([(0, [EngineCache("full", k_dim=8, v_dim=8)])], engine,
                        draft=[(1, [EngineCache("paged")])])
    odd = EngineCache("state", states=(EngineState("ssm", 100, "fp8"),))
    with pytest.raises(FlopcalcError, match="^an engine state's dtype class is conv or state$"):
        E.engine_layers([(0, [odd])], engine)


def test_a_model_with_nothing_to_cache_has_no_groups_and_no_plan():
    assert E.kv_cache_groups([]) == [] and E.kv_cache_groups([], hma=False) == []
    with pytest.raises(FlopcalcError, match="^this model keeps no KV cache or state: nothing "
                                            "to page$"):
        E.plan([], E.Engine(max_model_len=16), [10**9], 1)


def test_kv_memory_is_given_once_or_once_per_stage():
    # three stages: one figure (every worker the same) or three; two is refused
    engine = E.Engine(max_model_len=16, pp=3)
    layers = [full(i) for i in range(3)]
    assert E.plan(layers, engine, [10**6], 3) == E.plan(layers, engine, [10**6] * 3, 3)
    # each stage its own: one 160-byte page a layer, so 1e6 // 160 = 6,250 blocks and so on;
    # the pool is the least of them
    plan = E.plan(layers, engine, [10**6, 2 * 10**6, 3 * 10**6], 3)
    assert [(s.available_bytes, s.num_blocks) for s in plan.stages] == [
        (10**6, 6_250), (2 * 10**6, 12_500), (3 * 10**6, 18_750)]
    assert plan.num_blocks == 6_250
    with pytest.raises(FlopcalcError) as caught:
        E.plan(layers, engine, [10**6, 10**6], 3)
    assert str(caught.value) == ("give one KV memory for every worker or one per pipeline "
                                 "stage (3), not 2")


def test_sliding_layers_of_two_windows_are_two_types_not_one():
    # get_kv_cache_groups: layers of one registered type and one block size share a uniform
    # group; sliding windows of 40 and 80 keys are two types (the window is part of it), so
    # the hybrid grouping gives each its own group, as it would full and sliding layers
    groups = E.kv_cache_groups([sliding(0, window=40), sliding(1, window=80)])
    assert [[x.name for x in g.layers] for g in groups] == [["layers.0"], ["layers.1"]]
    assert not any(g.uniform_type for g in groups)
    same = E.kv_cache_groups([sliding(0, per_token=10), sliding(1, per_token=20)])
    assert len(same) == 1 and same[0].uniform_type  # one window, two widths: one type
