"""What the converters share: a config.json mapping with lookups that name the file and key, and
the keys whole families read alike (attention layer types, the Llama family's core, biases)."""

from __future__ import annotations

from typing import Any

from ...errors import FlopcalcError
from ..spec import MAX_LAYERS

Raw = dict[str, Any]


_TYPES = {int: "a whole number", str: "text", list: "a list", bool: "true or false",
          dict: "a mapping"}


class Config:
    """A config.json mapping with lookups that name the file and key when one is missing or of
    the wrong type. The last key read is remembered, so a value that breaks a converter's
    arithmetic is named too (see `from_hf_dict`)."""

    def __init__(self, data: Raw, label: str, model_type: str):
        self.data, self.label, self.model_type = data, label, model_type
        self.last = ""

    def __call__(self, key: str, default: Any = ..., expect: Any = None) -> Any:
        """The value of `key`; `default` when absent or null (if a default is given); with
        `expect` (int, str, list, bool, dict), an error when it is of another type."""
        self.last = key
        value = self.data.get(key)
        if value is None:
            if default is ...:
                raise FlopcalcError(f"{self.label}: missing '{key}' (needed for model_type "
                                    f"{self.model_type})")
            return default
        if expect is not None and type(value) is not expect:
            raise self.wrong(key, value, expect)
        return value

    def wrong(self, key: str, value: Any, expect: Any) -> FlopcalcError:
        shown = "a list" if isinstance(value, list) else "a mapping" if isinstance(
            value, dict) else repr(value)
        return FlopcalcError(f"{self.label}: '{key}' must be {_TYPES.get(expect, expect)}, got "
                             f"{shown} (as transformers reads it for model_type "
                             f"{self.model_type})")

    def ints(self, key: str, default: Any = ...) -> Any:
        """A list of whole numbers (layer indices)."""
        value = self(key, default, list)
        if value is not default and not all(type(v) is int for v in value):
            raise self.wrong(key, value, "a list of whole numbers")
        return value

    def texts(self, key: str, default: Any = ...) -> Any:
        """A list of texts (layer types)."""
        value = self(key, default, list)
        if value is not default and not all(type(v) is str for v in value):
            raise self.wrong(key, value, "a list of texts")
        return value

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def layers(self, key: str = "num_hidden_layers") -> int:
        """The layer count a per-layer list is checked against."""
        n = self(key, expect=int)
        if not 0 < n <= MAX_LAYERS:
            raise FlopcalcError(f"{self.label}: {key}={n:,} must be between 1 and "
                                f"{MAX_LAYERS:,}; check the number")
        return n

    def per_layer(self, key: str, n: int, entry: Any = str, default: Any = ...,
                  count_key: str = "num_hidden_layers", choices: Any = None) -> Any:
        """A list with one entry per layer (`layer_types`, `mlp_layer_types`, 0/1 flags such as
        `no_rope_layers`): exactly n entries of type `entry`, each one of `choices` when given
        (the first that is not is named with its index). transformers' configs refuse
        another length (`PreTrainedConfig.validate_layer_type`); a shorter list would
        otherwise be repeated or cut without a word."""
        value = self(key, default, list)
        if value is default:
            return value
        for i, v in enumerate(value):
            if type(v) is not entry:
                raise FlopcalcError(f"{self.label}: {key}[{i}] = {_short(v)} must be "
                                    f"{_TYPES.get(entry, entry)} (one per layer)")
            if choices is not None and v not in choices:
                raise FlopcalcError(f"{self.label}: {key}[{i}] = {_short(v)} must be one of "
                                    f"{', '.join(map(repr, choices))}")
        if len(value) != n:
            raise FlopcalcError(f"{self.label}: {key} has {len(value):,} entries, {count_key} "
                                f"is {n:,}: give one per layer")
        return value

    def layer_indices(self, key: str, n: int, default: Any = ...) -> Any:
        """A list of layer indices (`moe_layers`, `mlp_only_layers`, `full_attn_layers`):
        whole numbers in 0..n−1. transformers tests `layer_idx in the list`, so an index that
        names no layer is ignored there; here it is an error, as it is a typo, never a plan."""
        value = self(key, default, list)
        if value is default:
            return value
        for i, v in enumerate(value):
            if type(v) is not int or not 0 <= v < n:
                raise FlopcalcError(f"{self.label}: {key}[{i}] = {_short(v)} is not a layer "
                                    f"index (0..{n - 1})")
        return value


def _short(value: Any) -> str:
    """A config value in an error: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


LAYER_TYPES = {"full_attention": "full", "sliding_attention": "window",
                "chunked_attention": "chunked"}


def layer_types(c: Config, default_every: int | None = None) -> Raw:
    """The attention-kind keys. An explicit `layer_types` list is taken as it is; otherwise
    Gemma 2 and gpt-oss alternate window and full layers starting with a window layer, Gemma 3
    makes every `sliding_window_pattern`-th layer full (default 6), and Mistral/Mixtral slide
    every layer when `sliding_window` is set."""
    window = c("sliding_window", None)
    if c.has("layer_types"):
        n = c.layers() if c.has("num_hidden_layers") else None
        listed = c.texts("layer_types") if n is None else c.per_layer("layer_types", n)
        kinds = [LAYER_TYPES.get(t, t) for t in listed]
        out: Raw = {"layer_types": shortest_period(kinds)}
        if "window" in kinds:
            out["sliding_window"] = window
        if "chunked" in kinds:
            out["attention_chunk"] = c("attention_chunk_size")
        return out
    if window is None:
        return {}
    if default_every is not None:
        every = c("sliding_window_pattern", default_every)
        return {"sliding_window": window, "global_every": every}
    return {"sliding_window": window}


def shortest_period(kinds: list) -> list:
    """The shortest pattern that repeats to the whole list (the list itself if none does), so
    that `show` prints [window, full] rather than 36 entries."""
    n = len(kinds)
    for p in range(1, n):
        if n % p == 0 and kinds == kinds[:p] * (n // p):
            return kinds[:p]
    return kinds


def qwen_window(c: Config) -> Raw:
    """Qwen2/Qwen3 (and their MoE): a window only when `use_sliding_window`, on the layers from
    `max_window_layers` on."""
    if c.has("layer_types"):
        return layer_types(c)
    if not c("use_sliding_window", False) or c("sliding_window", None) is None:
        return {}
    n, first = c("num_hidden_layers", expect=int), c("max_window_layers", 28, int)
    if n > MAX_LAYERS:
        raise FlopcalcError(f"{c.label}: num_hidden_layers={n:,} is more than {MAX_LAYERS:,} "
                            "layers; check the number")
    kinds = ["window" if i >= first else "full" for i in range(n)]
    if "window" not in kinds:
        return {}
    return {"sliding_window": c("sliding_window"), "layer_types": kinds}


def rotary_decoder(c: Config, *, tie: bool = False, gated: bool = True) -> Raw:
    """The keys the Llama family shares: RMSNorm, a gated MLP, rotary positions."""
    act = c("hidden_activation", None, str) or c("hidden_act", "silu", str)
    raw: Raw = {
        "n_layers": c("num_hidden_layers"),
        "d_model": c("hidden_size"),
        "n_heads": c("num_attention_heads"),
        # Absent or null means multi-head attention; any other value (0 included) is passed on
        # for validation rather than silently replaced.
        "n_kv_heads": (c("num_attention_heads") if c.data.get("num_key_value_heads") is None
                       else c.data["num_key_value_heads"]),
        "d_ff": c("intermediate_size"),
        "mlp": "gated" if gated else "plain",
        "activation": "gelu" if str(act).startswith("gelu") else "silu",
        "bias": False,
        "norm": "rmsnorm",
        "positions": "rotary",
        # rotary positions hold no table: a file without a context still counts (--seq)
        "max_seq_len": c("max_position_embeddings", None),
        "vocab_size": c("vocab_size"),
        "tie_embeddings": bool(c("tie_word_embeddings", tie)),
    }
    if c.has("head_dim"):
        raw["head_dim"] = c("head_dim")
    if raw["max_seq_len"] is None:
        raw["notes"] = NO_CONTEXT
    return raw


NO_CONTEXT = ("config.json gives no max_position_embeddings: the context is unknown, so no "
              "length is checked against it; give --seq (else 2,048 is taken)")


def bias(qkv: bool, out: bool = False, mlp: bool = False) -> Raw:
    return {"bias": {"qkv": bool(qkv), "attn_out": bool(out), "mlp": bool(mlp)}}
