"""The `model` report: one structure that every output format (table, JSON, CSV) renders.

Plain dataclasses keep the start-up path free of pydantic model building; `flopcalc schema`
derives the JSON Schema from these same classes (see `json_schema`), so it cannot drift.
All arithmetic happens here or in `counting`; renderers only format.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Optional, Union

from . import counting as c
from .registry import LoadedModel

SCHEMA_VERSION = 1
TOKENS_PER_PARAM_DEFAULT = 20  # Hoffmann et al. 2022 (Chinchilla): ~20 tokens per parameter


@dataclass
class ModelInfo:
    name: str
    title: str
    source: str
    origin: str
    architecture: str
    notes: str


@dataclass
class Settings:
    seq: int
    tgt_seq: Optional[int]
    batch: int
    tokens: int
    tokens_source: str
    attention: str
    elementwise: bool
    context: Optional[int]
    flops_per_multiply_add: int = 2
    lm_head_counted: bool = True


@dataclass
class Row:
    name: str
    value: int
    share_pct: float
    kind: str
    shape: Optional[list[int]] = None


@dataclass
class LayerGroup:
    """One layer of a stack, and how many there are."""

    stack: str
    n_layers: int
    params: int
    flops: int
    param_rows: list[Row]
    flop_rows: list[Row]


@dataclass
class Params:
    total: int
    embedding: int
    non_embedding: int
    non_embedding_share_pct: float
    components: dict[str, int]
    rows: list[Row]
    groups: list[Row]  # rows merged by their first two name parts (decoder.attn, embed.tokens)


@dataclass
class Flops:
    forward: int
    weights: int
    attention: int
    elementwise: int
    weights_share_pct: float
    attention_share_pct: float
    elementwise_share_pct: float
    forward_per_token: Union[int, float]
    components: dict[str, int]
    rows: list[Row]


@dataclass
class Training:
    tokens: int
    tokens_source: str
    n: int
    n_is: str
    forward_per_token: Union[int, float]
    six_nd: int
    attention_correction: int
    six_nd_plus_attention: int
    exact: int
    six_nd_below_exact_pct: float
    rounded: bool
    conventions_line: str  # 6ND and PaLM against exact, pointing to `flopcalc conventions`


@dataclass
class Crossover:
    seq: int
    exact: str
    d_model_multiple: float
    attention: str
    attention_share_pct: float
    layer_attention_share_pct: float


@dataclass
class Report:
    schema_version: int
    model: ModelInfo
    settings: Settings
    conventions: list[str]
    layers: list[LayerGroup]
    params: Params
    flops: Flops
    training: Training
    crossover: Crossover
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def exact_number(x: Fraction) -> Union[int, float]:
    """An int when `x` is whole; otherwise the nearest float (marked as rounded by the caller)."""
    return x.numerator if x.denominator == 1 else float(x)


def _rows(parts: list[c.Part], whole: int) -> list[Row]:
    return [Row(p.name, p.value, pct(p.value, whole), p.kind, list(p.shape) if p.shape else None)
            for p in parts]


def _groups(parts: list[c.Part], whole: int, depth: int = 2) -> list[Row]:
    """Parts summed by the first `depth` parts of their dotted names, in order of appearance."""
    sums: dict[str, int] = {}
    for p in parts:
        key = ".".join(p.name.split(".")[:depth])
        sums[key] = sums.get(key, 0) + p.value
    return [Row(name, value, pct(value, whole), "") for name, value in sums.items()]


@dataclass
class CrossoverPoint:
    seq: int  # s* rounded up: the first whole length at which attention ≥ weights
    exact: str  # s* exactly, as a fraction string ("73728", "7168/3")
    d_model_multiple: float


def crossover_point(cfg: Any, attention: c.Attention) -> CrossoverPoint:
    s_star = c.crossover_seq(cfg, attention)
    return CrossoverPoint(c.ceil_fraction(s_star), str(s_star), float(s_star / cfg.d_model))


def default_tokens(cfg: Any, total_params: int) -> tuple[int, str]:
    """D when --tokens is not given: the published figure, else 20 tokens per parameter."""
    if cfg.training_tokens:
        return cfg.training_tokens, f"published: {cfg.training_tokens_source or cfg.source}"
    return (TOKENS_PER_PARAM_DEFAULT * total_params,
            f"default: {TOKENS_PER_PARAM_DEFAULT} tokens per parameter (Chinchilla rule of thumb)")


def default_seq(cfg: Any) -> int:
    return cfg.default_seq or cfg.max_seq_len or 2048


def conventions(cfg: Optional[Any], attention: str, elementwise: bool = False,
                n: Optional[int] = None) -> list[str]:
    """How a run counted, one line each. Without a model (`compare`), the model-independent
    lines only, and N is each model's own."""
    lines = ["2 FLOPs per multiply-add: a matmul (T x in)·(in x out) costs 2·T·in·out"]
    if attention == "full":
        lines.append("attention full: every (query, key) pair counted, 4·b·s²·d_q per "
                     "self-attention layer (what PyTorch's FlopCounterMode counts)")
    else:
        lines.append("attention causal: decoder self-attention counts the s(s+1)/2 unmasked "
                     "pairs; encoder and cross-attention stay full")
    tied = cfg is not None and cfg.tie_embeddings
    lines.append("LM head counted: 2·T·d·V on every output token"
                 + (" (tied to the embedding)" if tied else ", tied or not"))
    if elementwise:
        lines.append("element-wise ops counted as *.elementwise.* parts (README: Element-wise "
                     "costs); forward = weights + attention + elementwise")
    else:
        lines.append("not counted: bias adds, norms, activations, softmax, residual adds, "
                     "embedding lookups")
    which = f" = {n:,}" if n is not None else " of each model"
    lines.append(f"6ND uses N = non-embedding params{which} (total minus token and position "
                 "embeddings and an untied LM head)")
    lines.append("training = 3 x forward (backward = 2 x forward)")
    if cfg is not None and cfg.is_encoder_decoder:
        lines.append("encoder-decoder: tokens D are target (decoder) tokens; crossover taken "
                     "with target length = source length")
    return lines


def build_report(loaded: LoadedModel, seq: Optional[int] = None, tgt_seq: Optional[int] = None,
                 batch: int = 1, tokens: Optional[int] = None, attention: c.Attention = "full",
                 elementwise: bool = False) -> Report:
    from .published import model_line

    cfg = loaded.config
    seq = seq or default_seq(cfg)
    w = c.workload(cfg, seq, tgt_seq, batch, attention)

    param_parts = c.model_params(cfg)
    total_params = c.total(param_parts)
    n = c.non_embedding(param_parts)

    flop_parts = c.model_flops(cfg, w, elementwise)
    forward = c.total(flop_parts)
    weights = c.total(flop_parts, c.WEIGHTS)
    attn = c.total(flop_parts, c.ATTENTION)
    elementwise_flops = c.total(flop_parts, c.ELEMENTWISE)

    if tokens is None:
        tokens, tokens_source = default_tokens(cfg, total_params)
    else:
        tokens_source = "--tokens"
    cost = c.training_cost(forward, attn, n, w, tokens)

    layers = []
    for stack, n_layers in c.stacks(cfg):
        lp, lf = c.layer_params(cfg, stack), c.layer_flops(cfg, stack, w, elementwise)
        lp_total, lf_total = c.total(lp), c.total(lf)
        layers.append(LayerGroup(stack, n_layers, lp_total, lf_total,
                                 _rows(lp, lp_total), _rows(lf, lf_total)))

    point = crossover_point(cfg, attention)
    layer_w, layer_a = c.layers_weights_attention(cfg, w)

    warnings = []
    context = cfg.max_seq_len
    for label, length in (("--seq", seq), ("--tgt-seq", w.tgt_seq if cfg.is_encoder_decoder else 0)):
        if context and length > context:
            warnings.append(f"{label} {length:,} exceeds {loaded.name}'s context of {context:,} "
                            "tokens; the counts are given for the longer sequence anyway")

    return Report(
        schema_version=SCHEMA_VERSION,
        model=ModelInfo(loaded.name, cfg.title or loaded.name, cfg.source, loaded.origin,
                        cfg.architecture, cfg.notes),
        settings=Settings(seq=seq, tgt_seq=w.tgt_seq if cfg.is_encoder_decoder else None,
                          batch=batch, tokens=tokens, tokens_source=tokens_source,
                          attention=attention, elementwise=elementwise, context=context),
        conventions=conventions(cfg, attention, elementwise, n),
        layers=layers,
        params=Params(total_params, total_params - n, n, pct(n, total_params),
                      {p.name: p.value for p in param_parts}, _rows(param_parts, total_params),
                      _groups(param_parts, total_params)),
        flops=Flops(forward=forward, weights=weights, attention=attn, elementwise=elementwise_flops,
                    weights_share_pct=pct(weights, forward), attention_share_pct=pct(attn, forward),
                    elementwise_share_pct=pct(elementwise_flops, forward),
                    forward_per_token=exact_number(cost.forward_per_token),
                    components={p.name: p.value for p in flop_parts},
                    rows=_rows(flop_parts, forward)),
        training=Training(
            tokens=tokens, tokens_source=tokens_source, n=n, n_is="non_embedding",
            forward_per_token=exact_number(cost.forward_per_token), six_nd=cost.six_nd,
            attention_correction=cost.attention_correction,
            six_nd_plus_attention=cost.six_nd_plus_attention, exact=cost.exact,
            six_nd_below_exact_pct=pct(cost.exact - cost.six_nd, cost.exact),
            rounded=cost.rounded,
            conventions_line=model_line(cfg, seq, loaded.name, attention, tgt_seq)),
        crossover=Crossover(
            seq=point.seq, exact=point.exact, d_model_multiple=point.d_model_multiple,
            attention=attention,
            attention_share_pct=pct(attn, forward),
            layer_attention_share_pct=pct(layer_a, layer_w + layer_a)),
        warnings=warnings,
    )


def json_schema() -> dict[str, Any]:
    """JSON Schema of `Report`, generated from the dataclasses above (pydantic is imported only
    here, for the `schema` command)."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(Report).json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "flopcalc model report"
    return schema
