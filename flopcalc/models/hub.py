"""Hugging Face model ids (`org/name`, or a cache folder's `models--org--name`) resolved offline
from the local Hugging Face cache, whose layout huggingface_hub documents ("Manage
huggingface_hub cache-system"): `<cache>/models--<org>--<name>/refs/main` holds the commit of
the `main` revision, and `snapshots/<commit>/config.json` its config.json. The cache is
`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`. Nothing is fetched and
huggingface_hub is not imported."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from .files import file_kind

_PART = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}"
MODEL_ID = re.compile(rf"^({_PART})/({_PART})$")
CACHE_FOLDER = re.compile(rf"^models--({_PART})--({_PART})$")
COMMIT = re.compile(r"^[0-9a-fA-F]{6,64}$")


def model_id(ref: str) -> Optional[tuple[str, str]]:
    """(org, name) when `ref` is a model id or a cache folder's name, else None."""
    for pattern in (MODEL_ID, CACHE_FOLDER):
        m = pattern.match(Path(ref).name if pattern is CACHE_FOLDER else ref)
        if m and ".." not in ref and "--" not in m.group(1):
            return m.group(1), m.group(2)
    return None


def cache_dir() -> Path:
    """Where huggingface_hub keeps downloaded repositories."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def snapshot_config(folder: Path) -> Optional[Path]:
    """The config.json of a `models--org--name` folder's `main` snapshot, if it is there."""
    ref = folder / "refs" / "main"
    if file_kind(ref) != "file":
        return None
    try:
        commit = ref.read_text(encoding="ascii", errors="replace")[:100].strip()
    except OSError:
        return None
    if not COMMIT.match(commit):  # a hash, never a path
        return None
    config = folder / "snapshots" / commit / "config.json"
    return config if file_kind(config) == "file" else None


def cached_config(org: str, name: str) -> Optional[Path]:
    """The cached config.json of `org/name`'s main revision, or None."""
    return snapshot_config(cache_dir() / f"models--{org}--{name}")


def fetch_config(org: str, name: str) -> Optional[Path]:
    """With `FLOPCALC_ONLINE=1` and huggingface_hub installed (`pip install flopcalc[hub]`):
    `org/name`'s config.json downloaded into the cache (that file alone), else None. Going
    online is asked for, never assumed: a calculator that reaches the network unasked surprises
    CI jobs and air-gapped machines."""
    if os.environ.get("FLOPCALC_ONLINE") != "1" or os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        return None
    try:
        return Path(hf_hub_download(f"{org}/{name}", "config.json", cache_dir=cache_dir()))
    except Exception:  # offline, gated, missing: the preset or the error below answers
        return None
