"""Reading the files users hand to flopcalc: bounded, safe, and with one-line errors.

Model, accelerator and budget files are a few hundred bytes of plain data. Anything else is
refused before it can cost time or memory: files over 1 MiB, binary or non-UTF-8 data, YAML
tags that would construct objects, documents whose aliases expand to more than 100,000 values
(a "billion laughs"), nesting deeper than 64 levels, and numbers with thousands of digits.
`-` reads the file from standard input.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any

from ..errors import FlopcalcError

MAX_FILE_BYTES = 1 << 20  # a model description is a few hundred bytes; refuse anything over 1 MiB
MAX_VALUES = 100_000  # values in a document once its aliases are expanded
MAX_DEPTH = 64  # a model file nests three levels; 64 is already absurd
STDIN = "-"


def file_kind(path: Path) -> str:
    """What a path names: `file` (a regular file, through symlinks), `missing`, `directory`,
    or another kind (a FIFO, a device, a socket: never opened, since reading one can block or
    never end). A name the system refuses (too long) is an error naming why."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            return "missing"
        raise FlopcalcError(f"{str(path)[:80]}{'...' if len(str(path)) > 80 else ''}: "
                            f"{exc.strerror}; check the path") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    return {stat.S_IFIFO: "FIFO", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device",
            stat.S_IFSOCK: "socket"}.get(stat.S_IFMT(mode), "special file")


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
        if sys.stdin is None:
            raise FlopcalcError(f"standard input is closed; give the {what} as a path")
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        label = "stdin"
    else:
        path = Path(path)
        label = str(path)
        kind = file_kind(path)
        if kind == "missing":
            raise FlopcalcError(f"{path}: no such {what}; check the path")
        if kind != "file":
            raise FlopcalcError(f"{path}: is a {kind}, not a regular file; give the path of a "
                                f"{what}")
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # swapped after the check
                    raise FlopcalcError(f"{path}: not a regular file; give the path of a {what}")
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise FlopcalcError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise FlopcalcError(f"{label}: more than {MAX_FILE_BYTES:,} bytes is too large for a "
                            f"{what}; is this the right file?")
    if b"\0" in data:
        raise FlopcalcError(f"{label}: binary data, not a text {what}")
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark is allowed
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


class _Refused(Exception):
    """A document a loader refuses outright (a duplicate or complex key), with its message."""


_LOADER: list[Any] = []


def _loader() -> Any:
    """PyYAML's safe loader, reading scalars as YAML 1.2's core schema does: `true`/`false`
    are the only booleans (not yes/no/on/off), integers are decimal, 0o octal or 0x hex (no
    base-60 `1:0` = 60, no octal `010` = 8, no `_`), and a mapping may not repeat a key or use
    a mapping or list as one."""
    if _LOADER:
        return _LOADER[0]
    import re

    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type, misc]
        yaml_implicit_resolvers = {
            first: [(tag, regex) for tag, regex in resolvers if tag not in (_BOOL, _INT, _FLOAT)]
            for first, resolvers in base.yaml_implicit_resolvers.items()}

    Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))
    Loader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                 list("-+0123456789"))
    Loader.add_implicit_resolver(_FLOAT, re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))

    def integer(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        if text.startswith(("0o", "0x")):
            return int(text[2:], 8 if text[1] == "o" else 16)
        return int(text, 10)

    def mapping(loader: Any, node: Any) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, (dict, list)):
                raise _Refused(f"a mapping or list used as a key{_mark(key_node)}; keys are "
                               "plain names")
            if key in seen:
                raise _Refused(f"duplicate key '{key}'{_mark(key_node)}; give each key once")
            seen.add(key)
        return yaml.SafeLoader.construct_yaml_map(loader, node)

    Loader.add_constructor(_INT, integer)
    Loader.add_constructor("tag:yaml.org,2002:map", mapping)
    _LOADER.append(Loader)
    return Loader


_BOOL, _INT, _FLOAT = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                       "tag:yaml.org,2002:float")


def _mark(node: Any) -> str:
    mark = getattr(node, "start_mark", None)
    return f" at line {mark.line + 1}" if mark is not None else ""


def parse_yaml(text: str, label: str) -> Any:
    """Parse YAML with a safe loader (plain data only, no tags that construct objects), its
    scalars as YAML 1.2 reads them (`_loader`)."""
    import yaml

    try:
        data = yaml.load(text, Loader=_loader())  # noqa: S506 - a safe loader
    except yaml.constructor.ConstructorError as exc:
        quoted = (exc.problem or "").split("'")
        tag = f" {quoted[1].replace('tag:yaml.org,2002:', '!!')}" if len(quoted) > 2 else ""
        raise FlopcalcError(
            f"{label}: unsupported YAML tag{tag}{_line(exc)}: flopcalc reads plain YAML data "
            "only (nothing is constructed or executed); remove the tag") from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FlopcalcError(f"{label}: invalid YAML{_line(exc)}: {problem}") from None
    except _Refused as exc:
        raise FlopcalcError(f"{label}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # an integer of 4,300+ digits; absurd nesting
        raise FlopcalcError(f"{label}: {_hostile(exc)}") from None
    return check_size(data, label)


def parse_json(text: str, label: str) -> Any:
    import json

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _Refused(f"duplicate key '{key}'; give each key once")
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except _Refused as exc:
        raise FlopcalcError(f"{label}: {exc}") from None
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
