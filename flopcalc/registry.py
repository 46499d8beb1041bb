"""Finding and loading models: a preset name, a YAML file, or a Hugging Face config.json.

Every failure here is a `FlopcalcError` whose message names the file, the key and the fix.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .arch import Arch
from .errors import FlopcalcError

MAX_FILE_BYTES = 1 << 20  # a model description is a few hundred bytes; refuse anything over 1 MiB


@dataclass(frozen=True)
class LoadedModel:
    name: str  # preset name or file stem
    origin: str  # "preset", or the path that was read
    config: Arch  # the validated architecture
    raw: dict[str, Any]  # the mapping it was validated from (after --set)
    label: str  # how errors name the source


def presets_dir() -> Path:
    """The shipped presets: inside the installed package, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "presets", here.parent / "presets"):
        if candidate.is_dir():
            return candidate
    raise FlopcalcError("the shipped presets are missing; reinstall flopcalc")  # pragma: no cover


def preset_names() -> list[str]:
    return sorted(p.stem for p in presets_dir().glob("*.yaml"))


def looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml", ".json")) or ref.startswith(".")


def read_text(path: Path, what: str = "file") -> str:
    """A small UTF-8 text file's contents, or a FlopcalcError saying why not."""
    if not path.exists():
        raise FlopcalcError(f"{path}: no such {what}; check the path")
    if path.is_dir():
        raise FlopcalcError(f"{path}: is a directory; give the path of a {what}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise FlopcalcError(
            f"{path}: {size:,} bytes is too large for a {what} (limit {MAX_FILE_BYTES:,}); "
            "is this the right file?"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FlopcalcError(f"{path}: cannot read it ({exc.strerror})") from None
    if b"\0" in data:
        raise FlopcalcError(f"{path}: binary data, not a text {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FlopcalcError(f"{path}: not UTF-8 text; save the {what} as UTF-8") from None
    if not text.strip():
        raise FlopcalcError(f"{path}: the file is empty; see the presets (flopcalc show gpt2) "
                            "for an example")
    return text


def parse_yaml(text: str, label: str) -> Any:
    """Parse YAML with the safe loader: plain data only, no tags that construct objects."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.constructor.ConstructorError as exc:
        quoted = (exc.problem or "").split("'")
        tag = f" {quoted[1].replace('tag:yaml.org,2002:', '!!')}" if len(quoted) > 2 else ""
        raise FlopcalcError(
            f"{label}: unsupported YAML tag{tag}{_line(exc)}: flopcalc reads plain YAML data "
            "only (nothing is constructed or executed); remove the tag"
        ) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FlopcalcError(f"{label}: invalid YAML{_line(exc)}: {problem}") from None


def _line(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f" at line {mark.line + 1}" if mark is not None else ""


def read_mapping(path: Path, what: str) -> dict[str, Any]:
    """A YAML file whose top level is a mapping."""
    data = parse_yaml(read_text(path, what), str(path))
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"
        raise FlopcalcError(
            f"{path}: the top level is {kind}; a {what} is a mapping of keys to values "
            "(key: value lines)"
        )
    return data


def suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    if not close:
        return ""
    return " did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def resolve(ref: str) -> tuple[str, str, dict[str, Any]]:
    """(name, origin, raw mapping) for a preset name or a path to a YAML or config.json file."""
    path = Path(ref).expanduser()
    if looks_like_path(ref) or path.is_file():
        if ref.endswith(".json") or (path.is_file() and _is_json(path)):
            from .hf import read_hf_config

            return path.stem if path.stem != "config" else path.parent.name or "config", str(
                path), read_hf_config(path)
        return path.stem, str(path), read_mapping(path, "model file")
    names = preset_names()
    if ref not in names:
        hint = suggest(ref, names)
        raise FlopcalcError(
            f"unknown model '{ref}'" + (f";{hint}" if hint else "")
            + " (flopcalc list shows all presets; a YAML or config.json path works too)"
        )
    return ref, "preset", read_mapping(presets_dir() / f"{ref}.yaml", "model file")


def _is_json(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"{")


def load_model(ref: str, overrides: Iterable[str] = ()) -> LoadedModel:
    """Load, override and validate a model."""
    from .overrides import apply_overrides

    name, origin, raw = resolve(ref)
    label = f"{name}" if origin == "preset" else origin
    raw = apply_overrides(raw, overrides)
    return LoadedModel(name=name, origin=origin, config=validated(raw, label), raw=raw,
                       label=label)


def validated(raw: dict[str, Any], label: str) -> Arch:
    """`raw` validated by pydantic, or the result of an identical earlier validation."""
    from .cache import Store, key

    store = Store("configs", ["config.py", "arch.py"])
    cache_key = key(raw)
    arch = Arch.from_stored(store.lookup(cache_key))
    if arch is None:
        from dataclasses import asdict

        from .validation import validate_model

        arch = validate_model(raw, label).resolve()
        store.store(cache_key, asdict(arch))
    return arch
