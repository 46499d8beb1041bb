"""Encoder-decoders with mixtures of experts (transformers 5.24), each counted as the class
`AutoModelForSeq2SeqLM` builds: Switch Transformers, NLLB-MoE. The converter reads the keys its config
and model classes read (`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with
their defaults; `ALIASES` are the config class's `attribute_map`.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw
from .seq2seq import _t5
from .seq2seq2 import _m2m_100


def _sparse(n: int, sparse: int) -> list[int]:
    """The sparse layers of a stack of n with `sparse` of them, as SwitchTransformersStack
    picks them: step = n // sparse (n when sparse is 0), then layer i is sparse when
    i % step == 1 or step == 1 (none when step is 0: more sparse layers asked than layers)."""
    step = n // sparse if sparse > 0 else n
    if step <= 0:
        return []
    return [i for i in range(n) if i % step == 1 or step == 1]


def _switch_transformers(c: Config) -> Raw:
    """SwitchTransformersForConditionalGeneration (Fedus et al. 2022, "Switch Transformers:
    Scaling to Trillion Parameter Models with Simple and Efficient Sparsity", JMLR;
    `switch_transformers/modeling_switch_transformers.py`): T5's stacks (RMS norms, relative
    position buckets in each stack's first layer, q, k, v, o and a `dense_act_fn` MLP without
    biases), and in the sparse layers of each stack (`num_sparse_encoder_layers`,
    `num_sparse_decoder_layers`; see `_sparse`) the MLP replaced by `num_experts` experts of
    the same shape behind a top-1 router (`classifier` d → E, with `router_bias`).

    Each token runs its one expert. transformers drops a token from an expert already holding
    `expert_capacity` tokens of its sequence (the token skips the experts): flopcalc counts
    every token's expert, which is what transformers computes whenever no expert of a sequence
    is over capacity: always for sequences of at most `expert_capacity` tokens (64 by
    default); past that, an upper bound that routing decides. The router's jitter noise and
    the routing weights' multiply are element-wise. Unlike T5's, the config keeps
    `tie_word_embeddings: false`, and then transformers 5 ties nothing: `shared` (unused), each
    stack's `embed_tokens` and `lm_head` are four V × d tables."""
    raw = _t5(c)
    if not raw["tie_embeddings"]:
        raw.update(share_encoder_embeddings=False, unused_token_tables=1)
    act = str(c("dense_act_fn", "relu", str))
    raw.update(mlp="plain", activation="relu" if act == "relu" else
               "silu" if act in ("silu", "swish") else "gelu")
    n_enc = c.layers("num_layers")
    n_dec = c("num_decoder_layers", n_enc, int)
    raw["moe"] = {"experts": c("num_experts", 8, int), "top_k": 1, "d_ff": c("d_ff"),
                  "router_bias": bool(c("router_bias", False)),
                  "layers": _sparse(n_dec, c("num_sparse_decoder_layers", 3, int)),
                  "encoder_layers": _sparse(n_enc, c("num_sparse_encoder_layers", 3, int))}
    return raw


def _nllb_moe(c: Config) -> Raw:
    """NllbMoeForConditionalGeneration (NLLB Team 2022, "No Language Left Behind: Scaling
    Human-Centered Machine Translation"; `nllb_moe/modeling_nllb_moe.py`): M2M-100's stacks
    (pre-norm, final LayerNorms, sinusoid buffers), every `encoder_sparse_step`-th encoder
    layer and `decoder_sparse_step`-th decoder layer ((i + 1) % step == 0) with `num_experts`
    experts (fc1 and fc2 with biases, each stack's ffn width) behind a top-2 router
    (`classifier` d → E, with `router_bias`). flopcalc counts the model: each token's two
    experts. transformers 5.24's NllbMoeExperts does more: it one-hot encodes the router's 0/1
    top-1 mask again, so it runs `expert_0` on every (token, unchosen expert) row and
    `expert_1` on every chosen one: E expert passes per token, whatever the routing (the
    sweep's case states that difference). Sparse layers in both stacks share one expert width:
    encoder_ffn_dim and decoder_ffn_dim must then be equal."""
    raw = _m2m_100(c)
    n_enc, n_dec = c.layers("encoder_layers"), c.layers("decoder_layers")

    def sparse(n: int, key: str) -> list[int]:
        step = c(key, 4, int)
        return [i for i in range(n) if (i + 1) % step == 0] if step > 0 else []

    enc, dec = sparse(n_enc, "encoder_sparse_step"), sparse(n_dec, "decoder_sparse_step")
    enc_ff, dec_ff = c("encoder_ffn_dim", expect=int), c("decoder_ffn_dim", expect=int)
    if enc and dec and enc_ff != dec_ff:
        raise FlopcalcError(f"{c.label}: nllb-moe with sparse layers in both stacks and "
                            f"encoder_ffn_dim={enc_ff} != decoder_ffn_dim={dec_ff}: flopcalc's "
                            "mixture has one expert width; set them equal")
    if enc or dec:
        raw["moe"] = {"experts": c("num_experts", 128, int), "top_k": 2,
                      "d_ff": enc_ff if enc else dec_ff,
                      "router_bias": bool(c("router_bias", False)),
                      "layers": dec, "encoder_layers": enc}
    return raw


CONVERTERS = {"switch_transformers": _switch_transformers, "nllb-moe": _nllb_moe}

ALIASES = {"nllb-moe": {"num_attention_heads": "encoder_attention_heads",
                        "hidden_size": "d_model", "num_hidden_layers": "encoder_layers"},
           "switch_transformers": {"hidden_size": "d_model", "num_attention_heads": "num_heads",
                                   "num_hidden_layers": "num_layers"}}
