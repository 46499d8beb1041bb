"""The `compare` report: the key figures of several models' `model` reports, one flat record per
model, side by side."""

from __future__ import annotations

from dataclasses import field
from typing import Optional, Sequence, Union

from ..records import dataclass
from ..models.spec import ModelSpec
from .common import SCHEMA_VERSION, Report, chunked_scans, conventions
from .model import ModelReport


@dataclass
class Summary:
    model: str
    title: str
    params_total: int
    params_active: int
    params_non_embedding: int
    n: int  # the N of 6ND: (active) non-embedding parameters
    seq: int
    flops_forward: int
    flops_weights: int
    flops_attention: int
    flops_families: dict[str, int]  # forward FLOPs by family (those that occur)
    flops_forward_per_token: Union[int, float]
    attention_share_pct: float
    crossover_seq: Optional[int]
    crossover_d_model_multiple: Optional[float]
    training_tokens: int
    training_six_nd: int
    training_exact: int
    six_nd_below_exact_pct: float
    params_active_without_embedding: int = 0  # as model cards count (see reports.model.Params)
    training_tokens_source: str = ""  # published, 20 per param or --tokens: where D came from


def tokens_label(source: str) -> str:
    """Where a training-token count came from, in a word or three (`default_tokens`'s source
    line, or `--tokens`)."""
    if source.startswith("published"):
        return "published"
    if source.startswith("default"):
        return "20 per param"
    return source


@dataclass
class CompareSettings:
    seq: Optional[int]  # None: each model at its own default length (see `seqs`)
    seqs: list[int]  # the length each model ran at
    batch: int
    attention: str
    scan: str  # how chunked scans count their core (--scan): chunked or recurrent


@dataclass
class CompareReport(Report):
    schema_version: int
    command: str
    settings: CompareSettings
    conventions: list[str]
    models: list[Summary]
    warnings: list[str] = field(default_factory=list)


def summary(report: ModelReport) -> Summary:
    """The figures `compare` puts side by side, taken from a model report."""
    p, f, t, x = report.params, report.flops, report.training, report.crossover
    return Summary(
        model=report.model.name, title=report.model.title, params_total=p.total,
        params_active=p.active, params_non_embedding=p.non_embedding, n=t.n,
        seq=report.settings.seq, flops_forward=f.forward, flops_weights=f.weights,
        flops_attention=f.attention, flops_families=f.families,
        flops_forward_per_token=f.forward_per_token,
        attention_share_pct=x.attention_share_pct, crossover_seq=x.seq,
        crossover_d_model_multiple=x.d_model_multiple, training_tokens=t.tokens,
        training_six_nd=t.six_nd, training_exact=t.exact,
        six_nd_below_exact_pct=t.six_nd_below_exact_pct,
        params_active_without_embedding=p.active_without_embedding,
        training_tokens_source=tokens_label(t.tokens_source))


def build_compare_report(reports: list[ModelReport], seq: Optional[int], batch: int,
                         attention: str, scan: str = "chunked",
                         specs: Sequence[ModelSpec] = ()) -> CompareReport:
    """The shared settings and conventions, one summary per model; a warning when the models
    ran at different lengths because no --seq was given. `specs`: the models' specs, for the
    scan line (whether some model has a chunked scan)."""
    seqs = [r.settings.seq for r in reports]
    warnings = [w for r in reports for w in r.warnings]
    if seq is None and len(set(seqs)) > 1:
        each = ", ".join(f"{r.model.name} {r.settings.seq:,}" for r in reports)
        warnings.append(f"the models ran at their own default lengths ({each}); give --seq N to "
                        "compare them at one length")
    return CompareReport(
        schema_version=SCHEMA_VERSION, command="compare",
        settings=CompareSettings(seq, seqs, batch, attention, scan),
        conventions=conventions(None, attention, scan=scan,
                                scanned=any(chunked_scans(s) for s in specs)),
        models=[summary(r) for r in reports],
        warnings=warnings)
