"""Encoder-only models (transformers 5.24, each counted as its `*ForMaskedLM`, the
class `AutoModelForMaskedLM` builds): BERT, RoBERTa and its copies, DistilBERT, ALBERT, ELECTRA's
generator, DeBERTa-v2/v3 and ModernBERT. Each converter reads the keys its config and model
classes read (`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with their
defaults; `ALIASES` are the config classes' `attribute_map`.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, shortest_period


def _bert(c: Config) -> Raw:
    return {
        "architecture": "encoder-only",
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": "relu" if c("hidden_act", "gelu", str) == "relu" else "gelu",
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings"),
        "vocab_size": c("vocab_size"),
        "token_types": c("type_vocab_size", 2),
        "embedding_norm": True,
        "head": "masked-lm",  # BertForMaskedLM, the published checkpoints' own head
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        # BertLMPredictionHead has decoder.bias and its own `bias`, one tensor only when tied
        # (`_tied_weights_keys`); untied, transformers keeps both (the second unused).
        **({} if c("tie_word_embeddings", True) else {"lm_head_bias": 2}),
    }


def _activation(c: Config, key: str, default: str) -> str:
    act = str(c(key, default, str))
    return "relu" if act == "relu" else "silu" if act in ("silu", "swish") else "gelu"


def _roberta(c: Config) -> Raw:
    """RobertaForMaskedLM (and XLM-RoBERTa, CamemBERT, modular copies): BERT's layers and
    masked-LM head (untied: `lm_head.decoder.bias` and the then unused `lm_head.bias`), whose
    position ids start after the padding index: a table of `max_position_embeddings` rows of
    which the first `pad_token_id + 1` are never read (`roberta/modeling_roberta.py`
    create_position_ids_from_input_ids), so the usable context is P − pad − 1 (512 of the
    published 514): max_seq_len P − pad − 1 with position_offset pad + 1."""
    raw = _bert(c)
    rows, pad = c("max_position_embeddings", expect=int), c("pad_token_id", 1, int)
    if rows - pad - 1 < 1:
        raise FlopcalcError(f"{c.label}: max_position_embeddings={rows} leaves no position after "
                            f"the padding offset (pad_token_id={pad}: positions start at "
                            f"{pad + 1}); check the numbers")
    return {**raw, "max_seq_len": rows - pad - 1, "position_offset": pad + 1}


def _distilbert(c: Config) -> Raw:
    """DistilBertForMaskedLM (`distilbert/modeling_distilbert.py`): BERT's post-norm layers
    without token types, an embedding LayerNorm, the head vocab_transform d × d, activation,
    vocab_layer_norm and vocab_projector (one V bias, tied or not). With
    `sinusoidal_pos_embds` the position table is filled with sinusoids but stays an
    `nn.Embedding` parameter (frozen), so it counts as a learned table of the same shape."""
    return {
        "architecture": "encoder-only",
        "n_layers": c("n_layers"),
        "d_model": c("dim"),
        "n_heads": c("n_heads"),
        "d_ff": c("hidden_dim"),
        "mlp": "plain",
        "activation": _activation(c, "activation", "gelu"),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings", 512),
        "vocab_size": c("vocab_size"),
        "token_types": 0,
        "embedding_norm": True,
        "head": "masked-lm",
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "lm_head_bias": 1,
    }


def _factorised(c: Config, d: int, e: int, layers: int) -> Raw:
    """What ALBERT and ELECTRA share: BERT's post-norm layers and masked-LM head, over an E-wide
    embedding (tokens, positions, token types and their LayerNorm E wide, then E → d with a
    bias; the head's transform d → E, its LayerNorm E wide, the decoder E → V)."""
    return {
        "architecture": "encoder-only",
        "n_layers": layers,
        "d_model": d,
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": _activation(c, "hidden_act", "gelu"),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned",
        "max_seq_len": c("max_position_embeddings", 512),
        "vocab_size": c("vocab_size"),
        "token_types": c("type_vocab_size", 2),
        "embedding_norm": True,
        "head": "masked-lm",
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        **({"embed_dim": e, "embed_proj_bias": True} if e is not None else {}),
    }


def _albert(c: Config) -> Raw:
    """AlbertForMaskedLM (Lan et al. 2020, "ALBERT", ICLR; `albert/modeling_albert.py`): a
    factorised embedding (E → d always, `embedding_hidden_mapping_in`) and `num_hidden_groups`
    groups of `inner_group_num` layers whose weights are shared: layer i of
    `num_hidden_layers` runs all inner layers of group int(i / (n / G)) (AlbertTransformer).
    So n·I layers run (FLOPs per layer run) over G·I weight sets (parameters once each:
    `layer_weights`). Untied, the head keeps `predictions.decoder.bias` and `predictions.bias`."""
    n, groups = c("num_hidden_layers", expect=int), c("num_hidden_groups", 1, int)
    inner = c("inner_group_num", 1, int)
    if groups > n or groups < 1 or inner < 1:
        raise FlopcalcError(f"{c.label}: num_hidden_groups={groups} with num_hidden_layers={n} "
                            f"and inner_group_num={inner}: ALBERT needs 1 <= groups <= layers "
                            "and inner_group_num >= 1 (transformers would build groups no layer "
                            "runs)")
    weights = [int(i / (n / groups)) * inner + j for i in range(n) for j in range(inner)]
    raw = _factorised(c, c("hidden_size"), c("embedding_size", 128), n * inner)
    raw["layer_weights"] = shortest_period(weights)
    if not raw["tie_embeddings"]:
        raw["lm_head_bias"] = 2
    return raw


def _electra(c: Config) -> Raw:
    """ElectraForMaskedLM, the generator (Clark et al. 2020, "ELECTRA", ICLR;
    `electra/modeling_electra.py`): BERT's layers over an E-wide embedding, projected E → d only
    when E ≠ d (`embeddings_project`), and the generator head: dense d → E, GELU, LayerNorm(E),
    `generator_lm_head` E → V with one bias (only its weight is tied). The discriminator
    (ElectraForPreTraining) is another class of the same config."""
    d, e = c("hidden_size"), c("embedding_size", 128)
    return {**_factorised(c, d, e if e != d else None, c("num_hidden_layers")),
            "lm_head_bias": 1}


def _pos_att_type(c: Config) -> list[str]:
    value = c("pos_att_type", None)
    if value is None:
        return []
    if isinstance(value, str):
        return [x.strip() for x in value.lower().split("|")]
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return [x.strip().lower() for x in value]
    raise c.wrong("pos_att_type", value, "a list of texts (or 'p2c|c2p')")


_CONV_ACT = {"tanh": "tanh", "relu": "relu", "silu": "silu", "swish": "silu"}


def _deberta_v2(c: Config) -> Raw:
    """DebertaV2ForMaskedLM (`deberta_v2/modeling_deberta_v2.py`): BERT's post-norm layers with
    disentangled attention (`kinds.deberta`) when `relative_attention`; an embedding of
    `embedding_size` E (default d) with positions only when `position_biased_input`, token
    types only when `type_vocab_size` > 0, `embed_proj` E → d without a bias when E ≠ d, then a
    LayerNorm over d. Head: legacy (the default) dense d → E, LayerNorm(E), decoder E → V and a
    second V bias when untied, as BERT; otherwise dense d → d, LayerNorm(d) and a V bias, always
    over the token table (E must then be d)."""
    d = c("hidden_size", expect=int)
    e = c("embedding_size", d, int)
    legacy = bool(c("legacy", True))
    if not legacy and e != d:
        raise FlopcalcError(f"{c.label}: legacy: false with embedding_size={e} != "
                            f"hidden_size={d} does not run in transformers (the new head "
                            "multiplies by the E-wide token table); set legacy: true")
    tied = bool(c("tie_word_embeddings", True)) or not legacy
    n = c("num_hidden_layers", expect=int)
    relative = bool(c("relative_attention", False))
    rows = c("max_position_embeddings", 512, int)
    span = c("max_relative_positions", -1, int)
    span = rows if span < 1 else span
    buckets = c("position_buckets", -1, int)
    span = buckets if buckets > 0 else span
    types = _pos_att_type(c)
    norm_rel = [x.strip() for x in str(c("norm_rel_ebd", "none", str)).lower().split("|")]
    act = str(c("conv_act", "tanh", str))
    conv_act = "gelu" if act.startswith("gelu") else _CONV_ACT.get(act)
    kernel = c("conv_kernel_size", 0, int)
    if kernel and conv_act is None:
        raise FlopcalcError(f"{c.label}: conv_act '{act[:40]}' is not one flopcalc counts "
                            "(tanh, gelu, relu, silu)")
    block = {"relative": relative, "span": span if relative else None,
             "c2p": "c2p" in types, "p2c": "p2c" in types,
             "share_keys": bool(c("share_att_key", False)),
             "rel_norm": "layer_norm" in norm_rel, "conv_kernel": max(kernel, 0),
             "conv_groups": c("conv_groups", 1, int), "conv_activation": conv_act or "tanh"}
    first = kernel > 0 or (relative and block["rel_norm"])
    raw: Raw = {
        "architecture": "encoder-only",
        "n_layers": n,
        "d_model": d,
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "plain",
        "activation": _activation(c, "hidden_act", "gelu"),
        "bias": True,
        "norm": "layernorm",
        "norm_placement": "post",
        "final_norm": False,
        "positions": "learned" if c("position_biased_input", True) else "none",
        "max_seq_len": rows,
        "vocab_size": c("vocab_size"),
        "token_types": max(c("type_vocab_size", 0, int), 0),
        "embedding_norm": True,
        "head": "masked-lm",
        "tie_embeddings": tied,
        "lm_head_bias": 1 if tied else 2,
        "layer_types": (["deberta_first"] + ["deberta"] * (n - 1)) if first and n > 1
        else ["deberta_first" if first else "deberta"],
        "deberta": block,
    }
    if c.has("attention_head_size"):
        raw["head_dim"] = c("attention_head_size")
    if e != d:
        raw.update(embed_dim=e, embed_norm_width="model")
    return raw


def _modernbert(c: Config) -> Raw:
    """ModernBertForMaskedLM (Warner et al. 2024, arXiv:2412.13663;
    `modernbert/modeling_modernbert.py`): pre-norm layers of fused Wqkv and Wo (`attention_bias`),
    a gated MLP Wi d → 2f and Wo f → d (`mlp_bias`), LayerNorms with `norm_bias`, rotary
    positions, a final norm; `layer_types` (else every `global_attn_every_n_layers`-th layer
    global, from layer 0) global or local over `local_attention` (kinds.encoder_attention); the
    head dense d × d (`classifier_bias`), activation, norm, and the decoder with `decoder_bias`.
    The embedding LayerNorm and layer 0's missing attention norm (an Identity) are counted as
    layer 0's attention norm: the same one d-wide norm, the same element-wise work."""
    n = c("num_hidden_layers", expect=int)
    if c.has("layer_types"):
        types = c.texts("layer_types")
    else:
        every = c("global_attn_every_n_layers", 3, int)
        types = ["sliding_attention" if i % every else "full_attention" for i in range(n)]
    unknown = sorted(set(types) - {"full_attention", "sliding_attention"})
    if unknown:
        raise FlopcalcError(f"{c.label}: layer_types entry '{unknown[0][:40]}' is not one "
                            "ModernBERT has (full_attention, sliding_attention)")
    kinds = ["local" if t == "sliding_attention" else "bidirectional" for t in types]
    attn, mlp = bool(c("attention_bias", False)), bool(c("mlp_bias", False))
    raw: Raw = {
        "architecture": "encoder-only",
        "n_layers": n,
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        "d_ff": c("intermediate_size"),
        "mlp": "gated",
        "activation": _activation(c, "hidden_activation", "gelu"),
        "bias": {"qkv": attn, "attn_out": attn, "mlp": mlp},
        "norm": "layernorm",
        "norm_bias": bool(c("norm_bias", False)),
        "norm_placement": "pre",
        "final_norm": True,
        "positions": "rotary",
        "max_seq_len": c("max_position_embeddings", 8192),
        "vocab_size": c("vocab_size"),
        "embedding_norm": False,
        "head": "masked-lm",
        "head_bias": bool(c("classifier_bias", False)),
        "lm_head_bias": 1 if c("decoder_bias", True) else 0,
        "tie_embeddings": bool(c("tie_word_embeddings", True)),
        "layer_types": shortest_period(kinds),
    }
    if "local" in kinds:
        raw["local_attention"] = {"window": c("local_attention", 128)}
    return raw


CONVERTERS = {"bert": _bert, "roberta": _roberta, "xlm-roberta": _roberta, "camembert": _roberta,
              "distilbert": _distilbert, "albert": _albert, "electra": _electra,
              "deberta-v2": _deberta_v2, "modernbert": _modernbert}

ALIASES = {"distilbert": {"hidden_size": "dim", "num_attention_heads": "n_heads",
                          "num_hidden_layers": "n_layers"}}
