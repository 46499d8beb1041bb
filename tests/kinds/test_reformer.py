"""Reformer's layers and reversible output by hand (kinds/reformer.py): d 8, a local layer
then an LSH layer, 2 heads of 3 (h·d_h = 6, not d), MLP 12 wide, vocabulary 10, LSH chunks of
2 with 2 hash rounds of 4 buckets, local chunks of 4 (the sequence padded to lcm(2, 4) = 4
above 2 tokens), one chunk before, none after. The sweep checks the same arithmetic against
FlopCounterMode (tests/sweep/cases_encoders_r2.py)."""

from __future__ import annotations

import pytest

from flopcalc.errors import FlopcalcError
from flopcalc.kinds.reformer import num_buckets
from flopcalc.models import hf
from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

MODEL = """architecture: encoder-only
n_layers: 2
d_model: 8
n_heads: 2
mlp: plain
norm: layernorm
norm_placement: pre
final_norm: false
positions: none
vocab_size: 10
head: none
tie_embeddings: true
layer_types: [reformer_local, reformer_lsh]
reformer: {num_attention_heads: 2, attention_head_size: 3, feed_forward_size: 12,
           vocab_size: 10, lsh_attn_chunk_length: 2, local_attn_chunk_length: 4,
           num_hashes: 2, num_buckets: [4]}
"""


def _path(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MODEL)
    return str(path)


def test_params(cli, tmp_path):
    doc = run(cli, "model", _path(tmp_path), "--seq", "3")
    # token table 10·8 = 80; local layer: its LayerNorm 16, q, k, v 3·8·6 = 144, output
    # 6·8 = 48, the MLP's LayerNorm 16, up 8·12 + 12 = 108, down 12·8 + 8 = 104 → 436; LSH
    # layer: the shared query-key and v 2·48 = 96 instead of 144 → 388; output: LayerNorm over
    # 2d 2·16 = 32, head 16·10 + 10 = 170, the second bias 10 → 212
    assert doc["params"]["total"] == 80 + 436 + 388 + 212


@pytest.mark.parametrize("seq, flops", [
    # s = 2 ≤ the smallest chunk: no padding, P = 2, both layers full attention. Local: q, k, v
    # 3·2·2·8·6 = 576, o 2·2·6·8 = 192, MLP 2·(2·2·8·12) = 768, scores and values
    # 2·h·P²·d_h = 48 each → 1,632; LSH: 2·192 = 384 for its two projections, o 192, MLP 768,
    # 48 + 48 → 1,440; head 2·2·16·10 = 640
    (2, 1_632 + 1_440 + 640),
    # s = 3 pads to P = 4: local full (4 ≤ 4): 1,152 + 384 + 1,536 + 2·(2·2·16·3 = 192)
    # = 3,456; LSH chunked (4 > 2): 768 + 384 + 1,536, hashing 2·h·P·d_h·rounds·(4/2)
    # = 2·2·4·3·2·2 = 192, each round's chunks against 2 chunks of 2 keys: 2·4·2·2 = 32 pairs
    # per head, scores and values 2·2·32·3 = 384 each → 3,648; head on the 3 real tokens
    # 2·3·16·10 = 960
    (3, 3_456 + 3_648 + 960),
    # s = 6 pads to P = 8: local chunked (8 > 4): 2,304 + 768 + 3,072, pairs 8·2·4 = 64,
    # 2·(2·2·64·3 = 768) → 7,680; LSH: 1,536 + 768 + 3,072, hashing 2·2·8·3·2·2 = 384, pairs
    # 2·8·2·2 = 64, 2·768 → 7,296; head 2·6·16·10 = 1,920
    (6, 7_680 + 7_296 + 1_920),
])
def test_forward(cli, tmp_path, seq, flops):
    doc = run(cli, "model", _path(tmp_path), "--seq", str(seq))
    assert doc["flops"]["forward"] == flops


def test_buckets_derived_from_the_length():
    # LSHSelfAttention._set_num_buckets: 2^⌊log₂(2·P/c)⌋; P = 24, c = 4: 2·6 = 12 → 8 (under
    # the limit 2·max(⌊√(4096/4)⌋ = 32, 4) = 64); P = 4096, c = 1: 8,192 is over the limit
    # 2·max(64, 1) = 128, split 2^6 × 2^7
    assert num_buckets(24, 4, 4096) == [8]
    assert num_buckets(4096, 1, 4096) == [64, 128]


def test_attention_kinds_other_than_lsh_and_local_are_refused():
    with pytest.raises(FlopcalcError, match=r"attn_layers\[1\]='full'"):
        hf.from_hf_dict({"model_type": "reformer", "hidden_size": 256, "vocab_size": 320,
                         "num_attention_heads": 2, "attention_head_size": 64,
                         "feed_forward_size": 512, "attn_layers": ["lsh", "full"]},
                        "config.json")
