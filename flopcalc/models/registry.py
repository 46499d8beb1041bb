"""Finding and loading models: a preset name, a YAML file, a Hugging Face config.json (or a
directory holding one), or `-` for a file on standard input.

A bare name is always a preset, matched case-insensitively (`Llama-3.1-8B`); a file is named by
a path (`./gpt2`, `models/gpt2.yaml`), so a file that happens to share a preset's name never
shadows it. Every failure is a `FlopcalcError` that names the file, the key and the fix.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from ..records import dataclass
from ..errors import FlopcalcError, suggest
from .files import STDIN, as_mapping, file_kind, parse_json, parse_yaml, read_text, user_path
from .spec import ModelSpec, build_spec

# The modules that declare the model format (the cache forgets when one changes).
FORMAT_SOURCES = ("declare.py", "models/config.py", "models/spec.py", "kinds/*.py")


@dataclass(frozen=True)
class LoadedModel:
    name: str  # preset name, file stem, or the imported model's own name
    origin: str  # "preset", or the path that was read
    spec: ModelSpec  # the validated model
    raw: dict[str, Any]  # the mapping it was validated from (after --set)
    label: str  # how errors name the source
    # a config.json's storage keys (quantization_config, torch_dtype, dtype): how its
    # checkpoint stores the weights (`models.quantization`); None for a YAML model
    stored_as: Optional[dict[str, Any]] = None


def presets_dir() -> Path:
    """The shipped presets: inside the installed package, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "presets", here.parent / "presets"):
        if candidate.is_dir():
            return candidate
    raise FlopcalcError("the shipped presets are missing; reinstall flopcalc")  # pragma: no cover


def preset_names(directory: Optional[Path] = None) -> list[str]:
    return sorted(p.stem for p in (directory or presets_dir()).glob("*.yaml"))


def preset_aliases(directory: Path) -> dict[str, str]:
    """Short names → preset, from each preset file's `aliases: [a, b]` line (read as text: a
    short name costs a run a glance at a dozen small files, not a dozen YAML parses)."""
    found: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("aliases:"):
                listed = line.split(":", 1)[1].split("#", 1)[0].strip().strip("[]")
                found.update({a.strip().lower(): path.stem for a in listed.split(",")
                              if a.strip()})
                break
    return found


def looks_like_path(ref: str) -> bool:
    """A reference that names a file rather than a preset."""
    return (ref == STDIN or "/" in ref or "\\" in ref or ref.startswith((".", "~"))
            or ref.lower().endswith((".yaml", ".yml", ".json")))


def find_preset(ref: str, names: list[str], what: str, hint: str) -> str:
    """The preset `ref` names, ignoring case, or an error suggesting close names."""
    by_lower = {n.lower(): n for n in names}
    if ref.lower() in by_lower:
        return by_lower[ref.lower()]
    close = suggest(ref.lower(), names)
    try:  # a file or directory of that name here: the user meant it, written as a bare name
        here = file_kind(Path(ref)) if len(ref) < 256 else "missing"
    except FlopcalcError:
        here = "missing"
    shadow = (f"; a {'file' if here == 'file' else 'directory'} named '{ref}' is here: write it "
              f"as a path: ./{ref}") if here in ("file", "directory") else ""
    raise FlopcalcError(f"unknown {what} '{ref}'" + (f";{close}" if close else "") + shadow
                        + f" ({hint})")


STORAGE_KEYS = ("quantization_config", "torch_dtype", "dtype")


def _read_file(ref: str) -> tuple[str, str, dict[str, Any], Optional[dict[str, Any]]]:
    """(name, origin, raw mapping) of a model file: YAML in the preset schema or a config.json
    (by extension or content), a directory holding a config.json, or stdin."""
    from .hf import from_hf_dict

    path = user_path(ref)
    if ref != STDIN and file_kind(path) == "directory":
        if file_kind(path / "config.json") != "file":
            raise FlopcalcError(f"{path}: is a directory without a config.json; give a model "
                                "file or a directory holding a config.json")
        path = path / "config.json"
    label = "stdin" if ref == STDIN else str(path)
    text = read_text(path if ref != STDIN else STDIN, "model file")
    if label.endswith(".json") or text.lstrip().startswith("{"):
        data = as_mapping(parse_json(text, label), label, "config.json")
        raw = from_hf_dict(data, label)
        text_config = data.get("text_config") if isinstance(data.get("text_config"),
                                                             dict) else {}
        stored_as = {k: v for k, v in {**text_config, **data}.items() if k in STORAGE_KEYS}
        return str(raw.pop("_name")), label, raw, stored_as
    raw = as_mapping(parse_yaml(text, label), label, "model file")
    return ("stdin" if ref == STDIN else path.stem), label, raw, None


_NOTES: ContextVar[Optional[list[str]]] = ContextVar("flopcalc_load_notes", default=None)


@contextlib.contextmanager
def collected_notes() -> Iterator[list[str]]:
    """What loading models had to say (a preset answering for a model id), for the report's
    warnings."""
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def note(text: str) -> None:
    """Say `text` in the warnings of the report being built (when a command builds one)."""
    notes = _NOTES.get()
    if notes is not None:
        notes.append(text)


def same_preset(org: str, name: str) -> Optional[str]:
    """The preset that is the model `org/name`: the one whose `checkpoint.repo` it is, else
    the one of its name (ignoring case)."""
    wanted = f"repo: {org}/{name}".lower()
    names = preset_names()
    for preset in names:
        text = (presets_dir() / f"{preset}.yaml").read_text(encoding="utf-8").lower()
        if any(line.strip() == wanted for line in text.splitlines()):
            return preset
    return next((p for p in names if p.lower() == name.lower()), None)


def _hub(ref: str) -> Optional[str]:
    """What a model id (`org/name`, `models--org--name`) names: the cached config.json of its
    main revision, else a preset that is the same model (said on stderr); None when `ref` is
    no model id or is a file or folder here."""
    # a preset's name has no "/" and a cache folder's starts "models--": those alone import the
    # cache's code, which a run on a preset never needs
    if ref.lower().endswith((".yaml", ".yml", ".json")) or \
            ("/" not in ref and "models--" not in ref):
        return None
    from .hub import (CACHE_FOLDER, cache_dir, cached_config, fetch_config, model_id,
                      snapshot_config)

    ids = model_id(ref)
    if ids is None:
        return None
    path = user_path(ref)
    try:
        kind = file_kind(path)
    except FlopcalcError:
        return None
    if kind == "directory" and CACHE_FOLDER.match(path.name) and \
            file_kind(path / "config.json") != "file":
        config = snapshot_config(path)
        if config is None:
            raise FlopcalcError(f"{path}: a Hugging Face cache folder without a config.json in "
                                "its main snapshot (refs/main); download it: huggingface-cli "
                                f"download {ids[0]}/{ids[1]} config.json")
        return str(config)
    if kind != "missing":
        return None
    config = cached_config(*ids) or fetch_config(*ids)
    if config is not None:
        return str(config)
    preset = same_preset(*ids)
    if preset is not None:
        note(f"{ids[0]}/{ids[1]} is not in the Hugging Face cache ({cache_dir()}); the preset "
              f"{preset}, the same model, answers")
        return preset
    raise FlopcalcError(
        f"'{ref}' is neither a file here nor a model in the Hugging Face cache ({cache_dir()}; "
        "HF_HUB_CACHE or HF_HOME move it), and no preset is the same model; download its "
        f"config.json (huggingface-cli download {ids[0]}/{ids[1]} config.json) or give a path")


def load_model(ref: str, overrides: Iterable[str] = ()) -> LoadedModel:
    """Find, read, override and validate a model."""
    from .files import read_mapping

    ref = _hub(ref) or ref
    stored_as = None
    if looks_like_path(ref):
        name, origin, raw, stored_as = _read_file(ref)
        label = origin
    else:
        name = find_preset(ref, preset_names(), "model",
                           "flopcalc list shows all presets; a YAML or config.json path works too")
        origin, label = "preset", name
        raw = read_mapping(presets_dir() / f"{name}.yaml", "model file")
    overrides = tuple(overrides)
    if overrides:
        from .overrides import apply_overrides

        raw = apply_overrides(raw, overrides)
    return LoadedModel(name=name, origin=origin, spec=validated(raw, label), raw=raw, label=label,
                       stored_as=stored_as)


def validated(raw: dict[str, Any], label: str) -> ModelSpec:
    """`raw` read as a model config and built: by pydantic, or, when this very input validated
    before, by the fast reader of the same declaration (see `cache`)."""
    from ..declare import structure
    from .cache import Store, key
    from .config import model_config

    store = Store("configs", FORMAT_SOURCES)
    cache_key = key(raw)
    if store.seen(cache_key):
        try:
            return build_spec(structure(model_config(raw), raw))
        except ValueError:
            pass  # validate from scratch below, for pydantic's message
    from .validation import validate_model

    _, spec = validate_model(raw, label)
    store.remember(cache_key)
    return spec
