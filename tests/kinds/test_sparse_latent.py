"""DeepSeek sparse attention by hand: a layer small enough that every count is worked in the
comment beside it.

d 8, 2 heads; latent attention with a query rank 4, a KV rank 4, per head 2 + 2 rotary query/key
dimensions (d_qk 4) and values of 2; an indexer of 2 heads of 4, top-3; a gated MLP of 4; one
layer, a final RMSNorm, a tied vocabulary of 8.
"""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

DSA = """n_layers: 1
d_model: 8
n_heads: 2
d_ff: 4
mlp: gated
activation: silu
norm: rmsnorm
positions: rotary
vocab_size: 8
tie_embeddings: true
layer_types: [dsa]
latent_attention: {q_lora_rank: 4, kv_lora_rank: 4, qk_nope_head_dim: 2, qk_rope_head_dim: 2,
                   v_head_dim: 2}
sparse_attention: {index_n_heads: 2, index_head_dim: 4, index_topk: 3}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "dsa.yaml"
    path.write_text(DSA)
    return str(path)


def test_params(cli, model):
    c = run(cli, "model", model)["params"]["components"]
    # Latent attention: q_a 8·4 = 32 and its RMSNorm 4, q_b 4·(2·4) = 32, kv_a 8·(4 + 2) = 48
    # and its RMSNorm 4, kv_b 4·2·(2 + 2) = 32, o (2·2)·8 = 32. The indexer reads the query
    # latent: wq_b 4·(2·4) = 32, wk 8·4 = 32, k_norm a LayerNorm of 4 (gain and bias), the
    # head weights 8·2 = 16.
    attn = {"q_a.weight": 32, "q_a_norm.weight": 4, "q_b.weight": 32, "kv_a.weight": 48,
            "kv_a_norm.weight": 4, "kv_b.weight": 32, "o.weight": 32,
            "indexer.wq_b.weight": 32, "indexer.wk.weight": 32, "indexer.k_norm.weight": 4,
            "indexer.k_norm.bias": 4, "indexer.weights_proj.weight": 16}
    assert {k[len("decoder.attn."):]: v for k, v in c.items()
            if k.startswith("decoder.attn.")} == attn
    # 184 + 88 in the attention, two RMSNorms 8 each, the MLP 3·8·4 = 96, the final norm 8,
    # the table 64.
    assert sum(c.values()) == 184 + 88 + 16 + 96 + 8 + 64 == 456


def test_forward_full_counts_every_key_as_the_eager_path(cli, model):
    f = run(cli, "model", model, "--seq", 5)["flops"]
    c = {k: v for k, v in f["components"].items() if k.startswith("decoder.attn.")}
    # T = 5 tokens, 25 (query, key) pairs per head (the top-3 only masks them). q_a 2·5·8·4
    # = 320, q_b 2·5·4·8 = 320, kv_a 2·5·8·6 = 480, kv_b 2·5·4·8 = 320, scores 2·2·25·4 = 400,
    # values 2·2·25·2 = 200, o 2·5·4·8 = 320. Indexer: wq_b 2·5·4·8 = 320, wk 2·5·8·4 = 320,
    # the head weights 2·5·8·2 = 160, its scores 2·2·4·25 = 400 and the weighted head sum
    # 2·2·25 = 100.
    assert c == {"decoder.attn.q_a": 320, "decoder.attn.q_b": 320, "decoder.attn.kv_a": 480,
                 "decoder.attn.kv_b": 320, "decoder.attn.scores": 400, "decoder.attn.av": 200,
                 "decoder.attn.o": 320, "decoder.attn.indexer.wq_b": 320,
                 "decoder.attn.indexer.wk": 320, "decoder.attn.indexer.weights_proj": 160,
                 "decoder.attn.indexer.scores": 400, "decoder.attn.indexer.head_sum": 100}
    # The MLP 3·2·5·8·4 = 960 and the LM head 2·5·8·8 = 640 are weights too.
    assert f["families"] == {"weights": 1760 + 800 + 960 + 640, "attention": 600 + 500}


def test_forward_causal_counts_the_top_k_pairs(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--attention", "causal")["flops"]["components"]
    # Queries 1..5 keep min(i, 3) keys: 1 + 2 + 3 + 3 + 3 = 12 pairs per head; scores
    # 2·2·12·4 = 192, values 2·2·12·2 = 96. The indexer scores every causal key: 15 pairs,
    # 2·2·4·15 = 240 and 2·2·15 = 60.
    assert (c["decoder.attn.scores"], c["decoder.attn.av"], c["decoder.attn.indexer.scores"],
            c["decoder.attn.indexer.head_sum"]) == (192, 96, 240, 60)
    # Below the top-k every causal key is kept: at 3 tokens 6 pairs in both.
    c = run(cli, "model", model, "--seq", 3, "--attention", "causal")["flops"]["components"]
    assert (c["decoder.attn.scores"], c["decoder.attn.indexer.scores"]) == (2 * 2 * 6 * 4,
                                                                            2 * 2 * 4 * 6)


def test_elementwise(cli, model):
    c = run(cli, "model", model, "--seq", 5, "--elementwise")["flops"]["components"]
    # The latents' RMSNorms 4·(5·4 + 5·4) = 160; softmax 5 per score, 2 heads x 25 = 250. The
    # indexer: k_norm 7·5·4 = 140, the head weights' scale 5·2 = 10, per head and pair the
    # score scale and the ReLU 2·2·25 = 100, per pair the mask add and the top-k compare
    # 2·25 = 50: 300.
    assert (c["decoder.attn.elementwise.qk_norm"], c["decoder.attn.elementwise.softmax"],
            c["decoder.attn.elementwise.indexer"]) == (160, 250, 300)
    c = run(cli, "model", model, "--seq", 5, "--elementwise", "--attention", "causal"
            )["flops"]["components"]
    # 12 kept pairs per head: softmax 5·2·12 = 120; the indexer 140 + 10 + 6·15 = 240.
    assert (c["decoder.attn.elementwise.softmax"], c["decoder.attn.elementwise.indexer"]) == (
        120, 240)


def test_decode_steps_and_cache(cli, model):
    from flopcalc.kinds.base import total
    from flopcalc.models.registry import load_model

    doc = run(cli, "infer", model, "--prompt", 4, "--gen", 2, "--kv-dtype", "fp32")
    d, kv = doc["decode"], doc["kv_cache"]
    c = {k: v for k, v in d["components"].items() if k.startswith("decoder.attn.")}
    # Steps at positions 5 and 6 (t = 2 tokens), weight-absorbed: q_a 2·2·8·4 = 128, q_b
    # 2·2·4·8 = 128, kv_a 2·2·8·6 = 192, W_UK into the query 2·2·2·2·4 = 64, the selected keys
    # min(5, 3) + min(6, 3) = 6: scores 2·2·6·(4 + 2) = 144, values 2·2·6·4 = 96, W_UV 2·2·2·4·2
    # = 64, o 2·2·4·8 = 128. The indexer on the 2 new tokens, wq_b 128, wk 128, weights 64,
    # over all 5 + 6 = 11 cached keys: 2·2·4·11 = 176 and 2·2·11 = 44.
    assert c == {"decoder.attn.q_a": 128, "decoder.attn.q_b": 128, "decoder.attn.kv_a": 192,
                 "decoder.attn.q_absorb": 64, "decoder.attn.scores": 144,
                 "decoder.attn.av": 96, "decoder.attn.v_up": 64, "decoder.attn.o": 128,
                 "decoder.attn.indexer.wq_b": 128, "decoder.attn.indexer.wk": 128,
                 "decoder.attn.indexer.weights_proj": 64, "decoder.attn.indexer.scores": 176,
                 "decoder.attn.indexer.head_sum": 44}
    # The step at 6 costs more than the one at 5 only in the indexer: one more key, 2·2·4 +
    # 2·2 = 20 FLOPs (the attention keeps 3 keys in both).
    assert d["flops_last"] - d["flops_first"] == 20
    # Per token and layer: the latent 4, the rotary key 2 and the indexer key 4 = 10 values, 40
    # bytes in fp32, for all 6 tokens (any may be picked): 240. Decompressed MHA: 2·(4 + 2) + 4
    # = 16 values, 64 bytes.
    assert (kv["bytes_per_token"], kv["bytes"], kv["mha_bytes_per_token"]) == (40, 240, 64)
    assert kv["layers"] == {"decoder.dsa": 240}
    # The steps read the 6 selected latents (6 values each: 36) and the 11 indexer keys (44):
    # 80 values, 320 bytes.
    assert d["bytes_components"]["kv_cache.read"] == 320
    spec = load_model(model).spec
    attn = spec.groups()[0].layer.mixers[0]
    assert attn.cache_reads(5, 6) == 80
    assert total(attn.decode(8, 1, 5, 6)) == sum(c.values())


def test_memory(cli, model):
    t = run(cli, "memory", model, "--seq", 5, "--no-flash")["activations"]["layers"][0]["tensors"]
    # the eager kernel; s = 5, b = 1, 16-bit: q and k 2·5·(8 + 8) = 160, the latents 2·5·(2·4 + 2·4 + 2) = 180,
    # the indexer's q, k and head weights 2·5·(8 + 4 + 2) = 140, the softmax 2·2·25 = 100, v
    # 2·5·4 = 40 and o's input 40.
    assert {k: v for k, v in t.items() if k.startswith("attn.")} == {
        "attn.input": 80, "attn.qk": 160, "attn.latents": 180, "attn.indexer_qk": 140,
        "attn.softmax": 100, "attn.v": 40, "attn.o_input": 40}


def test_crossover_counts_both_terms(cli, model):
    # Weights per token: attention 64 + 64 + 96 + 64 + 64 = 352, the indexer 64 + 64 + 32 =
    # 160, the MLP 192: 704. Per pair: the attention 2·2·(4 + 2) = 24, the indexer
    # 2·2·(4 + 1) = 20. Full: 44·s² = 704·s at s = 16.
    x = run(cli, "model", model)["crossover"]
    assert (x["seq"], x["exact"]) == (16, "16")
    # Causal, past the top-3: 24·(3s − 3) + 20·s(s + 1)/2 = 10s² + 82s − 72 ≥ 704s, i.e.
    # 10s² − 622s − 72 ≥ 0: irrational, first met at 63 (at 62: −196; at 63: 432).
    x = run(cli, "model", model, "--attention", "causal")["crossover"]
    assert (x["seq"], x["exact"]) == (63, None)


def test_notes_say_what_training_counts(cli, model):
    lines = run(cli, "model", model)["conventions"]
    assert any("3 x forward, the indexer's backward included" in line for line in lines)


BASE = DSA.split("latent_attention")[0]
LATENT = ("latent_attention: {q_lora_rank: 4, kv_lora_rank: 4, qk_nope_head_dim: 2, "
          "qk_rope_head_dim: 2, v_head_dim: 2}\n")
SPARSE = "sparse_attention: {index_n_heads: 2, index_head_dim: 4, index_topk: 3}\n"


@pytest.mark.parametrize("blocks, message", [
    (LATENT.replace("q_lora_rank: 4", "q_lora_rank: null") + SPARSE, "q_lora_rank must be set"),
    (LATENT + SPARSE.replace("index_head_dim: 4", "index_head_dim: 1"),
     "index_head_dim=1 must be at least qk_rope_head_dim=2"),
    (LATENT, "need a sparse_attention block"),
    (SPARSE, "need a sparse_attention block (index_n_heads, index_head_dim, index_topk) and a "
     "latent_attention block"),
])
def test_bad_configs_are_one_line(cli, tmp_path, blocks, message):
    path = tmp_path / "bad.yaml"
    path.write_text(BASE + blocks)
    r = cli("model", str(path))
    assert r.code == 2 and message in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
