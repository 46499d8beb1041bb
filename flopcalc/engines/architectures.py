"""Which Hugging Face architectures (config.json `architectures`) each SGLang and vLLM release
flopcalc knows can load: `serve --engine sglang==X` / `--engine vllm==X` refuses a model whose
architecture that release does not implement, rather than size a launch that fails.

The lists (`data/architectures.json`) are generated from each release's own model registry by
tools/sglang_reference/architectures.py: SGLang's `EntryClass` of each module of
`sglang/srt/models/` (what `ModelRegistry` collects), vLLM's `_VLLM_MODELS` keys. Read only on
the path that names a release (start-up time matters).

Decisions where the engines are not the guide:

- A model is accepted when any entry of its `architectures` is implemented, as both engines
  resolve it (SGLang `get_model_architecture`, vLLM `ModelRegistry.inspect_model_cls`).
- A model that states no architecture (a preset without a `checkpoint.architectures`, a
  hand-written YAML) is not checked.
- A release's Transformers fallback (SGLang and vLLM 0.8+ load an architecture they lack
  through transformers' own modelling code when it is compatible) is not counted: flopcalc does
  not size that path, whose memory differs (a hybrid model's recurrent layers get no state
  pool), so the release is refused and the one that implements the model named.
- Plain `--engine sglang` / `--engine vllm` (no release) is not checked: it sizes the model with
  the newest arithmetic flopcalc has, whatever the user runs (a plug-in model included).
"""

from __future__ import annotations

from typing import Any, Optional

from ..errors import FlopcalcError

TITLES = {"sglang": "SGLang", "vllm": "vLLM"}
_TABLE: Optional[dict[str, Any]] = None


def _key(version: str) -> tuple[int, ...]:
    """0.6.6.post1 → (0, 6, 6, 1): numbers in order, a post release after its base."""
    return tuple(int("".join(c for c in p if c.isdigit()) or 0) for p in version.split("."))


def table() -> dict[str, dict[str, frozenset[str]]]:
    """{engine: {release: architectures}}, releases in version order; read once."""
    global _TABLE
    if _TABLE is None:
        import json
        from pathlib import Path

        path = Path(__file__).resolve().parent / "data" / "architectures.json"
        with path.open(encoding="utf-8") as f:
            data = json.load(f)["engines"]
        _TABLE = {engine: {v: frozenset(r["architectures"])
                           for v, r in sorted(releases.items(), key=lambda kv: _key(kv[0]))}
                  for engine, releases in data.items()}
    return _TABLE


# The numbers that make a release line: SGLang's 0.4.9.post6 is 0.4.9's (`sglang.release`),
# vLLM's 0.10.1.1 is 0.10's (`registry.parse`).
LINE_PARTS = {"sglang": 3, "vllm": 2}


def registry_release(engine: str, version: str) -> Optional[str]:
    """The release whose registry stands for `version` (as --engine gave it): the one read
    with that number, else the last read of its line (vLLM 0.10 → 0.10.2), so that a model any
    release of the line loads is not refused; None where no release of the line was read."""
    releases = table().get(engine, {})
    if version in releases:
        return version
    line = _key(version)[:LINE_PARTS.get(engine, 2)]
    same = [v for v in releases if _key(v)[:len(line)] == line]
    return same[-1] if same else None


def shown(name: Any) -> str:
    """An architecture as an error may print it: word characters only, at most 80 of them (a
    config.json is input; its strings may carry escape sequences or run to megabytes)."""
    if not isinstance(name, str):
        return "(an entry that is not a name)"
    text = name
    clean = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "?" for c in text[:80])
    return clean + ("…" if len(text) > 80 else "") if clean else "(empty)"


def named(architectures: Any) -> Optional[list[Any]]:
    """config.json's `architectures` as a list (a lone string: one), None where it names none."""
    if isinstance(architectures, str):
        return [architectures]
    if isinstance(architectures, (list, tuple)) and architectures:
        return list(architectures)
    return None


def check(engine: str, version: str, architectures: Any) -> None:
    """Refuse, in one line, a model that release `version` of `engine` cannot load: none of its
    `architectures` is in the release's registry. Nothing is checked where the model names no
    architecture or no registry of the release was read."""
    archs = named(architectures)
    release = registry_release(engine, version) if archs else None
    if release is None:
        return
    releases = table()[engine]
    wanted = {a for a in archs if isinstance(a, str)}
    if wanted & releases[release]:
        return
    title = TITLES.get(engine, engine)
    first = next((v for v, have in releases.items() if wanted & have), None)
    # name what was read, never the user's text (its tail past the line is not checked)
    said = f"{title} {release}" if release == version else (
        f"{title} {'.'.join(release.split('.')[:LINE_PARTS.get(engine, 2)])} (its last release "
        f"read, {release})")
    if first is not None:
        raise FlopcalcError(f"{said} implements no {shown(archs[0])} (added by {first} of the "
                            f"releases flopcalc read): give --engine {engine}=={first}")
    raise FlopcalcError(f"{said} implements no {shown(archs[0])}, nor does any release flopcalc "
                        f"read ({', '.join(releases)}): check config.json's architectures, or "
                        f"give plain --engine {engine} to size it regardless")
