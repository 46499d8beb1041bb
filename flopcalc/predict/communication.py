"""Communication of one training step, per parallel axis: the collectives each device takes
part in and the bytes it sends, in NCCL's convention (a collective over an S-byte buffer on n
ranks sends factor(n)·S per rank: 2(n−1)/n for all-reduce, (n−1)/n for reduce-scatter,
all-gather and all-to-all; `predict.collectives`). Exact counts (Fractions, rounded up to whole
bytes at the end); no efficiency enters here.

Notation: b micro-batch (sequences), s sequence length, c context-parallel size, T = b·s/c
tokens per device per micro-batch, d d_model, t/p/e/n tensor-, pipeline-, expert- and
data-parallel sizes, v virtual stages per device, m micro-batches per pipeline per step, Ψ the
parameters one device holds (its stage, split by t and e), β 2 bytes per 16-bit element.

- **Tensor parallelism** (Shoeybi et al. 2019 §3; Narayanan et al. 2021 §3.3: "tensors of total
  size bsh need to be all-reduced among t model replicas twice each in the forward and backward
  pass for each layer"): per sublayer whose weights are split (attention, MLP, experts, a
  Mamba mixer), one all-reduce of T·d·β forward and one backward; with sequence parallelism
  (Korthikanti et al. 2022 §4.2.2) an all-gather and a reduce-scatter forward and, as
  Megatron-LM does, an all-gather, a reduce-scatter and the all-gather of the input again for
  the weight gradient backward (same bytes: an all-reduce is a reduce-scatter and an
  all-gather). Full recomputation repeats the forward's.
- **Context parallelism** (Megatron-Core's ring attention, after Liu et al. 2023): per layer
  with keys and values, c − 1 ring steps forward, each passing this device's K and V
  (T·(K+V values per token)·β/t bytes) to the next; backward passes K, V and dK, dV: 2(c − 1).
- **Pipeline parallelism** (Narayanan et al. 2021 §2.2, §4.1): per micro-batch and virtual
  stage an activation of T·d·β forward and its gradient backward, sent as 1/t per tensor-
  parallel rank (the scatter/gather optimisation, or sequence parallelism's own split) and,
  without sequence parallelism, all-gathered again over the t ranks.
- **Data parallelism** (Rajbhandari et al. 2020 §7): ZeRO-0 all-reduces the gradients once per
  step (2Ψ); ZeRO-1 reduce-scatters them and all-gathers the updated 16-bit weights (the same
  2Ψ); ZeRO-2 reduce-scatters every micro-batch's gradients (it keeps only its shard);
  ZeRO-3 all-gathers each layer's weights in forward and again in backward and reduce-scatters
  its gradients, every micro-batch (3Ψ). The data-parallel group is the n·c data- and
  context-parallel devices; routed experts reduce over n·c/e of them. Gradients are 2 bytes, 4
  with an fp32 gradient buffer (Megatron-Core with bf16). A tied embedding split over first and
  last stage adds one all-reduce of its V·d/t gradient between the two.
- **Expert parallelism** (Lepikhin et al. 2020, GShard; the groups as Megatron-Core lays
  them out): per MoE layer and micro-batch, a dispatch and a combine forward and the same two
  backward (two more with full recomputation), each of (T/t)·k·capacity·d·β bytes: the T/t
  tokens a device holds (MoE layers run sequence-parallel over the t ranks), each in its k
  routed copies, padded by the capacity factor. The expert group is e devices of the
  t·c·n of a stage (spaced by the expert tensor-parallel size t_e); with t_e > 1 the
  dispatched tokens are also all-gathered over the t_e ranks. The dispatcher (`alltoall`,
  `allgather`, `flex`) decides how the bytes travel (`predict.collectives.dispatch`). The
  routed experts' gradients reduce over the t·c·n/(e·t_e) devices of the expert-data-parallel
  group.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Any


from ..records import dataclass
from ..kinds.base import COLUMN, EXPERT, ROW

BETA = 2  # bytes per 16-bit element


def stage_layers(prof: Any, pp: int) -> int:
    """Layers of a pipeline stage: ⌈L/p⌉."""
    return ceil(Fraction(prof.n_layers, pp))


def stage_params(prof: Any, lay: Any, which: str) -> tuple[Fraction, Fraction]:
    """(dense, expert) parameters one device of a stage holds: its ⌈L/p⌉ layers' share of each
    kind, the embeddings on the first stage, the final norm and head on the last (both with
    one stage); split tensors over t, replicated ones whole, routed experts over t·e."""
    layers = Fraction(stage_layers(prof, lay.pp), prof.n_layers)
    t = lay.tp
    dense = sum((lp.count * (Fraction(lp.params_split, t) + lp.params_replicated)
                 for lp in prof.layers)) * layers
    expert = sum((lp.count * lp.params_expert for lp in prof.layers), 0) * layers / (
        lay.etp * lay.ep)
    for held, ends in ((prof.first_params, ("first", "only")), (prof.last_params,
                                                               ("last", "only"))):
        if which in ends:
            dense += Fraction(held[0], t) + held[1]
    return dense, Fraction(expert)


def adapter_params(prof: Any, lay: Any) -> tuple[Fraction, Fraction]:
    """(dense, expert) LoRA parameters one device of a stage holds: r·(n_in + n_out) per
    adapted matrix of its ⌈L/p⌉ layers (every projection, routed experts' each), split as
    the matrix is (t, or e·t_e for experts): what trains when the base is frozen."""
    layers = Fraction(stage_layers(prof, lay.pp), prof.n_layers)
    r = lay.lora_rank
    dense = expert = Fraction(0)
    for lp in prof.layers:
        for g in lp.gemms:
            if g.role not in (COLUMN, ROW, EXPERT):
                continue
            params = lp.count * r * (g.n_in + g.n_out) * g.copies * layers
            if g.role == EXPERT:
                expert += params / (lay.etp * lay.ep)
            else:
                dense += params / lay.tp
    return dense, expert


@dataclass(frozen=True)
class PerMicrobatch:
    """Collectives of one micro-batch on one device of a stage (counts may be fractional when
    a stage holds a share of several kinds of layer)."""

    tp_size: Fraction  # bytes of one tensor-parallel collective's buffer (T·d·β)
    tp_forward: Fraction  # collectives per micro-batch, forward
    tp_backward: Fraction
    cp_step: Fraction  # bytes this device sends per ring step
    cp_steps_forward: Fraction
    cp_steps_backward: Fraction
    ep_size: Fraction  # bytes of one dispatch buffer: the routed copies of a device's tokens
    ep_forward: Fraction
    ep_backward: Fraction
    pp_send: Fraction  # bytes of one pipeline send per device
    pp_gather: Fraction  # bytes all-gathered after it over the t ranks (0: none)
    ep_top_k: Fraction = Fraction(0)  # routed copies per token (the mean over MoE layers)
    ep_experts: int = 0  # routed experts of the stage's most common routed layer


def per_microbatch(prof, lay, layers: int) -> PerMicrobatch:  # type: ignore[no-untyped-def]
    """The collectives of one micro-batch on a stage of `layers` layers."""
    tokens = Fraction(lay.micro_batch * prof.seq, lay.cp)
    d = prof.d
    share = Fraction(layers, prof.n_layers)
    tp_subs = sum(lp.tp_sublayers * lp.count for lp in prof.layers) * share
    kv_layers = [(lp.kv_per_token, lp.count) for lp in prof.layers if lp.kv_per_token]
    moe_layers = [(lp.moe, lp.count) for lp in prof.layers if lp.moe[0]]
    full = lay.recompute == "full"
    if lay.tp > 1:
        fwd = 2 if lay.sequence_parallel else 1
        bwd = 3 if lay.sequence_parallel else 1
        tp_f, tp_b = fwd * tp_subs, (bwd + (fwd if full else 0)) * tp_subs
    else:
        tp_f = tp_b = Fraction(0)
    cp_step = steps = Fraction(0)
    if lay.cp > 1 and kv_layers:
        # bytes per step: the mean over this stage's layers with K/V
        kv_count = sum(c for _, c in kv_layers)
        per_token = Fraction(sum(kv * c for kv, c in kv_layers), kv_count)
        cp_step = tokens * per_token * BETA / lay.tp
        steps = (lay.cp - 1) * kv_count * share
    ep_size = top_k = Fraction(0)
    ep_layers = Fraction(0)
    experts = 0
    if (lay.ep > 1 or lay.etp > 1) and moe_layers:
        count = sum(c for _, c in moe_layers)
        top_k = Fraction(sum(m[1] * c for m, c in moe_layers), count)
        experts = max(moe_layers, key=lambda mc: mc[1])[0][0]
        ep_size = tokens / lay.tp * top_k * lay.capacity * d * BETA
        ep_layers = count * share
    pp_full = tokens * d * BETA
    return PerMicrobatch(
        tokens * d * BETA, tp_f, tp_b, cp_step, steps, 2 * steps, ep_size,
        2 * ep_layers, (2 + (2 if full else 0)) * ep_layers,
        pp_full / lay.tp, pp_full if lay.tp > 1 and not lay.sequence_parallel else Fraction(0),
        top_k, experts)


@dataclass
class AxisVolume:
    """One parallel axis of one step on one device."""

    bytes: int  # sent by this device per step
    collectives: str  # which, how many, over how many ranks


def volumes(prof, lay, which: str = "last") -> dict[str, AxisVolume]:  # type: ignore
    """Bytes each device of the slowest stage sends per step, per axis (tp, cp, pp, dp, ep)."""
    m, v = lay.micro_batches, lay.vp
    layers = stage_layers(prof, lay.pp)
    c = per_microbatch(prof, lay, layers)
    out: dict[str, AxisVolume] = {}
    t = lay.tp
    if t > 1:
        kind = "all-gather + reduce-scatter" if lay.sequence_parallel else "all-reduce"
        f = Fraction(t - 1, t) if lay.sequence_parallel else Fraction(2 * (t - 1), t)
        total = m * (c.tp_forward + c.tp_backward) * f * c.tp_size
        out["tp"] = AxisVolume(ceil(total), f"{kind}: {_n(c.tp_forward)} forward and "
                               f"{_n(c.tp_backward)} backward per micro-batch over {t} ranks, "
                               f"{_b(c.tp_size)} each")
    else:
        out["tp"] = AxisVolume(0, "none (tp 1)")
    if lay.cp > 1 and c.cp_step:
        total = m * (c.cp_steps_forward + c.cp_steps_backward) * c.cp_step
        out["cp"] = AxisVolume(ceil(total), f"ring send/receive of K and V: "
                               f"{_n(c.cp_steps_forward)} steps forward, "
                               f"{_n(c.cp_steps_backward)} backward per micro-batch, "
                               f"{_b(c.cp_step)} each")
    elif lay.cp > 1:  # an attention-free stack: a recurrent state's hand-off is not counted
        out["cp"] = AxisVolume(0, f"none counted over {lay.cp} ranks: no layer has K/V to "
                               f"pass round the ring")
    else:
        out["cp"] = AxisVolume(0, "none (cp 1)")
    if lay.pp > 1:
        sends = 2 * v * m
        total = sends * c.pp_send
        text = (f"point-to-point: {sends:,} sends per step (activation forward, gradient "
                f"backward, per micro-batch and virtual stage), {_b(c.pp_send)} each")
        if c.pp_gather:
            total += sends * Fraction(t - 1, t) * c.pp_gather
            text += f", then an all-gather of {_b(c.pp_gather)} over the {t} ranks"
        out["pp"] = AxisVolume(ceil(total), text)
    else:
        out["pp"] = AxisVolume(0, "none (pp 1)")
    held = stage_params(prof, lay, "only" if lay.pp == 1 else which)
    # with LoRA only the adapters' gradients and updates travel; ZeRO-3 still gathers the
    # frozen weights
    dense, expert = adapter_params(prof, lay) if lay.lora_rank else held
    g = 4 if lay.grad_fp32 else 2
    n = lay.dp * lay.cp
    total = Fraction(0)
    texts = []
    for params, ranks, what, whole in ((dense, n, "weights", held[0]),
                                       (expert, lay.expert_dp, "expert weights", held[1])):
        if ranks <= 1 or not params:
            continue
        psi = Fraction(params)
        rs, ar = Fraction(ranks - 1, ranks), Fraction(2 * (ranks - 1), ranks)
        if lay.zero == 3 and lay.lora_rank:
            total += m * (2 * rs * Fraction(whole) * BETA + rs * psi * g)
            texts.append(f"all-gather of each layer's frozen {what} forward and backward, "
                         f"reduce-scatter of its adapters' gradients, every micro-batch, over "
                         f"{ranks:,}")
        elif lay.zero == 0:
            total += ar * psi * g
            texts.append(f"all-reduce of the {what}' gradients once per step over {ranks:,}")
        elif lay.zero in (1, 2):
            reductions = m if lay.zero == 2 else 1
            total += reductions * rs * psi * g + rs * psi * BETA
            texts.append(f"reduce-scatter of the {what}' gradients "
                         f"{'every micro-batch' if lay.zero == 2 else 'once per step'} and "
                         f"all-gather of the updated {what} over {ranks:,}")
        else:
            total += m * (2 * rs * psi * BETA + rs * psi * g)
            texts.append(f"all-gather of each layer's {what} forward and backward, "
                         f"reduce-scatter of its gradients, every micro-batch, over {ranks:,}")
    if lay.pp > 1 and prof.tied:
        total += Fraction(prof.vocab * prof.d, t) * g
        texts.append("the tied embedding's gradient all-reduced between the first and last "
                     "stage")
    out["dp"] = AxisVolume(ceil(total), "; ".join(texts) or "none (dp 1)")
    if c.ep_size:  # none unless experts are split (ep > 1) and this stage holds some
        from .collectives import dispatch_bytes

        sent = dispatch_bytes(lay.dispatcher, c.ep_size, c.ep_top_k, lay.ep, lay.routing,
                              c.ep_experts)
        total = m * (c.ep_forward + c.ep_backward) * sent
        text = (f"{lay.dispatcher} dispatcher (dispatch, combine): {_n(c.ep_forward)} forward, "
                f"{_n(c.ep_backward)} backward per micro-batch over {lay.ep} ranks, "
                f"{_b(c.ep_size)} of routed tokens each")
        if lay.etp > 1:
            total += m * (c.ep_forward + c.ep_backward) * c.ep_size * (lay.etp - 1)
            text += f", all-gathered over the {lay.etp} expert tensor-parallel ranks"
        out["ep"] = AxisVolume(ceil(total), text)
    else:
        out["ep"] = AxisVolume(0, "none (ep 1)")
    return out


def _n(x: Fraction) -> str:
    return f"{int(x):,}" if x.denominator == 1 else f"{float(x):,.1f}"


def _b(x: Fraction) -> str:
    value = float(x)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"
