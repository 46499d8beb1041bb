"""The `list` report (every shipped preset with its key sizes and parameters) and `show` (a
resolved config as preset YAML)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Optional

from ..records import dataclass
from ..kinds import base as p
from ..counting.model import model_params, non_embedding
from ..models.registry import load_model, preset_names
from .common import SCHEMA_VERSION, Report, first_attention, first_ffn


@dataclass
class PresetRow:
    model: str
    title: str
    architecture: str
    n_layers: int  # every layer (encoder + decoder)
    d_model: int
    n_heads: Optional[int]  # of the first attention layer (None: no attention)
    n_kv_heads: Optional[int]
    head_dim: Optional[int]
    d_ff: Optional[int]  # the dense MLP's width, or one routed expert's (None: no MLP)
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
    att, ffn = first_attention(spec, spec.output_stack), first_ffn(spec)
    kinds: dict[str, int] = {}
    for g in spec.groups():
        kind = " + ".join(m.describe() for m in g.layer.mixers) or g.layer.describe()
        kinds[kind] = kinds.get(kind, 0) + g.count
    return PresetRow(
        model=name, title=spec.title, architecture=spec.architecture,
        n_layers=spec.n_layers(), d_model=spec.d_model, n_heads=att.heads or None,
        n_kv_heads=att.kv_heads or None, head_dim=att.head_dim or None,
        d_ff=ffn.expert_width or (ffn.ffn_widths[0] if ffn.ffn_widths else None),
        experts=ffn.experts or None, top_k=ffn.top_k or None,
        layer_kinds=", ".join(f"{k} x {n}" for k, n in kinds.items()),
        vocab_size=spec.vocab_size, context=spec.max_seq_len, params_total=p.total(params),
        params_active=p.total(model_params(spec, active=True)),
        params_non_embedding=non_embedding(params))


def build_list_report() -> ListReport:
    """All presets, family by family (gpt2, gpt3, llama, ...), smallest first."""
    rows = [preset_row(name) for name in preset_names()]
    rows.sort(key=lambda r: (r.model.split("-")[0], r.params_total))
    return ListReport(SCHEMA_VERSION, "list", rows)


def config_data(config: Any) -> dict[str, Any]:
    """A validated config as a preset's mapping: the required keys and every key that differs
    from its default (a required null, such as latent attention's q_lora_rank, included), so
    loading it (`show` writes it as YAML with `render.data.to_yaml`) gives the same model."""
    from ..declare import dump

    return dump(config)


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
    usable_memory_bytes: Optional[int] = None  # what the driver reports (None: not recorded)
    usable_memory_source: str = ""
    system: Optional[str] = None  # the network preset it usually comes built into


@dataclass
class AcceleratorsReport(Report):
    schema_version: int
    command: str
    accelerators: list[AcceleratorRow]
    short_names: dict[str, str]  # what `--accelerator h100` and the like mean


def build_accelerators_report() -> AcceleratorsReport:
    from ..models.accelerators import all_accelerators

    loaded = all_accelerators()
    rows = [AcceleratorRow(name=a.name, **{k: v for k, v in asdict(a.spec).items()
                                           if k not in ("aliases", "architecture", "board_watts",
                                                        "board_watts_source")})
            for a in loaded]
    aliases = {alias: a.name for a in loaded for alias in a.spec.aliases}
    return AcceleratorsReport(SCHEMA_VERSION, "accelerators", rows, aliases)
