"""The time of one engine step under continuous batching with chunked prefill.

A step runs `B` decoding sequences (one token each, at their contexts) and prefill chunks
(tokens a+1..b of a prompt) in one forward on every device of a replica. Its time is a sum
over kernel families, each a roofline at the family's achievable efficiency:

- weight GEMMs: FLOPs (the exact `weights`-family counts of `counting.model.decode_flops`, per
  token, ÷ tp; rows padded to tiles, each GEMM slowed at its depth K on a device, `K0`)
  against the weight bytes a device reads (`predict.latency.DeviceCosts`: each
  tensor's share, and of a mixture of experts only the experts the step's tokens touch,
  `kinds.moe.reads`): max(FLOPs / (peak·matmul share), bytes / (bandwidth·memory share));
- attention: decode reads each sequence's cached keys at its context (memory-bound), prefill
  computes the causal pairs of its chunk: max(FLOPs / (peak·attention share), cache bytes /
  (bandwidth·memory share));
- collectives: tensor parallelism's all-reduces and expert parallelism's all-to-alls on the
  network preset (NCCL's alpha-beta model, `predict.collectives`); experts split inside the
  tensor-parallel group all-reduce instead (`StepModel.collectives`);
- the engine's overhead: a fixed time per step (scheduling, sampling, what CUDA graphs and
  overlap scheduling leave) and a launch gap per layer;
- a step the engine does not replay from a CUDA graph (a prefill: SGLang and TensorRT-LLM
  capture decode-only batches, vLLM steps of at most 512 tokens) runs its operators eagerly:
  the host's time to issue them (operators per layer x host time per operator,
  `eager_host_s`) overlaps the kernels' time only in part (`overlap`).

Attention FLOPs and cache bytes per decode token are affine in the context for full attention
and latent (MLA) layers: `a0 + a1·c`, exact there, and fitted through two contexts of the
workload (its prompt and its last token) for sliding windows, where they saturate. A prefill
chunk's attention is the sum of the decode terms over its positions (the causal pairs), in the
forward's form (`prefill_attention`: latent attention decompressed, as engines prefill it).
Latent-attention and MoE layers add a per-token prefill cost fitted on measured runs
(`PREFILL_TOKEN_LAYER_S`, the one fitted constant, and where it comes from).

Each time is an interval: low with every efficiency at its best and the engine's overhead at
its least, high at the worst and the most, the estimate at the typical values.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from ..records import dataclass
from ..counting.model import decode_flops
from ..engines.registry import ENGINES, ServingEngine
from ..kinds.base import EXPERT, ROW
from ..models.spec import ModelSpec
from .host import EAGER_OP_S, LAYER_OPS
from .latency import ACTIVATION_BYTES, Collective, DeviceCosts, Network, Step


# EAGER_OP_S (host time per operator) and LAYER_OPS (operators per layer forward): host.py,
# shared with the training step's launch floor
# A step that runs eagerly overlaps the host's issuing with the kernels only in part: a
# kernel shorter than its launch leaves the device waiting. Low end: full overlap
# (max(host, device)); high end: none (host + device); the estimate halfway.
OVERLAP = (1.0, 0.5, 0.0)


# What the rest of the model leaves of a DeepSeek-V3-style prefill, per prompt token and
# per layer with latent attention or a mixture of experts, fitted on the development half of
# the measured runs (tests/serving_runs.py) and attributed to no kernel: TensorRT-LLM issue
# 5929 measured DeepSeek-R1's TTFT at 1,600 and 8,192 prompt tokens on 8 H200 (fp8) and 8
# B200 (fp4); its slope, (515.8 − 164.6) / 6,592 = 53.3 µs and (394.1 − 161.0) / 6,592 =
# 35.4 µs a token, exceeds this model's (23.1 and 5.5 µs) by 30.2 and 29.9 µs alike on both
# devices, 0.49 µs per token and layer over 61 layers; ±50 % at the ends.
PREFILL_TOKEN_LAYER_S = (0.245e-6, 0.49e-6, 0.735e-6)


def fitted_layers(spec: ModelSpec) -> int:
    """Decoder layers with latent attention or a mixture of experts (`PREFILL_TOKEN_LAYER_S`
    is fitted on such layers, and applied to no other)."""
    from ..kinds.latent import LatentAttention
    from ..kinds.moe import Moe

    return sum(g.count for g in spec.groups("decoder")
               if any(isinstance(k, (LatentAttention, Moe)) for _, k in g.layer.slots()))


def layer_ops(spec: ModelSpec) -> int:
    """Operators the decoder layers of `spec` issue in one forward (`LAYER_OPS`)."""
    from ..kinds.latent import LatentAttention
    from ..kinds.attention import Attention
    from ..kinds.moe import Moe
    from ..kinds.mlp import Mlp

    total = 0
    for g in spec.groups("decoder"):
        ops = 0
        for _, kind in g.layer.slots():
            name = ("latent" if isinstance(kind, LatentAttention) else
                    "attention" if isinstance(kind, Attention) else
                    "moe" if isinstance(kind, Moe) else "mlp" if isinstance(kind, Mlp)
                    else "other")
            ops += LAYER_OPS[name]
        total += g.count * ops
    return total


@dataclass(frozen=True)
class Efficiencies:
    """Shares of the peak (FLOP/s) and of the memory bandwidth each kernel family reaches, at
    the low-time, estimate and high-time ends, from an efficiency preset
    (`presets/efficiency/*.yaml`)."""

    matmul: tuple[float, float, float]
    attention: tuple[float, float, float]
    memory: tuple[float, float, float]
    comm: tuple[float, float, float]  # multiplies the alpha-beta estimate of a collective
    source: str
    # a GEMM's rate falls with its depth K (its inner dimension on a device) as K / (K + k0):
    # 0 leaves every depth at the preset's rate
    k0: float = 0.0


# Real GEMM shapes reach 80-90 % of the best shape's rate (stas00/ml-engineering,
# compute/accelerator/benchmarks/README.md, as `reports.serve.SHAPE_FACTOR`'s 85 %).
SHAPE_FACTORS = (0.90, 0.85, 0.80)
# A GEMM's rows run in tiles: Hopper's warpgroup MMA computes m64nNk16 (NVIDIA PTX ISA,
# "wgmma.mma_async"), so M tokens cost ceil(M/64)·64 rows of compute; an expert's rows are the
# tokens routed to it, T·k / (experts touched) on average under uniform routing.
TILE_M = 64
# A GEMM's depth K sets how long its main loop runs against a fixed cost per output tile
# (filling the pipeline, the epilogue's stores): rate ∝ K / (K + K0). DeepGEMM's README
# (deepseek-ai/DeepGEMM, normal GEMMs on an H800 at M = 4,096) measures 1,358, 1,304, 1,025,
# 990 and 590 TFLOP/s at K = 16,384, 7,168, 2,048, 1,536 and 512; through the first and the
# last: 1358 / 590 = 32·(512 + K0) / (16384 + K0) → K0 = 718, which gives the middle three
# within 3 % (1,288, 1,050, 966). The matmul presets were measured at K = 8,192
# (`KREF`), so a GEMM of depth K runs at (K / (K + K0)) / (KREF / (KREF + K0)) of the preset,
# at most 1: a tensor-split expert's down projection (DeepSeek-V3's 2,048 / 8 = 256) at
# 0.29, latent attention's up-projections from a 512-wide latent at 0.45.
K0 = 718.0
KREF = 8192
# NCCL's alpha-beta model is fitted to nccl-tests' large-message bus bandwidth and per-step
# latency; engines run small all-reduces with one-shot custom kernels (vLLM's
# custom_all_reduce, TensorRT-LLM's allreduce plugins), faster than a ring at a few kB, and
# collectives inside a step contend with compute: 0.7x to 1.5x the model's time.
COMM_FACTORS = (0.7, 1.0, 1.5)


def efficiencies(spec, dtype: str, name: str) -> Efficiencies:
    """The efficiency preset `spec` (`models.networks.EfficiencySpec`) at the ends a step is
    timed at: matmul share x shape factor, attention forward best/typical/worst, memory
    best/typical/worst."""
    share = spec.matmul_share(dtype)
    if share is None:
        share = spec.matmul_share("bf16") or 0.75
    mm = tuple(share * f for f in SHAPE_FACTORS)
    att = tuple(spec.attention_forward.at(e) for e in ("best", "typical", "worst"))
    mem = tuple(spec.memory.at(e) for e in ("best", "typical", "worst"))
    return Efficiencies(mm, att, mem, COMM_FACTORS,  # type: ignore[arg-type]
                        f"efficiency/{name}: matmul {share:g} x shape 0.9/0.85/0.8 x depth "
                        f"K/(K+{K0:g}) relative to K = {KREF:,}, attention forward "
                        "best/typical/worst, memory best/typical/worst", K0)


def depth_factor(k: float, k0: float) -> float:
    """A GEMM of depth k's rate relative to the preset's (measured at depth KREF), at most 1."""
    if not k0 or k <= 0:
        return 1.0
    return min(1.0, (k / (k + k0)) / (KREF / (KREF + k0)))


@dataclass(frozen=True)
class Chunk:
    """A prefill chunk: prompt tokens start+1..end of one sequence; `last` when it ends the
    prompt (the LM head runs on its last token)."""

    start: int
    end: int
    last: bool


class StepModel:
    """Times engine steps of one replica: `costs` its per-device bytes and collectives, `peak`
    and `bandwidth` one device's, `net` the links between its devices."""

    def __init__(self, spec: ModelSpec, costs: DeviceCosts, peak: float, bandwidth: float,
                 net: Network, eff: Efficiencies, engine: ServingEngine,
                 contexts: tuple[int, int], attention_peak: Optional[float] = None):
        self.spec, self.costs, self.net = spec, costs, net
        self.peak, self.bandwidth = float(peak), float(bandwidth)
        self.attention_peak = float(attention_peak or peak)
        self.eff, self.engine = eff, engine
        tp = costs.layout.tp
        self.tp = tp
        self.layers = spec.n_layers("decoder")
        self.ops = layer_ops(spec)
        # the largest step with prefill tokens a CUDA graph replays (`capture_limit`)
        self.graph_tokens = engine.graph_prefill_tokens
        self.fitted_layers = fitted_layers(spec)
        lo, hi = contexts
        hi = max(hi, lo + 1)
        w_lo, x_lo, h_lo, a_lo = self._split(lo)
        _, _, _, a_hi = self._split(hi)
        self.weight_flops_token = (w_lo + x_lo) / tp  # per token on a device, LM head apart
        self.expert_flops_token = x_lo / tp  # the routed experts' share of it
        # the GEMMs' FLOPs weighted by 1 / their depth's rate (`depth_factor`): how much
        # longer than at the preset's rate the dense and the expert GEMMs take
        self.dense_depth, self.expert_depth = self._depths(lo)
        self.head_flops_token = h_lo / tp
        # attention FLOPs of one decode token at context c: a0 + a1·c (÷ tp: heads split)
        self.a1 = (a_hi - a_lo) / (hi - lo) / tp
        self.a0 = a_lo / tp - self.a1 * lo
        # prefill attends in the form the forward counts (latent attention decompresses keys
        # and values per head: 2·h·(d_nope + d_rope + d_v) a pair, where a decode step's
        # absorbed form pays 2·h·(2·r_kv + d_rope)), as vLLM's MLA backends (attention/
        # backends/mla/common.py: "compute-friendly" prefill, "data-movement friendly"
        # decode), SGLang's forward_normal and TensorRT-LLM's context phase run it: the
        # causal forward's attention FLOPs over the decode steps' at the workload's prompt
        self.prefill_attention = self._prefill_ratio(max(lo - 1, 1))
        k_lo, k_hi = float(costs.kv_read_bytes(lo, lo)), float(costs.kv_read_bytes(hi, hi))
        self.k1 = (k_hi - k_lo) / (hi - lo)
        self.k0 = k_lo - self.k1 * lo
        self.token_bytes = float(costs.token_bytes)
        self.state_bytes = float(costs.state_bytes)
        self._weights: dict[int, float] = {}
        self._padded: dict[int, float] = {}
        self.spec_k, self.spec_expect = 0, 1.0
        self.draft: Optional[StepModel] = None
        self.head_bytes = 0.0
        self._comm: dict[int, tuple[float, float, float]] = {}

    def _split(self, c: int) -> tuple[float, float, float, float]:
        """(dense weight-GEMM FLOPs, routed-expert FLOPs, LM-head FLOPs, attention and other
        FLOPs) of one decode token at context c, the whole model."""
        w = x = h = a = 0
        for part in decode_flops(self.spec, c, c, 1):
            if part.head:
                h += part.value
            elif part.family == "weights" and part.role == EXPERT:
                x += part.value
            elif part.family == "weights":
                w += part.value
            else:
                a += part.value
        return float(w), float(x), float(h), float(a)

    def _prefill_ratio(self, prompt: int) -> float:
        from ..counting.model import model_flops, workload
        from ..kinds.base import ATTENTION

        fwd = sum(p.value for p in model_flops(self.spec, workload(self.spec, prompt,
                                                                   attention="causal"))
                  if p.family == ATTENTION)
        dec = sum(p.value for p in decode_flops(self.spec, 1, prompt, 1) if p.family == ATTENTION)
        return fwd / dec if dec and fwd else 1.0

    def prefill_attn(self, start: int, end: float) -> float:
        """Attention FLOPs on a device of prompt tokens start+1..end: the decode form's
        Σ_{p=start+1..end} (a0 + a1·p), the causal pairs, in the prefill's form."""
        n = end - start
        return self.prefill_attention * (
            n * self.a0 + self.a1 * (end * (end + 1) - start * (start + 1)) / 2)

    def _depths(self, c: int) -> tuple[float, float]:
        """(dense, expert) GEMM time at their depths relative to the preset's rate: Σ FLOPs /
        depth_factor(K) over Σ FLOPs, K each weight's input width on a device (a row-split
        weight's n_in / tp; a tensor-split expert's projection back to the model width,
        n_in / tp; with expert parallelism experts are whole)."""
        sums = {False: [0.0, 0.0], True: [0.0, 0.0]}
        tp, ep = self.costs.layout.tp, self.costs.layout.ep
        for part in decode_flops(self.spec, c, c, 1):
            if part.family != "weights" or part.head or len(part.weight_shape) < 2:
                continue
            n_in, n_out = part.weight_shape[-2], part.weight_shape[-1]
            expert = part.role == EXPERT
            split = (part.role == ROW or (expert and ep == 1 and n_out == self.spec.d_model))
            k = n_in / tp if split else n_in
            s = sums[expert]
            s[0] += part.value
            s[1] += part.value / depth_factor(k, self.eff.k0)
        return tuple(s[1] / s[0] if s[0] else 1.0 for s in (sums[False], sums[True]))

    def padded_flops(self, tokens: int) -> float:
        """GEMM FLOPs of a step of `tokens` tokens with rows padded to whole tiles (LM head
        apart): dense rows ceil(T/64)·64, each touched expert's ceil(T·k/e/64)·64."""
        if tokens not in self._padded:
            dense = self.weight_flops_token - self.expert_flops_token
            total = dense * _ceil_to(tokens, TILE_M) * self.dense_depth
            if self.expert_flops_token and self.costs.moe:
                r = self.costs.moe[0][1].reads(self.spec.d_model, tokens)
                touched = max(float(r.expected), 1.0)
                rows = tokens * r.top_k / touched
                total += self.expert_flops_token * tokens * _ceil_to(rows, TILE_M) / rows \
                    * self.expert_depth
            self._padded[tokens] = total
        return self._padded[tokens]

    def weight_bytes(self, tokens: int) -> float:
        if tokens not in self._weights:
            self._weights[tokens] = float(self.costs.weight_bytes(tokens))
        return self._weights[tokens]

    def collectives(self, tokens: int) -> tuple[Collective, ...]:
        """The step's collectives. Expert parallelism inside the tensor-parallel group
        (ep ≤ tp, no attention data parallelism) holds every token on every rank already:
        each rank runs its own experts over all of them and the MoE output is all-reduced
        as a tensor-parallel MLP's (SGLang's DeepseekV2MoE.forward_normal and vLLM's
        FusedMoE reduce_results; TensorRT-LLM without enable_attention_dp), not dispatched
        and combined by all-to-alls, which only ranks holding different tokens need."""
        comms = self.costs.comm(tokens)
        t = self.costs.layout
        if t.ep <= 1 or t.ep > t.tp:
            return comms
        moe = sum(n for n, _, _ in self.costs.moe)
        size = tokens * self.spec.d_model * ACTIVATION_BYTES
        return tuple(c for c in comms if c.kind != "alltoall") + (
            Collective("allreduce", size, t.tp, moe),)

    def comm_s(self, tokens: int) -> tuple[float, float, float]:
        if tokens not in self._comm:
            step = Step(Fraction(0), Fraction(0), self.collectives(tokens))
            t = float(step.comm_s(self.net, True))
            self._comm[tokens] = tuple(t * f for f in self.eff.comm)  # type: ignore[assignment]
        return self._comm[tokens]

    def prefill(self, chunks: tuple[Chunk, ...]) -> tuple[int, int, float, float]:
        """(tokens, LM heads, attention FLOPs, cache bytes) of prefill chunks on one device."""
        tokens = heads = 0
        attn = kv = 0.0
        for c in chunks:
            n = c.end - c.start
            tokens += n
            heads += c.last
            attn += self.prefill_attn(c.start, c.end)  # the chunk's causal pairs
            # the cache before the chunk read once, the chunk's written, states read and written
            kv += (self.k0 + self.k1 * c.start if c.start else 0.0) + n * self.token_bytes
            kv += 2 * self.state_bytes
        return tokens, heads, attn, kv

    def work(self, batch: float, context_sum: float, pre_tokens: float = 0, pre_heads: float = 0,
             pre_attn: float = 0.0, pre_kv: float = 0.0) -> tuple[float, float, float, float, int]:
        """(GEMM FLOPs, GEMM bytes, attention FLOPs, cache bytes, tokens) of a step on one
        device: `batch` decode tokens whose contexts sum to `context_sum`, and prefill work
        (`prefill`). Fractional batches are a steady state's averages."""
        q = 1 + self.spec_k  # tokens a decoding sequence feeds: k drafts verified + 1
        tokens = batch * q + pre_tokens
        whole = int(round(tokens))
        gemm_flops = (self.padded_flops(whole) * (tokens / whole if whole else 0)
                      + (batch * q + pre_heads) * self.head_flops_token)
        attn = q * (batch * self.a0 + self.a1 * context_sum) + pre_attn
        # each decode reads its context once (for all q queries), writes its q tokens, reads
        # and writes its states
        kv = batch * self.k0 + self.k1 * context_sum + q * batch * self.token_bytes \
            + 2 * batch * self.state_bytes + pre_kv
        return gemm_flops, self.weight_bytes(whole), attn, kv, whole

    def eager(self, tokens: int, pre_tokens: float) -> bool:
        """Whether a step of `tokens` tokens, `pre_tokens` of them prefill, runs without a
        CUDA graph."""
        return pre_tokens > 0 and tokens > self.graph_tokens

    def capture_limit(self, max_num_seqs: int, max_num_batched_tokens: int) -> None:
        """vLLM's capture sizes follow its scheduler: min(2 x max_num_seqs x (1 + k), 512,
        max_num_batched_tokens) (vllm/config/vllm.py, _set_cudagraph_sizes); engines that
        capture decode-only batches keep 0."""
        if self.engine.graph_prefill_tokens:
            self.graph_tokens = min(2 * max_num_seqs * (1 + self.spec_k),
                                    self.engine.graph_prefill_tokens, max_num_batched_tokens)

    def time(self, batch: float, context_sum: float, chunks: tuple[Chunk, ...] = (),
             pre: Optional[tuple[float, float, float, float]] = None,
             eager_share: Optional[float] = None) -> tuple[float, float, float]:
        """Seconds of the step (low, estimate, high): `chunks`, or `pre`, prefill's
        (tokens, heads, attention FLOPs, cache bytes). `eager_share`: the share of steps
        that run eagerly, for a steady state's mean step (else whether this one does)."""
        pre = pre or self.prefill(chunks)
        gf, gb, af, kv, tokens = self.work(batch, context_sum, *pre)
        if tokens == 0:
            return (0.0, 0.0, 0.0)
        comm = self.comm_s(tokens)
        share = float(self.eager(tokens, pre[0])) if eager_share is None else eager_share
        out = []
        for i in range(3):
            gemm = max(gf / (self.peak * self.eff.matmul[i]),
                       gb / (self.bandwidth * self.eff.memory[i]))
            attn = max(af / (self.attention_peak * self.eff.attention[i]),
                       kv / (self.bandwidth * self.eff.memory[i]))
            device = gemm + attn + comm[i]
            graphed = device + self.layers * self.engine.layer_s[i]
            # eagerly: the host issues every operator; what the kernels do not hide adds up
            host = self.ops * EAGER_OP_S[i]
            eager = max(host, device) + (1 - OVERLAP[i]) * min(host, device)
            fitted = pre[0] * self.fitted_layers * PREFILL_TOKEN_LAYER_S[i]
            out.append(self.engine.step_s[i] + share * eager + (1 - share) * graphed + fitted)
        if self.spec_k and batch:
            d = self.draft_time(batch, context_sum)
            out = [t + self.spec_k * d[i] for i, t in enumerate(out)]
        return out[0], out[1], out[2]

    def speculate(self, k: int, expected: float, draft: Optional["StepModel"] = None,
                  head_bytes: float = 0.0) -> None:
        """Speculative decoding under batching: each decode step verifies k draft tokens per
        sequence (the target over k + 1 tokens, its cache read once) after k draft steps and
        yields `expected` tokens ((1 − a^(k+1)) / (1 − a), Leviathan et al. 2023). A draft
        model is timed as its own decode step (`draft`); the model's own MTP module as one
        decoder layer of the target's decode step plus its LM head (`head_bytes` on a
        device)."""
        self.spec_k, self.spec_expect = k, expected
        self.draft, self.head_bytes = draft, head_bytes

    def draft_time(self, batch: float, context_sum: float) -> tuple[float, float, float]:
        """One draft step for `batch` sequences (low, estimate, high), without the per-step
        host overhead (paid once per engine step)."""
        if self.draft is not None:
            t = self.draft.time(batch, context_sum)
            return tuple(t[i] - self.draft.engine.step_s[i] for i in range(3))  # type: ignore
        k, self.spec_k = self.spec_k, 0
        try:
            plain = self.time(batch, context_sum)
        finally:
            self.spec_k = k
        out = []
        for i in range(3):
            body = plain[i] - self.engine.step_s[i] - self.layers * self.engine.layer_s[i]
            head = max(batch * self.head_flops_token / (self.peak * self.eff.matmul[i]),
                       self.head_bytes / (self.bandwidth * self.eff.memory[i]))
            out.append(body / self.layers + head + self.engine.layer_s[i])
        return out[0], out[1], out[2]

    def binds(self, batch: float, context_sum: float, chunks: tuple[Chunk, ...] = ()) -> str:
        """What the GEMMs wait for at the estimate: compute or memory."""
        gf, gb, _, _, _ = self.work(batch, context_sum, *self.prefill(chunks))
        return "compute" if gf / (self.peak * self.eff.matmul[1]) >= \
            gb / (self.bandwidth * self.eff.memory[1]) else "memory"


def _ceil_to(x: float, tile: int) -> float:
    return -(-x // tile) * tile if x > 0 else 0.0
