"""The `model` report: parameters, forward FLOPs, training and the crossover of one model at
one workload; every output format renders this one structure."""

from __future__ import annotations

from dataclasses import field
from typing import Optional, Union

from ..records import dataclass
from ..kinds import base as p
from ..counting.crossover import crossover, layers_weights_attention
from ..counting.layers import layer_flops, layer_params
from ..counting.model import (model_flops, model_params, mtp_flops, mtp_params, non_embedding,
                              output_tokens, workload)
from ..counting.published import model_line
from ..counting.training import training_cost
from ..counting.workload import Workload
from ..errors import FlopcalcError
from ..models.registry import LoadedModel
from .common import (SCHEMA_VERSION, ModelInfo, Report, as_argument, context_warning, conventions,
                     default_seq, default_tokens, exact_number, model_info, pct)
from .images import ImagesInfo, image_lines, place
from .packing import packed_line, parse_packed


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class Settings:
    seq: int
    tgt_seq: Optional[int]
    batch: int
    tokens: int
    tokens_source: str
    attention: str
    scan: str  # how chunked scans count their core (--scan): chunked or recurrent
    elementwise: bool
    context: Optional[int]
    flops_per_multiply_add: int = 2
    lm_head_counted: bool = True
    # images per sequence through the vision towers (--images); `seq` then counts their tokens
    images: list[ImagesInfo] = field(default_factory=list)
    # sample lengths packed into each sequence (--packed), attending within themselves; empty:
    # one sample per sequence
    packed: list[int] = field(default_factory=list)


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class Row:
    name: str
    value: int
    share_pct: float
    kind: str
    shape: Optional[list[int]] = None


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class LayerGroup:
    """One kind of layer of a stack (all the layers alike), and how many layers have it."""

    stack: str
    kind: str  # e.g. "sliding window 1,024, gated MLP 21,504"
    n_layers: int
    first_layer: int  # index of the first such layer in its stack
    params: int  # one layer
    active_params: int  # one layer, a mixture of experts' unused experts left out
    flops: int  # one layer at this workload
    param_rows: list[Row]
    flop_rows: list[Row]


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class Params:
    total: int
    active: int  # total minus the unused routed experts of every MoE layer (= total if dense)
    # `active` without the tables read row by row on the input side (the token embedding when
    # untied, position and token-type tables): the "active parameters" gpt-oss's card quotes
    # (Mixtral's and DeepSeek-V3's include the embedding: `active`). A tied embedding is the LM
    # head's matrix: it stays.
    active_without_embedding: int
    embedding: int
    non_embedding: int
    active_non_embedding: int
    non_embedding_share_pct: float
    mtp: int  # multi-token-prediction modules, outside `total`
    components: dict[str, int]
    rows: list[Row]
    groups: list[Row]  # rows merged by their first two name parts (decoder.attn, embed.tokens)


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class Flops:
    """Forward FLOPs: `forward` is the sum of its families (`families`, in the order of
    `kinds.base.FAMILIES`, those that occur): `weights`, `attention` and `elementwise` are
    always given (0 when absent); another family, such as the `scan` of recurrent mixers, is
    also given under its own key in the JSON document."""

    forward: int
    weights: int
    attention: int
    elementwise: int
    weights_share_pct: float
    attention_share_pct: float
    elementwise_share_pct: float
    forward_per_token: Union[int, float]
    families: dict[str, int]
    family_shares_pct: dict[str, float]
    components: dict[str, int]
    rows: list[Row]
    # The forward under both attention conventions, whichever `settings.attention` chose
    # (`forward` is one of them): the source documents' count beside the kernels' one.
    forward_full: int = 0
    forward_causal: int = 0


def family_keys(flops: dict, families: dict[str, int]) -> dict:
    """A JSON `flops` mapping with every family's total under its own key too."""
    return {**flops, **{k: v for k, v in families.items() if k not in flops}}


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class Training:
    tokens: int
    tokens_source: str
    n: int
    n_is: str
    forward_per_token: Union[int, float]
    six_nd: int
    attention_correction: int
    six_nd_plus_attention: int
    mtp: int  # 3 x the multi-token-prediction modules' forward per token x D (0 without them)
    exact: int
    six_nd_below_exact_pct: float
    rounded: bool
    conventions_line: str  # 6ND and PaLM against exact, pointing to `flopcalc conventions`


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class Crossover:
    seq: Optional[int]  # the first whole length at which attention >= weights; None: never
    exact: Optional[str]  # s* exactly, as a fraction string ("73728", "7168/3"), when rational
    d_model_multiple: Optional[float]
    attention: str
    attention_share_pct: float
    layer_attention_share_pct: float
    note: str = ""  # why there is no crossover


@dataclass(repr=False, eq=False)  # plain data for JSON: no methods made at start-up
class ModelReport(Report):
    schema_version: int
    command: str
    model: ModelInfo
    settings: Settings
    conventions: list[str]
    layers: list[LayerGroup]
    params: Params
    flops: Flops
    training: Training
    crossover: Crossover
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        doc = super().to_dict()
        doc["flops"] = family_keys(doc["flops"], self.flops.families)
        return doc


def rows(parts: list[p.Part], whole: int) -> list[Row]:
    return [Row(x.name, x.value, pct(x.value, whole), x.family, list(x.shape) or None)
            for x in parts]


def _groups(parts: list[p.Part], whole: int, depth: int = 2) -> list[Row]:
    """Parts summed by the first `depth` parts of their dotted names, in order of appearance."""
    sums: dict[str, int] = {}
    for x in parts:
        key = ".".join(x.name.split(".")[:depth])
        sums[key] = sums.get(key, 0) + x.value
    return [Row(name, value, pct(value, whole), "") for name, value in sums.items()]


def _layer_groups(loaded: LoadedModel, w: Workload, elementwise: bool) -> list[LayerGroup]:
    spec, out = loaded.spec, []
    for g in spec.groups():
        lp = layer_params(g.layer, spec.d_model)
        lf = layer_flops(g.layer, spec.d_model, w, elementwise)
        total_p, total_f = p.total(lp), p.total(lf)
        out.append(LayerGroup(
            stack=g.stack, kind=g.layer.describe(), n_layers=g.count, first_layer=g.first,
            params=total_p, active_params=p.total(layer_params(g.layer, spec.d_model, True)),
            flops=total_f, param_rows=rows(lp, total_p), flop_rows=rows(lf, total_f)))
    return out


def build_model_report(loaded: LoadedModel, seq: Optional[int] = None,
                       tgt_seq: Optional[int] = None, batch: int = 1,
                       tokens: Optional[int] = None, attention: p.Convention = "full",
                       elementwise: bool = False, images: Optional[int] = None,
                       image_size: Optional[str] = None, scan: p.Scan = "chunked",
                       packed: Optional[str] = None) -> ModelReport:
    spec = loaded.spec
    if tgt_seq is not None and not spec.is_encoder_decoder:
        raise FlopcalcError(f"--tgt-seq: {loaded.name} is not an encoder-decoder model, so "
                            "it reads one sequence; give its length as --seq and drop --tgt-seq")
    seq = asked = seq or default_seq(spec)
    samples = parse_packed(packed, seq, spec, loaded.name)
    if samples and images:
        raise FlopcalcError("--packed with --images: the image tokens would join the samples' "
                            "lengths; give one or the other")
    w, placed = place(spec, workload(spec, seq, tgt_seq, batch, attention, scan, samples),
                      images, image_size)
    seq = w.seq  # text + image tokens: the length the text model runs

    param_parts, active_parts = model_params(spec), model_params(spec, active=True)
    total_params, active = p.total(param_parts), p.total(active_parts)
    n_all, n = non_embedding(param_parts), non_embedding(active_parts)
    mtp_p = p.total(mtp_params(spec))

    flop_parts = model_flops(spec, w, elementwise)
    forward = p.total(flop_parts)
    other = "causal" if attention == "full" else "full"
    w_other = place(spec, workload(spec, asked, tgt_seq, batch, other, scan, samples), images,
                    image_size)[0]
    by_convention = {attention: forward, other: p.total(model_flops(spec, w_other, elementwise))}
    families = p.families(flop_parts)
    weights, attn = families.get(p.WEIGHTS, 0), families.get(p.ATTENTION, 0)
    elementwise_flops = families.get(p.ELEMENTWISE, 0)

    if tokens is None:
        tokens, tokens_source = default_tokens(spec, total_params)
    else:
        tokens_source = "--tokens"
    out_tokens = output_tokens(spec, w)
    cost = training_cost(forward, attn, n, out_tokens, tokens,
                         mtp_forward=p.total(mtp_flops(spec, w)))

    x = crossover(spec, attention)
    layer_w, layer_a = layers_weights_attention(spec, w)
    warnings = context_warning(loaded.name, "--seq", seq,
                               spec.encoder_max_seq_len or spec.max_seq_len)
    if spec.is_encoder_decoder:
        warnings += context_warning(loaded.name, "--tgt-seq", w.tgt_seq, spec.max_seq_len)

    return ModelReport(
        schema_version=SCHEMA_VERSION, command="model",
        model=model_info(loaded),
        settings=Settings(seq=seq, tgt_seq=w.tgt_seq if spec.is_encoder_decoder else None,
                          batch=batch, tokens=tokens, tokens_source=tokens_source,
                          attention=attention, scan=scan, elementwise=elementwise,
                          context=spec.max_seq_len, images=placed,
                          packed=list(samples)),
        conventions=conventions(spec, attention, elementwise, n, scan)
        + image_lines(spec, placed) + ([packed_line(samples)] if samples else []),
        layers=_layer_groups(loaded, w, elementwise),
        params=Params(total=total_params, active=active,
                      active_without_embedding=active - sum(x.value for x in active_parts
                                                            if x.lookup),
                      embedding=total_params - n_all,
                      non_embedding=n_all, active_non_embedding=n,
                      non_embedding_share_pct=pct(n_all, total_params), mtp=mtp_p,
                      components={x.name: x.value for x in param_parts},
                      rows=rows(param_parts, total_params),
                      groups=_groups(param_parts, total_params)),
        flops=Flops(forward=forward, weights=weights, attention=attn,
                    elementwise=elementwise_flops, weights_share_pct=pct(weights, forward),
                    attention_share_pct=pct(attn, forward),
                    elementwise_share_pct=pct(elementwise_flops, forward),
                    forward_per_token=exact_number(cost.forward_per_token),
                    families=families,
                    family_shares_pct={k: pct(v, forward) for k, v in families.items()},
                    components={x.name: x.value for x in flop_parts},
                    rows=rows(flop_parts, forward), forward_full=by_convention["full"],
                    forward_causal=by_convention["causal"]),
        training=Training(
            tokens=tokens, tokens_source=tokens_source, n=n,
            n_is="active_non_embedding" if spec.is_moe else "non_embedding",
            forward_per_token=exact_number(cost.forward_per_token), six_nd=cost.six_nd,
            attention_correction=cost.attention_correction,
            six_nd_plus_attention=cost.six_nd_plus_attention, mtp=cost.mtp, exact=cost.exact,
            six_nd_below_exact_pct=pct(cost.exact - cost.six_nd, cost.exact),
            rounded=cost.rounded,
            conventions_line=model_line(spec, seq, as_argument(loaded), attention, tgt_seq,
                                         scan)),
        crossover=Crossover(
            seq=x.seq, exact=None if x.exact is None else str(x.exact),
            d_model_multiple=None if x.value is None else x.value / spec.d_model,
            attention=attention, attention_share_pct=pct(attn, forward),
            layer_attention_share_pct=pct(layer_a, layer_w + layer_a), note=x.reason),
        warnings=warnings,
    )
