"""The `list` report (every shipped preset with its key sizes and parameters) and `show` (a
resolved config as preset YAML)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from ..counting import parts as p
from ..counting.model import model_params, non_embedding
from ..models.registry import load_model, preset_names
from ..models.spec import Moe
from .common import SCHEMA_VERSION, Report


@dataclass
class PresetRow:
    model: str
    title: str
    architecture: str
    n_layers: int  # every layer (encoder + decoder)
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int  # the dense MLP's width, or one routed expert's
    experts: Optional[int]  # routed experts of a mixture (None: dense)
    top_k: Optional[int]
    layer_kinds: str  # e.g. "sliding window 1,024 x 52, full causal x 10"
    vocab_size: int
    context: Optional[int]
    params_total: int
    params_active: int
    params_non_embedding: int


@dataclass
class ListReport(Report):
    schema_version: int
    command: str
    presets: list[PresetRow]


def preset_row(name: str) -> PresetRow:
    spec = load_model(name).spec
    params = model_params(spec)
    layer = spec.first_layer(spec.output_stack)
    moe = next((g.layer.mlp for g in spec.groups() if isinstance(g.layer.mlp, Moe)), None)
    width = moe.expert.d_ff if moe else layer.mlp.d_ff  # type: ignore[union-attr]
    kinds: dict[str, int] = {}
    for g in spec.groups():
        kind = g.layer.attention.mask.describe()
        kinds[kind] = kinds.get(kind, 0) + g.count
    att = layer.attention
    return PresetRow(
        model=name, title=spec.title, architecture=spec.architecture,
        n_layers=spec.n_layers(), d_model=spec.d_model, n_heads=att.heads,
        n_kv_heads=att.kv_heads, head_dim=att.qk_dim, d_ff=width,
        experts=moe.experts if moe else None, top_k=moe.top_k if moe else None,
        layer_kinds=", ".join(f"{k} x {n}" for k, n in kinds.items()),
        vocab_size=spec.vocab_size, context=spec.max_seq_len, params_total=p.total(params),
        params_active=p.total(model_params(spec, active=True)),
        params_non_embedding=non_embedding(params))


def build_list_report() -> ListReport:
    """All presets, family by family (gpt2, gpt3, llama, ...), smallest first."""
    rows = [preset_row(name) for name in preset_names()]
    rows.sort(key=lambda r: (r.model.split("-")[0], r.params_total))
    return ListReport(SCHEMA_VERSION, "list", rows)


def config_yaml(config: Any) -> str:
    """A validated config as preset YAML: every field that differs from its default (the ones
    that matter), so loading it gives the same model."""
    import yaml

    data = config.model_dump(exclude_none=True, exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=96)


@dataclass
class AcceleratorRow:
    name: str
    title: str
    vendor: str
    source: str
    memory_bytes: int
    memory_bandwidth: int  # bytes/s
    peak_flops: dict[str, int]  # dtype → dense FLOP/s per device
    notes: str


@dataclass
class AcceleratorsReport(Report):
    schema_version: int
    command: str
    accelerators: list[AcceleratorRow]
    short_names: dict[str, str]  # what `--accelerator h100` and the like mean


def build_accelerators_report() -> AcceleratorsReport:
    from ..models.accelerators import ALIASES, all_accelerators

    rows = [AcceleratorRow(name=a.name, **asdict(a.spec)) for a in all_accelerators()]
    return AcceleratorsReport(SCHEMA_VERSION, "accelerators", rows, dict(ALIASES))
