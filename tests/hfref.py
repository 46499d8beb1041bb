"""Independent transformers reference for Hugging Face model types (decoders, BERT, T5).

Everything here is measured on the real transformers modules, never computed from formulas:

* :func:`load_config` turns a published ``config.json`` (path or dict) into a transformers config
  without the network.
* :func:`build` instantiates the model class a config describes, with eager attention:
  ``*ForCausalLM`` for decoders, ``BertForMaskedLM`` for ``bert``, ``T5ForConditionalGeneration``
  for ``t5`` and, for the multimodal ``gemma3`` config, the text model (``Gemma3ForCausalLM``
  built from ``text_config``).
* :func:`param_count` counts parameters once each (tied embeddings count once).
* :func:`forward_flops` is what ``torch.utils.flop_counter.FlopCounterMode`` records for one
  forward pass (2 FLOPs per multiply-add, matrix products only); :func:`flop_breakdown` gives the
  same count per module and aten op.
* :func:`visible_pairs` counts, per attention call, the (query, key) entries that the attention
  mask actually handed to the attention function leaves visible.
* :func:`decode_cache_lengths` runs a prefill then one-token decode steps with a KV cache and
  reports the keys each layer attends over and what the cache keeps.

Attention masks and caches are observed by wrapping the ``eager_attention_forward`` function that
each modeling module dispatches to (the ``"eager"`` implementation looks it up by name at call
time), so the numbers are what transformers itself feeds the attention product.

torch and transformers are imported inside functions, so importing this module (for example during
pytest collection) needs neither.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

ConfigSource = str | Path | dict[str, Any]


def load_config(source: ConfigSource) -> PretrainedConfig:
    """A transformers config from a ``config.json`` path (or its directory) or a dict, offline.

    The dict is copied, never mutated. A multimodal ``gemma3`` config keeps its nested
    ``text_config`` (a ``Gemma3TextConfig``); :func:`build` builds the text model from it.
    """
    from transformers import AutoConfig

    if isinstance(source, dict):
        raw = json.loads(json.dumps(source))
    else:
        path = Path(source)
        raw = json.loads((path / "config.json" if path.is_dir() else path).read_text())
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


def text_config(config: PretrainedConfig) -> PretrainedConfig:
    """The config of the language model proper (``text_config`` for multimodal gemma3)."""
    return config.text_config if config.model_type == "gemma3" else config


def build(config: PretrainedConfig, device: str = "meta") -> torch.nn.Module:
    """The model for ``config`` in eval mode, float32, eager attention, on ``device``.

    ``device="meta"`` only propagates shapes (any size, no memory); ``"cpu"`` allocates real,
    seeded random weights (use small configs).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    config = copy.deepcopy(text_config(config))
    auto = {"bert": AutoModelForMaskedLM, "t5": AutoModelForSeq2SeqLM}.get(
        config.model_type, AutoModelForCausalLM)
    torch.manual_seed(0)
    with torch.device(device):
        model = auto.from_config(config, attn_implementation="eager", dtype=torch.float32)
    return model.eval()


def param_count(model: torch.nn.Module) -> int:
    """Parameters of ``model``; ``parameters()`` yields a shared (tied) tensor once."""
    return sum(p.numel() for p in model.parameters())


def forward_flops(
    config: PretrainedConfig, seq: int, batch: int = 1, tgt_seq: int | None = None,
    device: str = "meta",
) -> int:
    """FlopCounterMode total for one forward of ``batch`` x ``seq`` tokens.

    Encoder-decoder (t5): ``seq`` source tokens and ``tgt_seq`` (default ``seq``) target tokens.
    Eager attention plus the SDPA math backend: every attention product runs as a counted
    matmul (the fused CPU SDPA kernel would not be counted).
    """
    return _counted_forward(config, seq, batch, tgt_seq, device).get_total_flops()


def flop_breakdown(
    config: PretrainedConfig, seq: int, batch: int = 1, tgt_seq: int | None = None,
    device: str = "meta",
) -> dict[str, dict[str, int]]:
    """Like :func:`forward_flops`, per module path (``"Global"`` = whole model) and aten op."""
    counts = _counted_forward(config, seq, batch, tgt_seq, device).get_flop_counts()
    return {module: {str(op): int(n) for op, n in ops.items()} for module, ops in counts.items()}


def visible_pairs(
    config: PretrainedConfig, seq: int, batch: int = 1, tgt_seq: int | None = None,
) -> dict[str, int]:
    """Visible (query, key) entries of the mask each attention call receives, per sequence.

    Keys are attention module paths in call order (t5: encoder self-attention, then decoder
    self- and cross-attention per block). A mask of ``None`` means everything is visible. Runs on
    CPU (masks on the meta device carry no values); all sequences of the batch must get the same
    mask, which is checked.
    """
    import torch

    model = build(config, "cpu")
    with torch.no_grad(), _recorded_attention(model) as calls:
        model(**_inputs(model.config, seq, batch, tgt_seq, "cpu"))
    return {call["module"]: call["visible"] for call in calls}


def decode_cache_lengths(config: PretrainedConfig, prompt: int, gen: int) -> dict[str, Any]:
    """Prefill ``prompt`` tokens, then ``gen`` one-token steps, with transformers' default cache.

    Returns, for a decoder-only model on CPU (batch 1):

    * ``keys``: per step (step 0 = prefill), per layer, the length of the key tensor handed to
      attention;
    * ``visible``: per step, per layer, how many of those keys the last query may attend to;
    * ``cache``: per layer, the K/V length the cache holds after the last step;
    * ``seen``: per layer, the tokens the cache reports as seen (``get_seq_length``).
    """
    import torch

    model = build(config, "cpu")
    keys, visible, cache = [], [], None
    with torch.no_grad(), _recorded_attention(model) as calls:
        for length in [prompt] + [1] * gen:
            calls.clear()
            ids = torch.zeros(1, length, dtype=torch.long)
            out = model(input_ids=ids, cache=cache, use_cache=True)
            cache = out.cache
            keys.append([call["keys"] for call in calls])
            visible.append([call["last_query_visible"] for call in calls])
    return {
        "keys": keys,
        "visible": visible,
        "cache": [layer.keys.shape[-2] for layer in cache.layers],
        "seen": [cache.get_seq_length(i) for i in range(len(cache.layers))],
    }


def _counted_forward(
    config: PretrainedConfig, seq: int, batch: int, tgt_seq: int | None, device: str,
) -> Any:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    model = build(_long_enough(config, max(seq, tgt_seq or 0)), device)
    inputs = _inputs(model.config, seq, batch, tgt_seq, device)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
        model(**inputs)
    return counter


def _long_enough(config: PretrainedConfig, length: int) -> PretrainedConfig:
    """A copy whose learned position table (BERT) covers ``length``; positions carry no FLOPs."""
    table = getattr(text_config(config), "max_position_embeddings", None)
    if config.model_type != "bert" or table is None or length <= table:
        return config
    config = copy.deepcopy(config)
    config.max_position_embeddings = length
    return config


def _inputs(
    config: PretrainedConfig, seq: int, batch: int, tgt_seq: int | None, device: str,
) -> dict[str, Any]:
    import torch

    def ids(length: int) -> torch.Tensor:
        return torch.zeros(batch, length, dtype=torch.long, device=device)

    if config.model_type == "bert":
        return {"input_ids": ids(seq)}
    if config.model_type == "t5":
        return {"input_ids": ids(seq), "decoder_input_ids": ids(tgt_seq or seq), "use_cache": False}
    # Without a cache and without a 2D mask, transformers probes position_ids for packed sequences
    # (masking_utils._preprocess_mask_arguments), a data-dependent check the meta device cannot
    # run. An all-ones 2D mask (no padding) skips it and leaves every mask as it was.
    return {"input_ids": ids(seq), "attention_mask": ids(seq) + 1, "use_cache": False}


@contextlib.contextmanager
def _recorded_attention(model: torch.nn.Module) -> Iterator[list[dict[str, Any]]]:
    """Record every eager attention call of ``model``: module path, key length, visible entries."""
    names = {id(module): name for name, module in model.named_modules()}
    calls: list[dict[str, Any]] = []
    namespaces = {
        id(ns): ns for module in model.modules()
        if "eager_attention_forward" in (ns := type(module).forward.__globals__)
    }
    originals = {key: ns["eager_attention_forward"] for key, ns in namespaces.items()}

    def recorder(original: Any) -> Any:
        def eager_attention_forward(module, query, key, value, attention_mask, *args, **kwargs):
            visible = _visible(attention_mask, query.shape[-2], key.shape[-2])
            calls.append({
                "module": names[id(module)],
                "keys": key.shape[-2],
                "visible": int(visible.sum()),
                "last_query_visible": int(visible[-1].sum()),
            })
            return original(module, query, key, value, attention_mask, *args, **kwargs)

        return eager_attention_forward

    try:
        for key, ns in namespaces.items():
            ns["eager_attention_forward"] = recorder(originals[key])
        yield calls
    finally:
        for key, ns in namespaces.items():
            ns["eager_attention_forward"] = originals[key]


def _visible(mask: torch.Tensor | None, q_len: int, kv_len: int) -> torch.Tensor:
    """The (q_len, kv_len) boolean visibility of one sequence under an eager (additive) mask."""
    import torch

    if mask is None:
        return torch.ones(q_len, kv_len, dtype=torch.bool)
    if mask.dtype != torch.bool:  # eager masks are additive: 0 visible, dtype minimum masked
        mask = mask > torch.finfo(mask.dtype).min / 2
    assert mask.shape[1] == 1 and mask.shape[-2:] == (q_len, kv_len), mask.shape
    assert bool((mask == mask[:1]).all()), "sequences of the batch got different masks"
    return mask[0, 0]
