"""`flopcalc serve` on configs small enough to work every figure by hand.

tiny.yaml: 2 layers, d_model 8, 2 query heads and 1 KV head of width 4, a plain MLP of 16, a
vocabulary of 16, untied head: 1,192 parameters. Per layer and token the cache holds 1 KV head x
(4 + 4) values x 2 bytes = 16 bytes; a block of 16 tokens is a 256-byte page per layer, 512
bytes for the one group of 2 layers.

Forward FLOPs per layer over T tokens: q 2·T·8·8 = 128T, k and v 2·T·8·4 = 64T each, o 128T, up
and down 2·T·8·16 = 256T each: 896T; attention 2·h·(d_qk + d_v) = 2·2·8 = 32 per (query, key)
pair, T(T+1)/2 causal pairs. The LM head 2·8·16 = 256 per token.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from flopcalc.commands import COMMANDS
from flopcalc.counting import quant
from flopcalc.commands import load
from flopcalc.errors import FlopcalcError

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

DATA = Path(__file__).resolve().parents[1] / "data" / "serve"
TINY, TINY_MTP = str(DATA / "tiny.yaml"), str(DATA / "tiny-mtp.yaml")


def serve(model: str = TINY, **options) -> dict:
    options.setdefault("max_model_len", 64)
    options.setdefault("kv_memory", "51200")  # 100 blocks of 512 bytes
    return COMMANDS["serve"](model, **options).to_dict()


def body(t: int) -> int:
    """Causal prefill FLOPs of t tokens without the LM head, both layers."""
    return 2 * (896 * t + 32 * t * (t + 1) // 2)


def test_capacity_by_hand():
    c = serve()["capacity"]
    assert [(g["kind"], g["layers"], g["block_size"], g["page_bytes"], g["block_bytes"])
            for g in c["groups"]] == [("full", 2, 16, 256, 512)]
    assert c["bytes_per_token"] == 32  # 2 layers x 16
    assert c["num_blocks"] == 51200 // 512 == 100
    assert c["blocks_per_request"] == 64 // 16 == 4
    assert c["max_concurrency"] == 25.0
    assert c["tokens"] == 1600  # int(25 x 64)
    assert c["log_line"] == ("GPU KV cache size: 1,600 tokens, Maximum concurrency for 64 tokens "
                             "per request: 25.00x")
    # a block size of 32: 1,024-byte blocks, 50 of them, 2 per request
    c = serve(block_size=32)["capacity"]
    assert (c["bytes_per_block"], c["num_blocks"], c["blocks_per_request"]) == (1024, 50, 2)
    # --kv-blocks: the engine's count instead of its memory
    c = serve(kv_memory=None, kv_blocks=7)["capacity"]
    assert (c["num_blocks"], c["max_concurrency"], c["tokens"]) == (7, 1.75, 112)


def test_one_request_must_fit_beside_the_null_block():
    """4 blocks of 512 bytes per request: 2,048 bytes hold the request but not the null block
    beside it, which the engine holds back: it refuses to start; 2,560 bytes fit."""
    c = serve(kv_memory="2048")["capacity"]
    assert not c["fits"]
    assert "(0.0 GiB KV cache is needed" in c["error"]
    assert c["estimated_max_model_len"] == 48  # 3 blocks of 16 tokens fit beside the null block
    assert serve(kv_memory="2560")["capacity"]["fits"]


def test_tensor_parallel_replicates_a_kv_head():
    """1 KV head on tp 2: each device holds it (vLLM replicates a head rather than split it),
    so a device's page is the same 256 bytes; the weights split."""
    c = serve(tp=2)["capacity"]
    assert c["groups"][0]["page_bytes"] == 256
    assert c["num_blocks"] == 100
    with pytest.raises(FlopcalcError, match="--tp 4 must divide the 2 heads"):
        serve(tp=4)


def test_shared_prefix_by_hand():
    """A prefix of 32 tokens shared by every request: its 32 / 16 = 2 blocks are held once, a
    request needs 4 − 2 = 2 of its own: (100 − 2) / 2 = 49 requests of 64 tokens (25 without).
    Its prefill is skipped: body(32) = 2 x (896·32 + 32·528) = 91,136 FLOPs; of a 40-token
    prompt body(40) − body(32) + the last token's head 256 = 124,160 − 91,136 + 256 = 33,280
    are left."""
    r = serve(shared_prefix=32, prompt=40, gen=8)
    x = r["prefix"]
    assert x["shared_blocks"] == [2] and x["shared_blocks_total"] == 2
    assert x["blocks_per_request"] == 2
    assert x["max_concurrency"] == 49.0
    assert x["tokens_capacity"] == 3136
    assert x["cached_tokens"] == 32
    assert x["prefill_flops_saved"] == body(32) == 91_136
    assert x["prefill_flops"] == body(40) - body(32) + 256 == 33_280
    # whole blocks only: a prefix of 40 shares 2 blocks and skips 32 tokens
    x = serve(shared_prefix=40, prompt=48, gen=8)["prefix"]
    assert (x["shared_blocks_total"], x["cached_tokens"]) == (2, 32)


def test_speculative_draft_model_by_hand():
    """The tiny model drafting for itself, k = 2 tokens, acceptance 0.5, prompt 4 (so the step
    verifies positions 5..7): expected tokens (1 − 0.5³) / (1 − 0.5) = 1.75 (Leviathan et al.
    2023). Verify: 3 tokens through both layers, 896·3 each, and 32 FLOPs per visible key: 5 +
    6 + 7 = 18 keys, 576; 2 x (2,688 + 576) + 3 heads (768) = 7,296. Draft: 2 steps at
    positions 5 and 6: 2 x (896·2 + 32·11) + 2 heads (512) = 4,800. The draft's 2 layers have
    the target's spec and join its group: 4 layers, 1,024-byte blocks, 50 of them."""
    r = serve(draft=TINY, draft_tokens=2, acceptance="0.5", prompt=4, gen=4)
    x = r["speculative"]
    assert x["expected_tokens_per_step"] == 1.75
    assert x["verify_flops"] == 7296
    assert x["draft_flops"] == 4800
    assert x["draft_layers"] == 2 and x["draft_bytes_per_token"] == 32
    # bytes: every weight but the embedding table (2,128) and its rows read (16 each); the
    # verify reads the 7 positions' K/V once (2 x 7 x 16 = 224) and writes 3 tokens' (96):
    # 2,128 + 48 + 224 + 96 = 2,496; the draft steps at 5 and 6: 2,128 + 16 + 160 + 32 and
    # 2,128 + 16 + 192 + 32: 4,704
    assert x["verify_bytes"] == 2496
    assert x["draft_bytes"] == 4704
    c = r["capacity"]
    assert [(g["layers"], g["draft_layers"]) for g in c["groups"]] == [(4, 2)]
    assert (c["bytes_per_block"], c["num_blocks"], c["max_concurrency"]) == (1024, 50, 12.5)


def test_a_mixture_of_experts_draft_adds_its_weights_to_the_last_stage():
    """tiny-moe.yaml drafting for tiny.yaml. Its parameters per layer: attention q, o 8·8 = 64
    each, k, v 8·4 = 32 each (192), two RMSNorms (16), the router 8·4 (32), 4 gated experts of
    3·8·8 = 192 (768): 1,008; 2 layers, an untied 16 x 8 table and head and a final norm:
    2,016 + 264 = 2,280, 4,560 bf16 bytes; next to tiny's 2,384 on one device: 6,944.
    On 2 tensor-parallel devices every matrix is halved (experts too: no expert parallelism),
    the norms and router are whole, in parameters: tiny (64 + 32 + 32 + 64 + 256) / 2 + 16 =
    240 a layer, 480 + 64 + 64 + 8 = 616;
    the draft (192 + 768) / 2 + 16 + 32 = 528 a layer, 1,056 + 136 = 1,192: 1,808 parameters,
    3,616 bytes."""
    moe = str(DATA / "tiny-moe.yaml")
    r = serve(draft=moe, draft_tokens=2, acceptance="0.5")
    assert r["weights"]["bytes"] == 2384
    assert r["weights"]["device_bytes"] == [6944]
    r = serve(draft=moe, draft_tokens=2, acceptance="0.5", tp=2)
    assert r["weights"]["device_bytes"] == [3616]


def test_speculative_mtp_by_hand():
    """tiny-mtp.yaml: the tiny model with one MTP module (DeepSeek-V3's: a 2d → d projection,
    a layer of the last layer's kind, the shared head). k = 1, acceptance 0.8, prompt 4: the
    draft token at position 5 costs 2·16·8 = 256 + 896 + 32·5 = 1,056 + 256 = 1,568 FLOPs; the
    verify of positions 5 and 6 2 x (896·2 + 32·11) + 2 heads = 4,800; expected tokens 1.8.
    The MTP layer joins the target's group: 3 layers, 768-byte blocks, 51,200 // 768 = 66."""
    r = serve(TINY_MTP, draft="mtp", draft_tokens=1, acceptance="0.8", prompt=4, gen=4)
    x = r["speculative"]
    assert x["expected_tokens_per_step"] == pytest.approx(1.8)
    assert x["draft_flops"] == 1568
    assert x["verify_flops"] == 4800
    assert x["draft_layers"] == 1
    c = r["capacity"]
    assert (c["bytes_per_block"], c["num_blocks"]) == (768, 66)
    assert c["blocks_per_request"] == 4
    with pytest.raises(FlopcalcError, match="no multi-token-prediction modules"):
        serve(draft="mtp", acceptance="0.8")
    with pytest.raises(FlopcalcError, match="needs --acceptance"):
        serve(draft="mtp")


def test_time_compute_bound_by_hand():
    """A device of 1,000 FLOP/s and 10¹² B/s: every step is compute-bound. The prompt of 32 is
    one chunk: body(32) + one head, 91,392 FLOPs: 91.392 s to the first token. The decode step
    at position 33: 2 x (896 + 32·33) + 256 = 4,160 FLOPs: 4.16 s per token. Efficiencies of 1
    make the estimate the bound."""
    t = serve(peak="1000", bandwidth="1e12", prompt=32, gen=1, compute_efficiency="1",
              memory_efficiency="1")["timing"]
    assert t["prefill_chunks"] == 1 and t["prefill_flops"] == 91_392
    assert t["ttft_bound_s"] == pytest.approx(91.392) == t["ttft_estimate_s"]
    assert t["first_step"]["flops"] == 4160
    assert t["tpot_bound_s"] == pytest.approx(4.16)
    assert t["tokens_per_s_per_sequence_bound"] == pytest.approx(1 / 4.16)
    # chunked prefill: chunks of 16 tokens: the same FLOPs in two steps
    t = serve(peak="1000", bandwidth="1e12", prompt=32, gen=1, max_num_batched_tokens=16,
              compute_efficiency="1", memory_efficiency="1")["timing"]
    assert t["prefill_chunks"] == 2 and t["prefill_flops"] == 91_392


def test_time_memory_bound_by_hand():
    """10¹⁵ FLOP/s and 1,000 B/s: memory-bound. A decode step at position 33 reads every weight
    but the embedding table ((1,192 − 128) x 2 = 2,128 bytes) and the embedding's one row (16),
    the 33 cached tokens' K/V (2 layers x 33 x 16 = 1,056) and writes the new token's (32):
    3,232 bytes, 3.232 s. 4 sequences: 4·(1,056 + 32) + 2,128 + 4 rows (64) = 6,544 bytes, and
    4 tokens per step: 4 / 6.544 tokens/s in all."""
    t = serve(peak="1e15", bandwidth="1000", prompt=32, gen=1, compute_efficiency="1",
              memory_efficiency="1")["timing"]
    assert t["first_step"]["bytes"] == 3232
    assert t["first_step"]["binds"] == "memory"
    assert t["tpot_bound_s"] == pytest.approx(3.232)
    t = serve(peak="1e15", bandwidth="1000", prompt=32, gen=1, batch=4,
              compute_efficiency="1", memory_efficiency="1")["timing"]
    assert t["first_step"]["bytes"] == 6544
    assert t["tokens_per_s_aggregate_bound"] == pytest.approx(4 / 6.544)


def test_scaled_weight_formats_by_hand():
    """Per layer the matmul weights are q 8x8, k and v 8x4, o 8x8, up 8x16, down 16x8 (448
    values); the rest (norms 2 x 8 per layer, final norm 8, embedding and head 128 each: 296
    values) stays bf16, 592 bytes.
    nvfp4: ½ byte per value, an fp8 scale per 16 inputs of each output, an fp32 per matrix:
    q 32 + 8 + 4, k and v 16 + 4 + 4, o 44, up 64 + 16 + 4, down 64 + 8 + 4: 296 per layer.
    mxfp4: an e8m0 per 32 inputs: 40 + 20 + 20 + 40 + 80 + 72 = 272. fp8-tensor: 448 + 6 x 4 =
    472; fp8-block: one 128 x 128 tile per matrix, the same 472."""
    spec = load(TINY).spec
    assert quant.model_weight_bytes(spec, "bf16") == 2 * 1192
    assert quant.model_weight_bytes(spec, "nvfp4") == 2 * 296 + 592 == 1184
    assert quant.model_weight_bytes(spec, "mxfp4") == 2 * 272 + 592 == 1136
    assert quant.model_weight_bytes(spec, "fp8-tensor") == 2 * 472 + 592 == 1536
    assert quant.model_weight_bytes(spec, "fp8-block") == 1536
    assert quant.model_weight_bytes(spec, "int4") == Fraction(1192, 2)  # no scales
    assert serve(weights_dtype="nvfp4")["weights"]["bytes"] == 1184
    r = COMMANDS["infer"](TINY, prompt=4, gen=2, weights_dtype="mxfp4").to_dict()
    assert r["weights"]["bytes"] == 1136 and r["weights"]["bits_per_element"] == 4


def test_mxfp4_experts_gpt_oss_20b():
    """gpt-oss ships its routed experts in mxfp4 and the rest in bf16: 24 layers x 32 experts x
    3 matrices of 2,880 x 2,880, each 2,880²/2 + 2,880·90 bytes; the 20.9B parameters then take
    13,761,264,768 bytes (the published checkpoint: 13.8 GB)."""
    spec = load(str(DATA / "configs" / "gpt-oss-20b.json")).spec
    experts = 24 * 32 * 3 * (2880 * 2880 // 2 + 2880 * 90)
    rest = 2 * (20_914_757_184 - 24 * 32 * 3 * 2880 * 2880)
    assert quant.model_weight_bytes(spec, "bf16", "mxfp4") == experts + rest == 13_761_264_768


def test_nvfp4_kv_cache():
    """--kv-dtype nvfp4 (FlashInfer's layout): per head and side d/2 fp4 bytes and d/16 fp8
    scales: Llama 3.1 8B, 8 KV heads of 128: 8 x 2 x (64 + 8) = 1,152 bytes per token and
    layer, 18,432 per page, 589,824 per block of 32 layers (bf16: 2,097,152)."""
    c = COMMANDS["serve"](str(DATA / "configs" / "llama-3.1-8b.json"), max_model_len=8192,
                          kv_memory=str(1 << 30), kv_dtype="nvfp4").to_dict()["capacity"]
    assert c["groups"][0]["page_bytes"] == 18_432
    assert c["bytes_per_block"] == 589_824
    with pytest.raises(FlopcalcError, match="latent-attention"):
        COMMANDS["serve"](TINY, max_model_len=64, kv_memory="51200", kv_dtype="fp8_ds_mla")


def test_collectives_by_hand():
    """tp 2: after each of the 2 x 2 sublayers one all-reduce of the batch's B·d bf16 values (1
    x 8 x 2 = 16 bytes), of which a ring sends 2(n − 1)/n = 1 x 16 per device: 64 bytes in 4
    collectives per decode step; bound 64 bytes over DGX H100's 450 GB/s NVLink. tiny-moe.yaml
    on ep 2 (tp 1): each MoE layer dispatches and combines its token's k = 2 copies (2 x 16
    bytes) by all-to-all, (n − 1)/n of them leaving the device: 4 all-to-alls of 16 bytes."""
    r = serve(accelerator="h100", tp=2, prompt=8, gen=1)
    step = r["timing"]["first_step"]
    assert (step["comm_bytes"], step["collectives"]) == (64, 4)
    assert r["timing"]["network"]["name"] == "dgx-h100"
    no_comm = serve(accelerator="h100", prompt=8, gen=1)["timing"]["first_step"]
    assert step["bound_s"] == pytest.approx(no_comm["bound_s"] / 2 + 64 / 450e9, rel=0.2)
    r = serve(str(DATA / "tiny-moe.yaml"), accelerator="h100", ep=2, prompt=8, gen=1)
    step = r["timing"]["first_step"]
    assert (step["comm_bytes"], step["collectives"]) == (64, 4)


def test_the_mtp_modules_parts_by_hand():
    """tiny-mtp.yaml at 4 tokens (full attention): the 2d → d projection 2·4·16·8 = 1,024
    FLOPs, the module's layer 4·896 + 32·16 = 4,096, its pass through the shared head
    2·4·8·16 = 1,024, the one part marked as a head."""
    from flopcalc.counting.model import mtp_flops, workload
    from flopcalc.kinds.base import total

    spec = load(TINY_MTP).spec
    parts = mtp_flops(spec, workload(spec, 4, None, 1, "full"))
    heads = [p for p in parts if p.head]
    assert len(heads) == 1 and heads[0].value == 1024 and heads[0].name.endswith("lm_head")
    assert total(parts) == 1024 + 4096 + 1024
    # named within the module: its projection, its layer's parts, its pass through the head
    names = [p.name for p in parts]
    assert (names[0], names[-1]) == ("mtp.eh_proj", "mtp.lm_head")
    assert all(n.startswith("mtp.") for n in names)
