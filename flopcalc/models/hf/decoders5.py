"""More decoders of transformers 5.24 that flopcalc refused until their layer kinds existed:
each converter reads the keys its class reads in `models/<type>/modeling_<type>.py`, with the
configuration class's defaults, and says in its docstring what it counts.
tests/sweep/cases_decoders_r2.py checks each against transformers (parameters on the meta
device at the default config and at variants, forward FLOPs with FlopCounterMode)."""

from __future__ import annotations

from ...errors import FlopcalcError
from .common import Config, Raw, bias, rotary_decoder, shortest_period

_DORY_SPLIT = ("n_input_layers", "n_recurrent_layers", "n_output_layers")


def _dory_layout(c: Config) -> tuple[list[str], dict[str, int]]:
    """(each layer's type, the input/recurrent/output split) as DoryConfig.__post_init__ reads
    them: a released file lists attention and "mlp" blocks alternately with every count
    doubled, which transformers halves (each pair is one layer)."""
    n = c.layers()
    split = {"n_input_layers": c("n_input_layers", 8, int),
             "n_output_layers": c("n_output_layers", 8, int)}
    recurrent = c("n_recurrent_layers", None, int)
    listed = c("layer_types", None, list)
    if listed is not None and "mlp" in listed:
        blocks = c.per_layer("layer_types", n,
                             choices=("full_attention", "sliding_attention", "mlp"))
        wrong = next((i for i, t in enumerate(blocks) if (t == "mlp") != (i % 2 == 1)), None)
        if wrong is not None or n % 2:
            at = len(blocks) if wrong is None else wrong
            raise FlopcalcError(f"{c.label}: layer_types[{at}] breaks the released layout "
                                "(attention and \"mlp\" blocks alternately, an attention "
                                "block first, in pairs): list one entry per layer instead")
        listed, n = blocks[::2], n // 2
        split = {k: v // 2 for k, v in split.items()}
        recurrent = None if recurrent is None else recurrent // 2
    elif listed is not None:
        listed = c.per_layer("layer_types", n, choices=("full_attention", "sliding_attention"))
    else:
        listed = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                  for i in range(n)]
    split["n_recurrent_layers"] = (n - split["n_input_layers"] - split["n_output_layers"]
                                   if recurrent is None else recurrent)
    if min(split.values()) < 0 or sum(split.values()) != n:
        raise FlopcalcError(f"{c.label}: n_input_layers + n_recurrent_layers + n_output_layers "
                            f"= {' + '.join(str(split[k]) for k in _DORY_SPLIT)} must equal "
                            f"num_hidden_layers={n}; fix the split")
    return listed, split


def _dory(c: Config) -> Raw:
    """DoryForCausalLM (`dory/modeling_dory.py`; `kinds.dory`): nGPT-style layers (weightless
    L2 norms in Gemma 2's sandwich, a per-element output gate d → h·d_h, the scales sqk,
    s_gate, suv_gate, suv_up and residual rates lambda_1, lambda_2), windows of
    `sliding_window` on the `layer_types` "sliding_attention" layers (absent: all but every
    4th). The `n_recurrent_layers` after the first `n_input_layers` run `n_recurrent_loops`
    times with one set of weights (`layer_weights`), then the `n_output_layers`. The head
    (untied by default) holds a per-token `logit_scale` (V), counted as the head's one
    V-wide vector (`lm_head_bias`: the same tensor size, its multiply element-wise as a
    bias add is)."""
    listed, split = _dory_layout(c)
    loops = c("n_recurrent_loops", 2, int)
    if loops < 1:
        raise FlopcalcError(f"{c.label}: n_recurrent_loops={loops} must be at least 1")
    first, rec = split["n_input_layers"], split["n_recurrent_layers"]
    runs = list(range(first)) + list(range(first, first + rec)) * loops + list(
        range(first + rec, len(listed)))
    attn = bool(c("attention_bias", False))
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, bool(c("mlp_bias", False))),
                "n_layers": len(runs), "head_dim": c("head_dim", 256, int),
                "norm_affine": False, "norm_placement": "sandwich", "attention_gate": True,
                "activation": "silu", "lm_head_bias": 1,
                "layer_types": [f"dory_{'full' if listed[i] == 'full_attention' else 'window'}"
                                for i in runs],
                "dory": {"window": c("sliding_window", 1024, int)
                         if "sliding_attention" in listed else None}}
    if loops > 1 and rec:
        raw["layer_weights"] = runs
    mode = c("recurrent_kv_cache_mode", "per_loop", str)
    if mode not in ("per_loop", "last_loop"):
        raise FlopcalcError(f"{c.label}: recurrent_kv_cache_mode {mode[:40]!r} is not one Dory "
                            "has (per_loop, last_loop)")
    if mode == "last_loop" and loops > 1 and rec:
        note = ("recurrent_kv_cache_mode last_loop: transformers caches the recurrent layers' "
                "keys and values of the last loop only (the earlier loops read them); the "
                "cache is counted per loop, as per_loop keeps it: it overstates the cache by "
                f"{loops - 1} of the recurrent layers' {loops} copies")
        raw["notes"] = f"{raw['notes']} {note}" if raw.get("notes") else note
    return raw


def _ultrabert(c: Config) -> Raw:
    """UltrabertForMaskedLM (`ultrabert/modeling_ultrabert.py`): EuroBERT's pre-norm layers
    (RMSNorm, grouped-query attention with `attention_bias`, a gated MLP with `mlp_bias`,
    rotary positions, a final norm) attending bidirectionally, the `layer_types`
    "sliding_attention" layers (absent: all but every 3rd) within `sliding_window` positions
    on either side (`masking_utils.sliding_window_bidirectional_overlay`, so ModernBERT's
    local window of 2·sliding_window), and its prediction head (`head: bottleneck`: linear1
    d → prediction_head_size, linear2 back to d, both bias-free with a GELU after each, then
    the decoder d → V, untied by default)."""
    n = c.layers()
    default = ["sliding_attention" if (i + 1) % 3 else "full_attention" for i in range(n)]
    listed = c.per_layer("layer_types", n, default=default,
                         choices=("full_attention", "sliding_attention"))
    kinds = ["local" if t == "sliding_attention" else "bidirectional" for t in listed]
    attn, mlp = bool(c("attention_bias", False)), bool(c("mlp_bias", False))
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, mlp), "architecture": "encoder-only",
                "norm_placement": "pre", "final_norm": True, "head": "bottleneck",
                "head_width": c("prediction_head_size", 768, int),
                "layer_types": shortest_period(kinds)}
    if "local" in kinds:
        raw["local_attention"] = {"window": 2 * c("sliding_window", 128, int)}
    return raw


def _hrm_text(c: Config) -> Raw:
    """HrmTextForCausalLM (`hrm_text/modeling_hrm_text.py`; `kinds.hrm`): two stacks (L and
    H) of `num_layers_per_stack` layers (absent: num_hidden_layers is that count, as
    HrmTextConfig.__post_init__ reads a legacy file; present: num_hidden_layers is the number
    of runs, num_layers_per_stack·H_cycles·(L_cycles + 1)), run in nested cycles with one set
    of weights per stack (`layer_weights`). Each layer: weightless RMSNorms before attention
    and the MLP, multi-head attention with a per-element sigmoid gate (gate_proj d → h·d_h),
    every projection with `attention_bias`, and a gated MLP with `mlp_bias`; each stack run
    ends in a weightless norm. The embedding scale is element-wise; the prefix-LM mask (with
    token_type_ids) moves no FLOP under the full convention. L_bp_cycles only stops the
    gradient through the earlier L cycles: a training step's backward is counted over every
    run."""
    h_cycles, l_cycles = c("H_cycles", 2, int), c("L_cycles", 3, int)
    if h_cycles < 1 or l_cycles < 1:  # L_cycles 0 holds the L stack and never runs it
        raise FlopcalcError(f"{c.label}: H_cycles={h_cycles} and L_cycles={l_cycles} must be "
                            "at least 1 (with L_cycles 0 the low stack is held and never run, "
                            "which flopcalc does not describe)")
    per_stack = c("num_layers_per_stack", None, int)
    if per_stack is None:
        per_stack = c.layers()
    elif c.layers() != per_stack * h_cycles * (l_cycles + 1):
        raise FlopcalcError(f"{c.label}: num_hidden_layers={c.layers()} must be "
                            f"num_layers_per_stack·H_cycles·(L_cycles + 1) = {per_stack}·"
                            f"{h_cycles}·{l_cycles + 1}; fix one of them")
    low, high = list(range(per_stack)), list(range(per_stack, 2 * per_stack))
    runs = (low * l_cycles + high) * h_cycles
    attn = bool(c("attention_bias", False))
    raw: Raw = {**rotary_decoder(c), **bias(attn, attn, bool(c("mlp_bias", False))),
                "n_layers": len(runs), "n_kv_heads": c("num_attention_heads"),
                "head_dim": c("head_dim", 128, int), "norm_affine": False,
                "final_norm": False, "attention_gate": True, "activation": "silu",
                "layer_types": ["hrm_first" if w == 0 else "full" for w in runs],
                "layer_weights": runs}
    return raw


CONVERTERS = {"dory": _dory, "ultrabert": _ultrabert, "hrm_text": _hrm_text}
# The config classes' defaults (transformers 5.24) for keys a hand-written file may leave out
# where the converters' own fallbacks differ.
DEFAULTS: dict[str, Raw] = {
    "dory": {"hidden_size": 2560, "intermediate_size": 7168, "num_hidden_layers": 36,
             "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
             "vocab_size": 131072, "max_position_embeddings": 8192,
             "tie_word_embeddings": False},
    "hrm_text": {"hidden_size": 1536, "intermediate_size": 4096, "num_hidden_layers": 16,
                 "num_attention_heads": 12, "head_dim": 128, "vocab_size": 151808,
                 "max_position_embeddings": 2048, "tie_word_embeddings": False},
    "ultrabert": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "vocab_size": 32000,
                  "max_position_embeddings": 32768, "tie_word_embeddings": False},
}
ALIASES: dict[str, dict[str, str]] = {}
REFUSED: dict[str, str] = {}
