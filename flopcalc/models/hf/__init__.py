"""Import a Hugging Face `config.json` (a local file; nothing is fetched) as a flopcalc config.

Each supported `model_type` has a converter that reads the keys its transformers model class
reads, with the same defaults, and returns a plain mapping in the preset schema; that mapping is
validated like any YAML preset, so `flopcalc show config.json` prints a preset that reloads to
the same numbers. The converters live by family in this package's modules, each with a
`CONVERTERS` table (and `DEFAULTS` for keys a published config may leave out, `ALIASES` for a
config class's `attribute_map`), gathered here: a new family is one module.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from pathlib import Path
from typing import Callable

from ...errors import FlopcalcError
from .common import NO_CONTEXT, Config, Raw


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, Callable[[Config], Raw]], dict[str, Raw]]:
    converters: dict[str, Callable[[Config], Raw]] = {}
    defaults: dict[str, Raw] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).resolve().parent)]),
                       key=lambda m: m.name):
        module = importlib.import_module(f"{__package__}.{info.name}")
        converters.update(getattr(module, "CONVERTERS", {}))
        defaults.update(getattr(module, "DEFAULTS", {}))
    return converters, defaults


@functools.lru_cache(maxsize=1)
def _aliases() -> dict[str, dict[str, str]]:
    """model_type → {alias: canonical name} (transformers' `attribute_map`, and the
    back-compatible keywords a config class renames)."""
    aliases: dict[str, dict[str, str]] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).resolve().parent)]),
                       key=lambda m: m.name):
        module = importlib.import_module(f"{__package__}.{info.name}")
        for model_type, table in getattr(module, "ALIASES", {}).items():
            aliases.setdefault(model_type, {}).update(table)
    return aliases


@functools.lru_cache(maxsize=1)
def _refused() -> dict[str, str]:
    """model_type → why it is refused (a module's `REFUSED`): types flopcalc knows it cannot
    count exactly, named with the features it lacks."""
    refused: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).resolve().parent)]),
                       key=lambda m: m.name):
        module = importlib.import_module(f"{__package__}.{info.name}")
        refused.update(getattr(module, "REFUSED", {}))
    return refused


def with_aliases(data: Raw, model_type: str) -> Raw:
    """`data` with each alias pair under both names: `save_pretrained` writes the canonical
    name, published files often the alias (EXAONE 3's `num_layers`, InternLM3's `qkv_bias`),
    and transformers reads either, so a converter may read either too."""
    table = _aliases().get(model_type)
    if not table:
        return data
    data = dict(data)
    for alias, canonical in table.items():
        if data.get(canonical) is None and data.get(alias) is not None:
            data[canonical] = data[alias]
        elif data.get(alias) is None and data.get(canonical) is not None:
            data[alias] = data[canonical]
    return data


def _name(label: str, data: Raw, model_type: str) -> str:
    """A model's name: the file's stem; for a `config.json`, its directory's name (the model's
    in a Hugging Face cache: `models--Qwen--Qwen2-7B/snapshots/<hash>/config.json` is
    Qwen2-7B), else the last part of `_name_or_path`, else the model type."""
    path = Path(label)
    if path.stem not in ("config", "stdin") or path.suffix not in (".json", ""):
        return path.stem
    origin = str(data.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    if label != "stdin":
        folder = Path(os.path.abspath(label)).parent  # not resolve(): a cache links to blobs/
        if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
            return folder.parent.parent.name.split("--")[-1]
        if folder.name:
            return folder.name
    return origin or model_type


def supported() -> list[str]:
    """Every model_type with a converter."""
    return sorted(_tables()[0])


def from_hf_dict(data: Raw, label: str) -> Raw:
    """The preset-schema mapping for a config.json mapping, with its `_name` (see `_name`)."""
    model_type = data.get("model_type")
    if model_type is None:
        raise FlopcalcError(f"{label}: no model_type; a Hugging Face config.json names its "
                            "model_type (or describe the model in a YAML file: flopcalc show "
                            "gpt2 prints an example)")
    if not isinstance(model_type, str):
        raise FlopcalcError(f"{label}: model_type must be text, got "
                            f"{'a list' if isinstance(model_type, list) else type(model_type).__name__}")
    converters, defaults = _tables()
    refused = _refused().get(model_type)
    if refused is not None:
        raise FlopcalcError(f"{label}: model_type '{model_type}' is not supported: {refused}")
    if model_type not in converters:
        raise FlopcalcError(f"{label}: model_type '{model_type[:60]}' is not supported; "
                            f"supported: {', '.join(sorted(converters))} (or describe the model "
                            "in a YAML file: flopcalc show gpt2 prints an example)")
    # A class default fills a key the file leaves out; a key written as null stays null (as
    # transformers passes it to the config class: DeepSeek-V3's q_lora_rank null is no rank).
    # The file's aliases are resolved first, so that a key it gives under its alias is not
    # taken for absent and filled by the default of its canonical name.
    data = {**defaults.get(model_type, {}), **with_aliases(data, model_type)}
    data = with_aliases(data, model_type)
    config = Config(data, label, model_type)
    try:
        raw = converters[model_type](config)
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError):
        key = f" '{config.last}'" if config.last else ""
        raise FlopcalcError(f"{label}: a value of the wrong type near{key} (as transformers "
                            f"reads it for model_type {model_type}); check it") from None
    architectures = data.get("architectures")
    kind = architectures[0] if isinstance(architectures, list) and architectures and isinstance(
        architectures[0], str) else model_type
    return {"_name": _name(label, data, model_type),
            # a file that states no context says so in every output's title
            "title": f"{kind} (Hugging Face {model_type} config"
                     + ("; context unknown)" if raw.get("notes") == NO_CONTEXT else ")"),
            "source": f"Hugging Face config.json: {label}",
            "architecture": raw.pop("architecture", "decoder-only"),
            **{k: v for k, v in raw.items() if v is not None or k == "n_kv_heads"}}
