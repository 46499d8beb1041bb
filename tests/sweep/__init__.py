"""The model-zoo sweep: every supported Hugging Face `model_type`, checked against transformers.

For each case (`tests/sweep/cases_*.py`, one module per family, each with a `CASES` list):

1. transformers' default config of the type, with the case's `fix` keys where the default does
   not build, and each of its `variants` (non-default layer counts and patterns, widths, head
   splits, experts, ranks, windows, tying, biases);
2. the config saved as a checkpoint would be (`save_pretrained`: aliases under their canonical
   names, derived keys written out), then imported by flopcalc from that file;
3. parameters: flopcalc's `params.total` against the model built on the meta device;
4. FLOPs: a shrunk copy (the case's `shrink` keys: every architecture feature kept, sizes
   small) built on CPU in training mode, eager attention and eager experts, without a cache,
   run at the case's lengths and batch 1 and 2; flopcalc's `flops.forward` against what
   `FlopCounterMode` counts. Where transformers computes more than the model needs (Llama 4's
   experts on every token), the case names the difference and how it is worked.

torch and transformers are imported inside the functions (the module imports without them).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import pkgutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    """One model type: how to make its default config build (`fix`), the keys that shrink it
    for a real forward (`shrink`), non-default `variants` (each a dict of keys, checked for
    parameters on the meta device and, shrunk, for FLOPs), the lengths to run, and the class to
    build when AutoModelForCausalLM is not it (`auto`: "masked_lm", "seq2seq", "base")."""

    model_type: str
    shrink: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] = field(default_factory=dict)
    variants: tuple[dict[str, Any], ...] = ()
    lengths: tuple[int, ...] = (5, 13)
    auto: str = "causal_lm"
    # FLOPs transformers counts beyond what flopcalc counts, for (config, batch, seq): e.g. the
    # experts of every token where the model routes each to k. None: they must be equal.
    extra_flops: Optional[Callable[[Any, int, int], int]] = None
    note: str = ""
    text_config: Optional[str] = None  # a multimodal wrapper: the key of its text model
    cache: bool = False  # also check the bytes of the cache after a real generate
    # the forward's inputs for (config, batch, seq) where token ids are not them (Whisper's mel
    # frames); None: input_ids (and decoder_input_ids for seq2seq) of seq tokens
    inputs: Optional[Callable[[Any, int, int], dict[str, Any]]] = None
    # "text": flopcalc counts a multimodal wrapper's language model only (its tower is not
    # read): parameters against the wrapper's language model and LM head, FLOPs against the
    # text model alone (`auto` builds it from the text config)
    count: str = "model"
    # a wrapper's nested text type checked on its own (`qwen2_vl_text`): transformers builds
    # only a headless text model from it, so the wrapper of this type is built around it (head
    # tied by the text file's flag, its class default when absent; `wrapper_keys` its own keys,
    # a tiny tower for the FLOP run) and compared as `count="text"`
    wrapper: Optional[str] = None
    wrapper_keys: Optional[Callable[[dict[str, Any]], dict[str, Any]]] = None  # of the text
    # the auto class that builds the whole wrapper for `count="text"` (AudioFlamingo3 is only
    # in AutoModelForSeq2SeqLM's mapping)
    wrapper_auto: str = "multimodal_lm"
    # count an eval-mode forward under no_grad, on a copy of the config, where the
    # training-mode one cannot run (Reformer's reversible layers: torch's module tracker asserts
    # a gradient function; its training forward also refuses lengths off the chunk multiple)
    # and the forward writes to its config (Reformer's num_buckets); the case's note says so
    eval_mode: bool = False
    # seeded random variants (tests/sweep/draws.py) appended to `variants` by `cases()`: how
    # many (None: 2 for the first case of its model_type, none for the others, which check
    # another shrink or the cache), and the generic keys never drawn for this type (a comment
    # beside them says why)
    seeded: Optional[int] = None
    seeded_skip: tuple[str, ...] = ()


def wrapped(case: Case, config: Any) -> tuple[Case, Any]:
    """(the wrapper's case, the wrapper's config around `config`) for a nested text type;
    `case` and `config` unchanged otherwise."""
    if case.wrapper is None:
        return case, config
    from transformers import AutoConfig

    text = config.to_dict()
    top = case.wrapper_keys(text) if case.wrapper_keys else {}
    if "tie_word_embeddings" in text:
        top["tie_word_embeddings"] = text["tie_word_embeddings"]
    config = AutoConfig.for_model(case.wrapper, text_config=text, **top)
    return Case(case.wrapper, auto=case.auto, count="text", inputs=case.inputs,
                wrapper_auto=case.wrapper_auto), config


def cases(seeded: bool = True) -> list[Case]:
    """Every case of the sweep, each with its seeded random variants after its written ones
    (`seeded=False`: the written ones only; drawing needs transformers' default configs)."""
    out: list[Case] = []
    for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda m: m.name):
        if info.name.startswith("cases_"):
            out += importlib.import_module(f"{__name__}.{info.name}").CASES
    if seeded:
        seen: set[str] = set()
        drawn = []
        for case in out:
            drawn.append(with_seeded(case, first=case.model_type not in seen))
            seen.add(case.model_type)
        out = drawn
    return out


def seeded_count(case: Case, first: bool) -> int:
    """How many seeded variants the case gets (see `Case.seeded`)."""
    return case.seeded if case.seeded is not None else (2 if first else 0)


def with_seeded(case: Case, first: bool = True) -> Case:
    """The case with its seeded variants (tests/sweep/draws.py) after its written ones."""
    import dataclasses

    from . import draws as seeded

    count = seeded_count(case, first)
    if not count:
        return case
    data = config_of(case.model_type, dict(case.fix), case.text_config).to_dict()
    top = None
    if case.text_config is not None:
        top, data = data, data[case.text_config]
    shrink = {k: v for k, v in case.shrink.items() if k != "top"}
    drawn = seeded.variants(case.model_type, data, shrink, case.seeded_skip, count, top)
    if "top" in case.fix:  # a variant's wrapper keys replace the fix's: keep the fix's under them
        drawn = tuple({**v, "top": {**case.fix["top"], **v["top"]}} if "top" in v else v
                      for v in drawn)
    return dataclasses.replace(case, variants=case.variants + drawn)


# ------------------------------------------------------------------------ transformers side

def config_of(model_type: str, keys: dict[str, Any], text_config: Optional[str] = None) -> Any:
    """transformers' config of `model_type` with `keys` set (the rest its defaults); for a
    multimodal wrapper (`text_config` names its key), the keys are its text model's."""
    from transformers import AutoConfig

    keys = json.loads(json.dumps(keys))
    if text_config is not None:  # "top": the wrapper's own keys (vision_config, tying, ...)
        top = keys.pop("top", {})
        return AutoConfig.for_model(model_type, **top, **{text_config: keys})
    return AutoConfig.for_model(model_type, **keys)


def saved(config: Any) -> dict[str, Any]:
    """The config.json `save_pretrained` writes for `config`."""
    with tempfile.TemporaryDirectory() as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config.save_pretrained(tmp)
        return json.loads((Path(tmp) / "config.json").read_text())


_AUTO = {"causal_lm": "AutoModelForCausalLM", "masked_lm": "AutoModelForMaskedLM",
         "seq2seq": "AutoModelForSeq2SeqLM", "base": "AutoModel",
         "speech_seq2seq": "AutoModelForSpeechSeq2Seq",
         "image_text": "AutoModelForImageTextToText", "multimodal_lm": "AutoModelForMultimodalLM"}


def build(case: Case, config: Any, device: str) -> Any:
    import torch
    import transformers

    auto = getattr(transformers, _AUTO[case.auto])
    torch.manual_seed(0)
    kwargs: dict[str, Any] = {"attn_implementation": "eager", "dtype": torch.float32}
    with torch.device(device), warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            model = auto.from_config(config, experts_implementation="eager", **kwargs)
        except TypeError:
            model = auto.from_config(config, **kwargs)
    return model


def hf_params(case: Case, config: Any) -> int:
    case, config = wrapped(case, config)
    if case.count == "text":
        try:
            return text_params(build(Case(case.model_type, auto=case.wrapper_auto), config,
                                     "meta"))
        except ImportError:  # a tower needs a library not installed (Gemma 3n's timm MobileNet)
            return text_model_params(config)
    model = build(case, config, "meta")
    return sum(p.numel() for p in model.parameters())


def text_params(model: Any) -> int:
    """A wrapper's language model and LM head (a tied head once, a masked LM's prediction
    head with it)."""
    lm = next((m for path in ("model.language_model", "language_model", "model.text_model",
                              "text_model")
               if (m := _attr(model, path)) is not None), None)
    if lm is None:  # the layers in `model` beside a tower held there: Chameleon's image
        # tokenizer `vqmodel`, Phi-4-multimodal's image and audio encoders `embed_tokens_extend`
        towers = {id(p) for name in ("vqmodel", "embed_tokens_extend")
                  for p in getattr(getattr(model.model, name, None), "parameters", list)()}
        seen = {id(p): p.numel() for p in model.model.parameters() if id(p) not in towers}
    else:
        seen = {id(p): p.numel() for p in lm.parameters()}
    head = model.get_output_embeddings()
    seen.update({id(p): p.numel() for p in (head.parameters() if head is not None else ())})
    # a masked-LM wrapper's prediction head before its decoder (ModernVBERT's projection_head)
    extra = _attr(model, "projection_head")
    seen.update({id(p): p.numel() for p in (extra.parameters() if extra is not None else ())})
    return sum(seen.values())


def text_model_params(config: Any) -> int:
    """A wrapper's language model and LM head built without the wrapper, for a wrapper whose
    tower cannot be built here: the causal LM of its text config, its head tied by the
    wrapper's top-level `tie_word_embeddings` (what `PreTrainedModel.tie_weights` reads on the
    wrapper). Only for wrappers whose language model is that causal LM's body (Gemma 3n's)."""
    text = config.get_text_config()
    text.tie_word_embeddings = bool(config.tie_word_embeddings)
    model = build(Case(text.model_type), text, "meta")
    return sum(p.numel() for p in model.parameters())


def _attr(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name, None)
    return obj


def hf_flops(case: Case, config: Any, batch: int, seq: int) -> int:
    """FlopCounterMode's count of one training-mode forward without a cache (eval mode under
    no_grad for a case with `eval_mode`)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    eval_mode = case.eval_mode
    if eval_mode:
        import copy

        config = copy.deepcopy(config)
    case, config = wrapped(case, config)
    if case.count == "text":  # the language model alone
        text = config.get_text_config()
        try:
            model = build(case, text, "cpu").train()
        except ValueError:  # no causal-LM class takes this text config: the wrapper (shrunk)
            model = build(Case(case.model_type, auto=case.wrapper_auto), config, "cpu").train()
        config = text
    else:
        model = build(case, config, "cpu").train(not eval_mode)
    inputs: dict[str, Any] = {}
    vocab = getattr(config, "vocab_size", None) or getattr(config.get_text_config(),
                                                             "vocab_size", None)
    torch.manual_seed(1)
    if vocab is not None:  # π0's config has none: its case gives the inputs
        ids = torch.randint(0, vocab, (batch, seq))
        inputs = {"input_ids": ids}
        if case.auto == "seq2seq":
            inputs["decoder_input_ids"] = ids
    if case.inputs is not None:
        inputs = case.inputs(config, batch, seq)
    grad = torch.no_grad() if eval_mode else contextlib.nullcontext()
    try:
        with grad:
            _forward(model, inputs, use_cache=False)  # warm any lazy initialisation up
    except TypeError:
        pass
    with FlopCounterMode(display=False) as counter, warnings.catch_warnings(), \
            contextlib.redirect_stderr(io.StringIO()), grad:
        warnings.simplefilter("ignore")
        try:
            _forward(model, inputs, use_cache=False)
        except TypeError:
            _forward(model, inputs)
    return counter.get_total_flops()


def _forward(model: Any, inputs: dict[str, Any], **kw: Any) -> None:
    try:
        model(**inputs, **kw)
    except AttributeError as exc:
        # transformers 5.24's Llama4ForConditionalGeneration.forward builds its output with
        # `outputs.image_outputs`, which the language model's output lacks: it raises after the
        # whole forward has run (every FLOP counted)
        if "image_outputs" not in str(exc):
            raise


def cache_bytes(cache: Any) -> int:
    """Bytes of every tensor a transformers cache holds: K/V of attention layers (and the
    indexer keys of DeepSeek-V3.2's `DynamicIndexedLayer`), conv and recurrent states of
    linear-attention and state-space layers, MiniMax's lightning states."""
    import torch

    total = 0
    for layer in cache.layers:
        tensors = [getattr(layer, name, None) for name in ("keys", "values", "indexer_keys")]
        for name in ("conv_states", "recurrent_states"):
            tensors += list((getattr(layer, name, None) or {}).values())
        total += sum(t.numel() * t.element_size() for t in tensors
                     if isinstance(t, torch.Tensor))
    # MiniMaxCache keeps each lightning layer's KᵀV state in a list of its own
    total += sum(t.numel() * t.element_size() for t in getattr(cache, "linear_cache", ())
                 if isinstance(t, torch.Tensor))
    return total


def hf_generated_cache(case: Case, config: Any, batch: int, prompt: int, new: int) -> int:
    """Bytes of the cache after `generate` of `new` tokens from prompts of `prompt` (the cache
    then holds prompt + new − 1 positions: the last token is not fed back)."""
    import torch

    model = build(case, config, "cpu").eval()
    vocab = getattr(config, "vocab_size", None) or config.get_text_config().vocab_size
    torch.manual_seed(1)
    ids = torch.randint(0, vocab, (batch, prompt))
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        out = model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                             return_dict_in_generate=True, use_cache=True)
    return cache_bytes(out.past_key_values)


# --------------------------------------------------------------------------- flopcalc side

def flopcalc_report(data: dict[str, Any], seq: int, batch: int = 1, command: str = "model",
                    **options: Any) -> Any:
    """flopcalc's report of a saved config.json mapping (`model` by default)."""
    import flopcalc

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(data))
        if command == "model":
            return flopcalc.model(str(path), seq=seq, batch=batch, **options)
        return getattr(flopcalc, command)(str(path), batch=batch, **options)


# ---------------------------------------------- the three checks every family's case runs

def check_params(case: Case, keys: dict[str, Any]) -> None:
    """Parameters of the saved config equal transformers' model's."""
    config = config_of(case.model_type, keys, case.text_config)
    assert flopcalc_report(saved(config), seq=8).params.total == hf_params(case, config)


def check_flops(case: Case, keys: dict[str, Any]) -> None:
    """Forward FLOPs at each of the case's lengths, batch 1 and 2, equal FlopCounterMode's."""
    config = config_of(case.model_type, keys, case.text_config)
    data = saved(config)
    for seq in case.lengths:
        for batch in (1, 2):
            ours = flopcalc_report(data, seq=seq, batch=batch).flops.forward
            extra = case.extra_flops(config, batch, seq) if case.extra_flops else 0
            assert ours + extra == hf_flops(case, config, batch, seq), (seq, batch)


def check_cache(case: Case) -> None:
    """The cache after a real generate: an fp32 model keeps K/V, conv and recurrent states in
    4 bytes; transformers holds prompt + new − 1 tokens."""
    config = config_of(case.model_type, {**case.fix, **case.shrink}, case.text_config)
    data = saved(config)
    for batch, prompt, new in ((1, 3, 2), (2, 9, 4)):
        doc = flopcalc_report(data, seq=0, batch=batch, command="infer", prompt=prompt,
                              gen=new - 1, kv_dtype="fp32", state_dtype="fp32")
        assert doc.kv_cache.bytes == hf_generated_cache(case, config, batch, prompt, new)
