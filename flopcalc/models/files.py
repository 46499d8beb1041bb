"""Reading the files users hand to flopcalc: bounded, safe, and with one-line errors.

Model, accelerator and budget files are a few hundred bytes of plain data. Anything else is
refused before it can cost time or memory: files over 1 MiB, binary or non-UTF-8 data, YAML
tags that would construct objects, documents whose aliases expand to more than 100,000 values
(a "billion laughs"), nesting deeper than 64 levels, and numbers with thousands of digits.
`-` reads the file from standard input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import FlopcalcError

MAX_FILE_BYTES = 1 << 20  # a model description is a few hundred bytes; refuse anything over 1 MiB
MAX_VALUES = 100_000  # values in a document once its aliases are expanded
MAX_DEPTH = 64  # a model file nests three levels; 64 is already absurd
STDIN = "-"


def user_path(ref: str) -> Path:
    """The path a user typed, with `~` expanded where it names a home directory (`~0` or
    `~nobody-here` stay literal paths instead of failing)."""
    if ref.startswith("~"):
        try:
            return Path(ref).expanduser()
        except RuntimeError:
            pass
    return Path(ref)


def read_text(path: Path | str, what: str = "file") -> str:
    """A small UTF-8 text file's contents (`-`: standard input), or a FlopcalcError saying why
    not."""
    if str(path) == STDIN:
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        label = "stdin"
    else:
        path = Path(path)
        label = str(path)
        if not path.exists():
            raise FlopcalcError(f"{path}: no such {what}; check the path")
        if path.is_dir():
            raise FlopcalcError(f"{path}: is a directory; give the path of a {what}")
        try:
            with path.open("rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise FlopcalcError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise FlopcalcError(f"{label}: more than {MAX_FILE_BYTES:,} bytes is too large for a "
                            f"{what}; is this the right file?")
    if b"\0" in data:
        raise FlopcalcError(f"{label}: binary data, not a text {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FlopcalcError(f"{label}: not UTF-8 text; save the {what} as UTF-8") from None
    if not text.strip():
        raise FlopcalcError(f"{label}: the {what} is empty; see the presets (flopcalc show gpt2) "
                            "for an example")
    return text


def check_size(data: Any, label: str) -> Any:
    """`data` unchanged, or an error when it expands to too many values or nests too deep.

    YAML aliases share one object, so loading a billion-laughs document is cheap but any walk
    over it is not; this walk counts each shared node's expansion once (memoised by identity),
    so it is linear in the document whatever its aliases do.
    """
    expanded: dict[int, int] = {}
    stack: list[tuple[Any, int, bool]] = [(data, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise FlopcalcError(f"{label}: nested more than {MAX_DEPTH} levels deep; a model "
                                "file is a flat mapping of keys to values")
        children = list(node.values()) if isinstance(node, dict) else (
            node if isinstance(node, list) else [])
        if id(node) in expanded:
            continue
        if not done:
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children
                         if isinstance(child, (dict, list)) and id(child) not in expanded)
            continue
        size = 1 + sum(expanded.get(id(c), 1) for c in children)
        if size > MAX_VALUES:
            raise FlopcalcError(f"{label}: its aliases expand to more than {MAX_VALUES:,} "
                                "values; write the values out without YAML anchors and aliases")
        expanded[id(node)] = size
    return data


def parse_yaml(text: str, label: str) -> Any:
    """Parse YAML with the safe loader: plain data only, no tags that construct objects."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.constructor.ConstructorError as exc:
        quoted = (exc.problem or "").split("'")
        tag = f" {quoted[1].replace('tag:yaml.org,2002:', '!!')}" if len(quoted) > 2 else ""
        raise FlopcalcError(
            f"{label}: unsupported YAML tag{tag}{_line(exc)}: flopcalc reads plain YAML data "
            "only (nothing is constructed or executed); remove the tag") from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FlopcalcError(f"{label}: invalid YAML{_line(exc)}: {problem}") from None
    except (ValueError, RecursionError) as exc:  # an integer of 4,300+ digits; absurd nesting
        raise FlopcalcError(f"{label}: {_hostile(exc)}") from None
    return check_size(data, label)


def parse_json(text: str, label: str) -> Any:
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FlopcalcError(f"{label}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise FlopcalcError(f"{label}: {_hostile(exc)}") from None
    return check_size(data, label)


def _hostile(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return f"nested more than {MAX_DEPTH} levels deep; a model file is a flat mapping"
    return "a number has thousands of digits; write sizes as plain integers"


def _line(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f" at line {mark.line + 1}" if mark is not None else ""


def as_mapping(data: Any, label: str, what: str) -> dict[str, Any]:
    """`data` if it is a mapping (the top level of every file flopcalc reads), else an error."""
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"
        raise FlopcalcError(f"{label}: the top level is {kind}; a {what} is a mapping of keys "
                            "to values (key: value lines)")
    return data


def read_mapping(path: Path | str, what: str) -> dict[str, Any]:
    """A YAML file (or stdin) whose top level is a mapping."""
    label = "stdin" if str(path) == STDIN else str(path)
    return as_mapping(parse_yaml(read_text(path, what), label), label, what)
