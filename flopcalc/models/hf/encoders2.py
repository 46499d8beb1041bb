"""More encoder-only models (transformers 5.24, each counted as the class
`AutoModelForMaskedLM` builds, as `encoders.py`'s are): BERT's and RoBERTa's copies and
pre-norm relatives. Each converter reads the keys its config and model classes read
(`models/<type>/configuration_<type>.py`, `modeling_<type>.py`), with their defaults.

Types flopcalc cannot count exactly are in `REFUSED`, each with the feature it lacks.
"""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw
from .encoders import _bert, _roberta


def _prenorm(raw: Raw, embedding_norm: bool) -> Raw:
    """BERT's layers made pre-norm: a LayerNorm before attention and before the MLP of every
    layer and one after the last layer (the post-norm layers' two norms moved, one added)."""
    return {**raw, "norm_placement": "pre", "final_norm": True,
            "embedding_norm": embedding_norm}


def _roberta_prelayernorm(c: Config) -> Raw:
    """RobertaPreLayerNormForMaskedLM (`roberta_prelayernorm/modeling_roberta_prelayernorm.py`):
    RoBERTa's embedding (its LayerNorm kept, positions offset by pad + 1), pre-norm layers
    (`attention.LayerNorm`, `intermediate.LayerNorm`) and the model's final `LayerNorm`, and
    RoBERTa's head."""
    return _prenorm(_roberta(c), embedding_norm=True)


def _xlm_roberta_xl(c: Config) -> Raw:
    """XLMRobertaXLForMaskedLM (`xlm_roberta_xl/modeling_xlm_roberta_xl.py`): RoBERTa's
    embedding without its LayerNorm, pre-norm layers (`self_attn_layer_norm`, `LayerNorm`)
    and the encoder's final `LayerNorm`, RoBERTa's head."""
    return _prenorm(_roberta(c), embedding_norm=False)


def _megatron_bert(c: Config) -> Raw:
    """MegatronBertForMaskedLM (`megatron_bert/modeling_megatron_bert.py`): BERT's embedding
    without its LayerNorm (positions from 0), pre-norm layers (`attention.ln`, `ln`) and the
    encoder's final `ln`, BERT's head."""
    return _prenorm(_bert(c), embedding_norm=False)


def _ernie(c: Config) -> Raw:
    """ErnieForMaskedLM (`ernie/modeling_ernie.py`): BERT, and with `use_task_id` a
    `task_type_embeddings` table of `task_type_vocab_size` rows added to the embedding sum:
    the same d-wide lookup as the token types, counted as that many more token-type rows (a
    lookup costs no matmul FLOPs)."""
    raw = _bert(c)
    if c("use_task_id", False):
        raw["token_types"] = raw["token_types"] + c("task_type_vocab_size", 3, int)
    return raw


def _ibert(c: Config) -> Raw:
    """IBertForMaskedLM (Kim et al. 2021, "I-BERT: Integer-only BERT Quantization", ICML;
    `ibert/modeling_ibert.py`) with `quant_mode` false, the default: RoBERTa's model
    (QuantLinear, QuantEmbedding and IntLayerNorm then run as float linear, embedding and
    LayerNorm layers with the same weights). In quant mode the quantisers keep scaling
    factors flopcalc does not count: refused."""
    if c("quant_mode", False):
        raise FlopcalcError(f"{c.label}: ibert with quant_mode: true keeps integer-only "
                            "quantisers (activation scaling factors, integer GELU, softmax and "
                            "LayerNorm) that flopcalc does not count; set quant_mode: false to "
                            "count the float model")
    if c("hidden_act", "gelu", str) != "gelu":
        raise FlopcalcError(f"{c.label}: ibert runs hidden_act gelu only (transformers refuses "
                            "another: IntGELU); set hidden_act: gelu")
    return _roberta(c)


CONVERTERS = {"data2vec-text": _roberta, "roberta-prelayernorm": _roberta_prelayernorm,
              "xlm-roberta-xl": _xlm_roberta_xl, "megatron-bert": _megatron_bert,
              "ernie": _ernie, "ibert": _ibert}
