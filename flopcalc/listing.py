"""`flopcalc list` and `flopcalc show`: the presets as data."""

from __future__ import annotations

from typing import Any

from . import counting as c
from .registry import load_model, preset_names


def preset_row(name: str) -> dict[str, Any]:
    cfg = load_model(name).config
    params = c.model_params(cfg)
    total = c.total(params)
    return {
        "name": name,
        "title": cfg.title,
        "architecture": cfg.architecture,
        "n_layers": cfg.n_layers + cfg.n_encoder_layers,
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "n_kv_heads": cfg.kv_heads,
        "head_dim": cfg.d_head,
        "d_ff": cfg.d_ff,
        "vocab_size": cfg.vocab_size,
        "context": cfg.max_seq_len,
        "params_total": total,
        "params_non_embedding": c.non_embedding(params),
    }


def preset_rows() -> list[dict[str, Any]]:
    """All presets, family by family (gpt2, gpt3, llama, ...), smallest first."""
    rows = [preset_row(name) for name in preset_names()]
    return sorted(rows, key=lambda r: (r["name"].split("-")[0], r["params_total"]))


def config_yaml(cfg: Any) -> str:
    """The config as preset YAML: every field spelled out, so loading it gives the same model."""
    import yaml

    data = cfg.model_dump(exclude_none=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=96)
