"""The time of one training step on a parallel layout: compute from the exact FLOPs, the
pipeline bubble, recomputation and the communication of every parallel axis, as an interval and
an estimate.

Compute, per micro-batch and device (`StageCost`):
- **Weight matmuls**: each forward matmul of each layer, with its shape from its weight's
  (n_in × n_out) and the tokens its exact FLOPs imply (M = FLOPs / 2·n_in·n_out), split by its
  tensor-parallel role (column: n_out/t, row: n_in/t; routed experts: E/e local experts, each
  over e·T·k/E tokens, at the grouped kernel's share of the dense rate for that many tokens:
  `GROUPED_M`, DeepGEMM's measurements). Backward: the input gradient (M×N)·(N×K) and the
  weight gradient (K×M)·(M×N), each as many FLOPs as the forward. A matmul takes
      max(FLOPs / (peak · MAMF share · shape factor · wave), bytes / (HBM · memory share))
  with wave = tiles / (⌈tiles / SMs⌉ · SMs) for 128×256 output tiles (NVIDIA, "Matrix
  Multiplication Background User's Guide": wave quantisation) and bytes = the operands read
  once and the output written once. MAMF share: the accelerator's efficiency preset; shape
  factor 0.85 (0.90 at the interval's low end, 0.80 at its high end): stas00/ml-engineering
  compute/accelerator/benchmarks/README.md says a sweep of transformer-like shapes "should
  give around 80-90% of the maximum achievable result". A synchronous step runs at its
  slowest device: × 0.975 (1 low, 0.95 high), the "5%+ MAMF spread between GPUs" of one node
  that the same source measured (compute/accelerator/README.md, "Not all accelerators are
  created equal"). A matmul whose shape is unknown runs at the same rate without the wave and
  memory terms.
- **Attention**: with `flash`, the score and value matmuls under the causal convention (a flash
  kernel skips the blocks a causal or window mask removes), forward at the kernel's share of
  peak and backward 2.5 × the forward FLOPs (it recomputes QKᵀ: the FlashAttention benchmarks'
  convention) at its backward share. Without `flash`, the eager path: QKᵀ and AV as batched
  matmuls over every pair (the full convention), backward 2 × forward. A learnable softmax
  (attention sinks) has no flash kernel in Transformer Engine: the interval spans the flash
  rate (low) to the eager path with its scores' memory traffic (high), the estimate half-way
  (`SINK_EAGER_SHARE`). State-space and linear
  attention scans (`scan` FLOPs) run at the attention kernel's shares.
- **Memory-bound kernels** (norms, activations, softmax, dropout, residual adds), from the
  bytes A the layer keeps for backward (`counting.memory`'s activations, without
  recomputation): forward traffic 1.5·A, backward 1.5 × the forward's, at the element-wise
  kernels' rate: a copy's (the efficiency file's best memory share) times Transformer
  Engine's measured share of it (`ELEMENTWISE`: 1, 0.752, 0.741 at low, estimate, high; the
  casts and the optimizer stream at the file's memory share). Worked by hand for a GPT
  block with dropout (A = 34·s·b·h + 5·a·s²·b, Korthikanti et al. 2022): the residual adds
  read two tensors and write one (6sbh each with the bias-dropout-add's 1-byte mask: 7sbh),
  each LayerNorm reads and writes 2sbh (4sbh), the GELU reads and writes 8sbh (16sbh),
  softmax reads and writes 2 bytes per score and dropout reads 2, writes 2 and a 1-byte mask
  (9 per score): 44·sbh + 9·as²b forward against 1.5·A = 51·sbh + 7.5·as²b; backward each
  reads its saved input and the output gradient and writes the input gradient (3 tensors for
  2: 1.5 ×). These are fused kernels' bytes; eager PyTorch (`compiled` False, `--no-compile`)
  adds what its unfused RMSNorm, SiLU·gate and rotary move beyond them (`EAGER_BYTES`, counted
  by hand from torchtitan's and PyTorch's code: 40, 10 and 20 bytes per element against 4, 6
  and 4), 1.5 × that backward.
- **Routed tokens**: the unpermutation after the experts reads the k copies of each token and
  writes it, 2·(k + 1)·d bytes forward and 2·(2k + 1)·d backward (Megatron-Core's `unpermute`).
- **Head**: the LM head's matmul (vocabulary split by t) and fp32 cross-entropy, 22 bytes per
  logit forward (cast, max, exp-sum, log, gather) and 33 backward.
- **Recomputation**: `full` runs each layer's forward again in backward (not the head);
  `selective` the attention core; `op` (torchtitan's per-op selective checkpointing,
  `counting.recompute`) every second weight matmul of each layer in forward order, the routed
  experts' GEMMs and the router (`op_reruns`), and the layer's whole forward memory-bound
  traffic (norms, rotary, activations, residual adds, casts, the unpermutation: no op outside
  the save list is kept), not the attention core (SDPA is saved). For a Llama block: wk, wo
  and w3, 36.5% of Llama 3.1 8B's layer matmul FLOPs ((1024 + 4096 + 14336)/(2·4096 + 2·1024
  + 3·14336) = 19456/53248).
- **Optimizer** (Adam, mixed precision): 36 bytes per locally updated parameter (read fp32
  master, m, v, gradient; write them and the 16-bit copy) and 8 per local gradient (norm and
  zeroing), memory-bound.

- **Host launches**: outside a CUDA graph (`cuda_graph`) a micro-batch's forward and
  backward each take at least the time the host needs to issue their operators (`host_time`:
  engine_step's per-slot operator counts, one GEMM per local expert and linear as Transformer
  Engine's GroupedLinear issues them, each at host.py's EAGER_OP_S): the device idles the
  difference (`exposed["host"]`). Small routed layers at micro-batch 1 are host-bound.
  Each routed layer's forward synchronises the host with the device (the dispatcher's split
  sizes copied to the host before the all-to-all), so the host starts each one with no lead:
  the estimate keeps the max layer by layer; the high end runs the routed layers' forward
  issuing in series with the device (`synced_host`, HOST_SYNC_SERIAL).

Communication: `predict.communication` (bytes per axis) and `predict.collectives` (time).

Schedule: step = (m + (p−1)/v) · (t_f + t_b) + exposed communication + optimizer, with m
micro-batches per pipeline, p stages and v virtual stages per device: the bubble is (p−1)/m of
the ideal time for 1F1B and (p−1)/(v·m) interleaved (Narayanan et al. 2021 §2.2). t_f and t_b
are the slowest stage's, with the exposed tensor-, context-, expert-parallel and ZeRO-3 time of
each micro-batch inside them.

The interval: `low` takes the best published efficiencies and hides every communication that
a mechanism of the layout can hide (the gradient reduction and ZeRO gathers behind compute,
the ring's K/V steps, tensor parallelism with --tp-overlap, the expert all-to-all with
--moe-overlap or DualPipe, interleaved pipelines' steady-state sends); what nothing can hide
stays exposed there as in the estimate, at the network's achievable bandwidth (tensor-parallel
collectives without --tp-overlap, the expert dispatch without an overlapping schedule, 1F1B's
blocking sends, the tied-embedding all-reduce); `high` hides none and takes the worst;
`estimate` takes the typical efficiencies and this overlap model (attention with sinks: the
flash rate at `low`, the unfused path at `high`, half-way in the estimate, `SINK_EAGER_SHARE`)
(Megatron-LM's and PyTorch FSDP's, from their code):
- tensor parallelism: exposed; with `tp_overlap` (Megatron's --tp-comm-overlap) each collective
  hides behind ¼ of the layer's forward matmul time (½ in backward);
- context parallelism: each ring step hides behind one block of attention;
- expert parallelism: exposed; with --moe-overlap (or DualPipe) hidden behind another
  micro-batch's compute, which meanwhile lacks the 20 SMs the dispatch kernels hold;
- pipeline sends: exposed, 2·(v·m + p − 1) of them; with interleaving (v > 1, Megatron-Core's
  overlap_p2p_comm) only the 2·(p − 1) of the fill and drain;
- data parallelism, ZeRO 0-1: the gradient reduction overlaps the last micro-batch's backward
  (the others run without syncing), the ZeRO-1 parameter gather the first micro-batch's forward;
  one bucket of each (max(40M, 1M·dp) elements, Megatron-Core's default) stays exposed;
  ZeRO-2 reduce-scatters every micro-batch's gradients under its backward; ZeRO-3 gathers each
  layer's weights while the previous layer computes (prefetch), in forward and again in
  backward, and reduce-scatters its gradients under the next layer's backward;
- the tied-embedding gradient all-reduce between the first and last stage: exposed.
"""

from __future__ import annotations

import math
from dataclasses import field, fields
from fractions import Fraction
from functools import lru_cache
from operator import attrgetter
from typing import Optional

from ..records import dataclass
from ..counting.recompute import OP, by_module, modules_of, op_reruns, reruns
from ..kinds.base import (ATTENTION, COLUMN, EXPERT, REPLICATED, ROW, SCAN, VOCAB, WEIGHTS,
                          Part)

ADAPTED = (COLUMN, ROW, EXPERT)  # the projections LoRA adapts (PEFT's all-linear)
from ..models.spec import ModelSpec
from .collectives import Net, collective, dispatch, p2p
from .communication import adapter_params, per_microbatch, stage_layers, stage_params
from .host import EAGER_OP_S, LAYER_OPS
from ..counting.layers import layer_activations, layer_flops, layer_params
from ..counting.model import model_params
from ..counting.workload import Workload

ENDS = ("low", "estimate", "high")
EFFICIENCY_END = {"low": "best", "estimate": "typical", "high": "worst"}
SHAPE_FACTOR = {"low": 0.90, "estimate": 0.85, "high": 0.80}
# A synchronous step runs at its slowest device: "5%+ MAMF spread between GPUs" of one node
# even when all pass the same binning (stas00/ml-engineering compute/accelerator/README.md,
# "Not all accelerators are created equal" / "Silicon lottery", commit 744d01e). The MAMF of
# the efficiency files is one device's: the slowest runs 0-5% below it.
SLOWEST_DEVICE = {"low": 1.0, "estimate": 0.975, "high": 0.95}
TILE_M, TILE_N = 128, 256
FLASH_BACKWARD = 2.5  # a flash kernel's backward executes 2.5 × its forward FLOPs
CE_FORWARD, CE_BACKWARD = 22, 33  # bytes per fp32 logit of the cross-entropy
OPT_UPDATED, OPT_PER_GRAD = 36, 8  # bytes per updated parameter, per local gradient
BUCKET_MIN, BUCKET_PER_DP = 40_000_000, 1_000_000  # Megatron-Core DDP bucket, elements
ACT_BYTES = 2  # 16-bit activations on the wire
# Memory-bound traffic per byte the layer keeps for backward (see the module docstring)
MEM_FORWARD = 1.5
MEM_BACKWARD = 1.5  # × the forward's
# fp8 recipes: bytes moved per element to quantise a matmul's (input, output gradient, weight),
# unfused, from torchao's float8 roofline (pytorch/ao torchao/testing/training/roofline_utils.py
# at 36027d82d, get_tensor_memory_traffic_ovhd_s): tensorwise reads an operand for its amax (2)
# and casts it both ways (2 + 2·1), a weight once per direction (2 + 2·(2 + 1)); rowwise also
# transposes in 16 bits before its column-wise cast ((2 + 1 + 2) + (2 + 1); a weight
# (2 + 1) + 2·2 + (2 + 1)); MXFP8 casts each way with its block scales ((2 + 1) twice).
# Transformer Engine's delayed scaling takes the scale from its amax history: tensorwise
# without the amax read. Blockwise (DeepSeek-V3's 1×128 and 128×128 tiles) casts each way, as
# MXFP8.
# Grouped expert GEMMs run below a dense GEMM's rate when each expert gets few tokens: DeepGEMM's
# README (deepseek-ai/DeepGEMM, its first release of February 2025: H800, FP8, "Grouped GEMMs for MoE
# models") measured masked-layout groups of M = 256 / 512 / 1,024 tokens at 932 / 1,040 / 1,233
# TFLOP/s for N×K = 4,096×7,168 against 1,304 for the dense GEMM at M = 4,096 (1,297 grouped
# at 8,192), and 815 / 916 / 925 for 7,168×2,048 against 1,099 grouped at M = 4,096-8,192: the
# means of the two shapes' ratios, (M, share of the large-M rate). Between the points linear in
# log₂ M, 1 from 4,096 up; below 256 the 256-512 slope continues (an extrapolation, no figure)
# down to GROUPED_FLOOR.
GROUPED_M = ((256, 0.728), (512, 0.816), (1024, 0.894), (4096, 1.0))
GROUPED_FLOOR = 0.25
# An all-to-all hidden behind compute runs on SMs the compute then lacks: DeepSeek-V3's
# dispatch and combine kernels need "only 20 SMs" to fill InfiniBand and NVLink (DeepSeek-V3
# Technical Report, arXiv:2412.19437, §3.2.2, "Efficient Implementation of Cross-Node
# All-to-All Communication").
COMM_SMS = 20
# Attention with a learnable softmax (gpt-oss's sinks) has no FlashAttention path: Transformer
# Engine's backend selection (transformer_engine/pytorch/attention/dot_product_attention/
# utils.py `get_attention_backend`: "Disabling FlashAttention for softmax_type = learnable")
# leaves cuDNN's fused kernel, where the container's cuDNN supports sinks for the layout (9.13
# and later; 9.18 for packed THD inputs, TE's test_attention_with_cp skips), else
# UnfusedDotProductAttention. Which one a run took, and the fused kernel's speed with sinks,
# are published nowhere: the interval runs from the flash rate (`low`, a fused kernel as fast
# as FlashAttention) to the unfused path (`high`: QKᵀ, softmax and AV as separate kernels over
# every pair, the scores' memory traffic included), the estimate half-way (either equally
# likely). Memory stays the fused kernel's: a run that fits keeps no s² scores.
SINK_EAGER_SHARE = {"low": 0.0, "estimate": 0.5, "high": 1.0}
# Unpermutation after the experts (Megatron-Core moe_utils.py `unpermute`, lines 497-625 at
# d98e8a64: each routed copy times its probability, scatter-added back to its token; fused by
# Transformer Engine's moe_unpermute): forward reads the k copies and writes the token,
# 2·(k + 1)·d bytes per token; backward reads the token's gradient and the copies (for the
# probabilities' gradient) and writes the copies' gradient, 2·(2k + 1)·d. The permutation
# before the experts writes the copies the layer keeps (`expert_inputs`): the memory-bound
# term of the kept bytes already moves them.
# Host launches. Outside a CUDA graph every kernel is issued by the host, and a device whose
# kernels are shorter than their issuing waits for it: a micro-batch's forward (backward) takes
# at least the host time of its operators, max(host, device) at each end. A routed layer's
# token dispatch copies its split sizes to the host (Megatron-Core's MoEAlltoAllTokenDispatcher
# and DeepEP's dispatch size their buffers from them), so the host cannot run more than a layer
# ahead: the max holds layer by layer, which for identical layers is the micro-batch's.
# - Per operator: `EAGER_OP_S` of flopcalc/predict/host.py (5 / 15 / 30 µs at the low
#   end, estimate and high end: Python, the PyTorch dispatcher and the launch);
# - per layer forward: that file's `LAYER_OPS` (by slot kind, from the engines' model code),
#   the two grouped GEMMs of a routed layer counted per expert instead (below); backward
#   `BACKWARD_OPS` × the forward's (each operator's backward issues its input gradient and,
#   for a weight, its weight gradient: the 2 × FLOPs convention);
# - per local expert (E/e on each device): Megatron-Core's TEGroupedMLP runs two grouped
#   linears (fc1, gate and up fused; fc2), and Transformer Engine's GroupedLinear issues one
#   cuBLAS GEMM per expert (nvte_multi_stream_cublas_gemm loops over the GEMMs on 4 streams,
#   each call building its cuBLASLt descriptors and querying its heuristic:
#   common/gemm/cublaslt_gemm.cu): 1 forward; backward its input-gradient and weight-gradient
#   GEMMs, the per-weight placeholder gradient TE allocates for Megatron-Core's fused
#   accumulation (grouped_linear.py `handle_custom_ddp_from_mcore`) and Megatron-Core DDP's
#   hook on each parameter (each expert's weight is one): 4 (`EXPERT_BACKWARD_OPS`).
# Full recomputation issues the forward's operators again in backward. A full-iteration CUDA
# graph (`cuda_graph`, Megatron-Core's --cuda-graph-impl full_iteration) replays the step
# without them.
EXPERT_LINEARS = 2
# The host's synchronisation in each routed layer's forward. Megatron-Core's
# MoEAlltoAllTokenDispatcher copies the all-to-all's split sizes to the host and waits for
# them before the expert all-to-all (token_dispatcher.py at d98e8a64: `preprocess` sets
# cuda_sync_point "before_ep_alltoall" whenever ep or tp > 1, "before_finish" otherwise;
# `_maybe_dtoh_and_synchronize` calls d2h_event.synchronize()); the flex dispatcher's HybridEP
# backend sums tokens_per_expert on the host for the combine's buffer ("(CPU sync)", the same
# file); TEGroupedMLP's fp8 path calls tokens_per_expert.tolist() for the grouped GEMM's
# m_splits (experts.py). At each such point the device's queue runs empty and the host starts
# again with no lead: how much of the next layer's issuing the device then waits for depends
# on the order of its kernels (a long all-to-all first lets the host catch up), which no
# source measures. The estimate keeps the host's max with the device layer by layer; the
# high end takes none of a routed layer's forward issuing as hidden (the host and device in
# series, the most a synchronisation per layer can cost); the low end as the estimate. The
# backward issues from split sizes already on the host: no synchronisation there.
HOST_SYNC_SERIAL = {"low": 0.0, "estimate": 0.0, "high": 1.0}
BACKWARD_OPS = 2
EXPERT_BACKWARD_OPS = 4
# PyTorch's async tensor parallelism (torch.compile's micro-pipeline pass, as torchtitan runs it
# with enable_async_tensor_parallel) is reported as a forward-pass speed-up: "up to ~29%
# forward pass speedup and ~8% E2E speedup in Llama3 7B, up to ~20% forward ... ~8% E2E in
# Llama3 70B" (Wang et al., "[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism
# in PyTorch", PyTorch forums, 2024): an end-to-end gain of the forward's gain times the
# forward's share of a step. The estimate hides the forward's collectives as --tp-overlap
# does (and full recomputation's re-run forward's) and exposes the backward's; `low` still
# hides them all, `high` none.
FP8_RECIPES = ("tensorwise", "delayed", "rowwise", "blockwise", "mxfp8")
# NVFP4 (fp4 matmuls, Transformer Engine's NVFP4BlockScaling as Megatron-Bridge's
# bf16_with_nvfp4_mixed selects it): E2M1 values with an E4M3 scale per 16, 4.5 bits an element
# (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv:2509.25149). Its casts are
# MXFP8's each way, read 16 bits and write 4.5 (2 + 0.5625, twice: 5.125), and the random
# Hadamard transform of the weight gradient's two operands (the same paper) reads and writes them once
# more in 16 bits (+4): (9.125, 9.125, 5.125), rounded up to whole bytes.
NVFP4_BYTES = 0.5625
FP8_CAST_BYTES = {"tensorwise": (6, 6, 8), "delayed": (4, 4, 6), "rowwise": (8, 8, 10),
                  "nvfp4": (10, 10, 6),
                  "blockwise": (6, 6, 6), "mxfp8": (6, 6, 6)}


# ------------------------------------------------------------------------------- the inputs


@dataclass(frozen=True)
class Layout:
    """A parallel layout and how the step runs (the options of `step`)."""

    tp: int = 1
    pp: int = 1
    vp: int = 1  # virtual pipeline stages per device (interleaving)
    dp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 0
    recompute: str = "none"
    sequence_parallel: bool = False
    micro_batch: int = 1  # sequences per micro-batch per data-parallel rank
    global_batch: int = 1  # sequences per step, all data-parallel ranks together
    dropout: bool = False
    flash: bool = False
    grad_fp32: bool = False  # gradients reduced in fp32 (Megatron-Core with bf16)
    tp_overlap: bool = False
    async_tp: bool = False  # PyTorch's async TP: the estimate hides the forward's collectives
    capacity: Fraction = Fraction(1)  # MoE capacity factor (1: dropless, on average)
    etp: int = 1  # expert tensor parallelism (Megatron-Core's ETP): each expert split etp ways
    dispatcher: str = "alltoall"  # MoE token dispatcher: alltoall, allgather or flex (DeepEP)
    routing: str = "uniform"  # where a token's routed copies land (collectives.groups_hit)
    moe_overlap: bool = False  # the expert all-to-all hidden behind another micro-batch
    schedule: str = "1f1b"  # 1f1b (interleaved with vp > 1), zero-bubble, dualpipe, dualpipev
    fp8_recipe: str = ""  # with fp8 matmuls: how they are scaled (FP8_RECIPES)
    lora_rank: int = 0  # LoRA adapters of this rank on every projection; the base frozen
    cuda_graph: bool = False  # the whole step replayed as one CUDA graph: no host launches
    compiled: bool = True  # fused element-wise kernels; False: eager PyTorch (EAGER_BYTES)

    @property
    def expert_dp(self) -> int:
        """The expert-data-parallel size: the t·c·n ranks of a stage over e·t_e."""
        return max(1, self.tp * self.cp * self.dp // (self.ep * self.etp))

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step: global batch / (dp × micro-batch)."""
        return self.global_batch // (self.dp * self.micro_batch)

    def describe(self) -> str:
        words = [f"tp {self.tp}", f"pp {self.pp}"] + ([f"vp {self.vp}"] if self.vp > 1 else [])
        words += [f"dp {self.dp}"] + ([f"cp {self.cp}"] if self.cp > 1 else [])
        words += ([f"ep {self.ep}"] if self.ep > 1 else [])
        words += ([f"etp {self.etp}"] if self.etp > 1 else []) + [f"ZeRO-{self.zero}",
                                                                f"mb {self.micro_batch}"]
        words.append(f"recompute {self.recompute}")
        if self.sequence_parallel:
            words.append("sp")
        return ", ".join(words)


@dataclass(frozen=True)
class Machine:
    """What the step runs on, per device: peaks, bandwidth, efficiencies and the network."""

    matmul_peak: float  # the matmuls' peak (fp8 GEMMs with --dtype fp8)
    attention_peak: float  # 16-bit peak (attention kernels, scans)
    hbm: float  # bytes/s
    matmul_share: float  # MAMF / peak of the matmul dtype
    sms: int
    attention_forward: dict  # end -> share of peak
    attention_backward: dict
    memory_share: dict
    net: Net
    matmul_bytes: float = 2  # bytes per element of a matmul's inputs (NVFP4: 0.5625)
    attention_kernel: str = "flash"  # the efficiency file's name of the attention kernel
    attention_title: str = "a fused flash-attention kernel"


# ---------------------------------------------------------------------- the model's profile


@dataclass(frozen=True)
class Gemm:
    """One forward weight matmul of one layer for one sequence: `tokens` rows of (n_in ×
    n_out), with the weight's tensor-parallel role and `copies` (routed experts) of it."""

    name: str
    tokens: int
    n_in: int
    n_out: int
    role: str
    copies: int = 1
    flops: int = 0  # the part's exact forward FLOPs for one sequence


@dataclass(frozen=True)
class LayerProfile:
    """One kind of layer, for one sequence of the step's length: its matmuls, other weight
    FLOPs, attention FLOPs (full and causal), scan FLOPs, and what the communication needs."""

    count: int
    gemms: tuple[Gemm, ...]
    loose: int  # weight FLOPs of parts without a known shape
    attention_full: int
    attention_causal: int
    attention_heads: tuple[tuple[int, int, int, int], ...]  # (heads, d_qk, d_v, flops_full)
    scan: int
    tp_sublayers: int  # sublayers with tensor-parallel weights (one TP collective each way)
    kv_per_token: int  # K and V values per token the ring attention exchanges
    moe: tuple[int, int]  # (experts, top_k) of a routed feed-forward, else (0, 0)
    params_split: int  # parameters of one layer that tensor parallelism splits
    params_replicated: int  # ... that every tensor-parallel rank holds whole (norms, routers)
    params_expert: int  # parameters of one layer's routed experts (split by tp and ep)
    layer: object = field(compare=False, default=None)
    sinks: bool = False  # a learnable softmax (attention sinks): no FlashAttention path
    host_ops: int = 0  # operators one forward issues, the routed experts' GEMMs apart


@dataclass(frozen=True)
class Profile:
    spec: ModelSpec
    seq: int
    layers: tuple[LayerProfile, ...]
    n_layers: int
    head_flops: int  # LM head forward FLOPs for one sequence
    vocab: int
    d: int
    first_params: tuple[int, int]  # embeddings (first stage): (split by tp, replicated)
    last_params: tuple[int, int]  # final norm and head (last stage)
    tied: bool
    forward_full: int  # exact forward FLOPs of one sequence, full convention
    forward_causal: int


def _gemms(parts: list[Part]) -> tuple[list[Gemm], int]:
    """The weight parts of a layer as matmuls where the part gives its weight's shape
    (`Part.weight_shape`, with the weight's role): a matrix, or routed experts' stack."""
    gemms, loose = [], 0
    for p in parts:
        if p.family != WEIGHTS:
            continue
        w = p.weight_shape
        if (len(w) == 2 and p.role != EXPERT) or (len(w) == 3 and p.role == EXPERT):
            n_in, n_out = w[-2:]
            tokens, rest = divmod(p.value, 2 * n_in * n_out)
            if rest == 0 and tokens > 0:
                copies = w[0] if len(w) == 3 else 1
                gemms.append(Gemm(p.name, tokens, n_in, n_out, p.role, copies, p.value))
                continue
        loose += p.value
    return gemms, loose


def _split(params: list[Part]) -> tuple[int, int, int]:
    """(split by tensor parallelism, replicated, routed experts) parameters: each tensor's
    role, as counting.memory reads it."""
    expert = sum(p.value for p in params if p.role == EXPERT)
    whole = sum(p.value for p in params if p.role == REPLICATED)
    return sum(p.value for p in params) - expert - whole, whole, expert


@lru_cache(maxsize=64)
def profile(spec: ModelSpec, seq: int, packed: tuple[int, ...] = ()) -> Profile:
    """What the time model reads of `spec` at sequence length `seq` (one sequence), with
    `packed` samples attending within themselves (`Workload.packed`): the attention FLOPs a
    variable-length flash kernel runs."""
    d = spec.d_model
    full = Workload(seq, seq, 1, "full", packed=packed)
    causal = Workload(seq, seq, 1, "causal", packed=packed)
    layers = []
    for g in spec.groups():
        fwd = layer_flops(g.layer, d, full)
        cau = layer_flops(g.layer, d, causal)
        params = layer_params(g.layer, d)
        gemms, loose = _gemms(fwd)
        heads = []
        for name, kind in g.layer.slots():
            pub = kind.published(d)
            att = sum(p.value for p in kind.forward(d, full.span(g.stack, name))
                      if p.family == ATTENTION)
            if att and pub.heads:
                heads.append((pub.heads, pub.head_dim or 0,
                              (pub.v_width // pub.heads) if pub.v_width else 0, att))
        # sublayers whose tensor-parallel weights need the t ranks' collectives; a routed
        # feed-forward alone (no shared expert) exchanges its tokens through the dispatcher
        tp_sub = sum(1 for _, slots in g.layer.sublayers()
                     if any(q.role in (COLUMN, ROW)
                            for _, k in slots for q in k.params(d)))
        kv = sum(k.cache().per_token for k in g.layer.mixers)
        ffn = g.layer.ffn
        moe = (0, 0)
        if ffn is not None and ffn.routed:
            pub = ffn.published(d)
            moe = (pub.experts, pub.top_k)
        split, whole, expert = _split(params)
        host = _host_ops(g.layer)
        layers.append(LayerProfile(
            g.count, tuple(gemms), loose,
            sum(p.value for p in fwd if p.family == ATTENTION),
            sum(p.value for p in cau if p.family == ATTENTION),
            tuple(heads), sum(p.value for p in fwd if p.family == SCAN), tp_sub, kv, moe,
            split, whole, expert, g.layer,
            any(getattr(k, "sinks", False) for k in g.layer.mixers), host))
    from ..counting.model import head_flops, model_flops

    head = sum(p.value for p in head_flops(spec, full))
    everything = model_params(spec)
    first = _split([p for p in everything if p.stage == "first"])[:2]
    last = _split([p for p in everything if p.stage == "last"])[:2]
    return Profile(spec, seq, tuple(layers), spec.n_layers(), head, spec.vocab_size, d,
                   first, last, spec.tie_embeddings and spec.head != "none",
                   sum(p.value for p in model_flops(spec, full)),
                   sum(p.value for p in model_flops(spec, causal)))


def _host_ops(layer: object) -> int:
    """Operators one forward of `layer` issues outside its routed experts' GEMMs: the serving
    model's count per slot kind (host.LAYER_OPS), a routed feed-forward without its two
    grouped GEMMs (counted per local expert by `host_time`)."""
    from ..kinds.attention import Attention
    from ..kinds.latent import LatentAttention
    from ..kinds.mlp import Mlp
    from ..kinds.moe import Moe

    ops = 0
    for _, kind in layer.slots():  # type: ignore[attr-defined]
        name = ("latent" if isinstance(kind, LatentAttention) else
                "attention" if isinstance(kind, Attention) else
                "moe" if isinstance(kind, Moe) else "mlp" if isinstance(kind, Mlp)
                else "other")
        ops += LAYER_OPS[name] - (EXPERT_LINEARS if name == "moe" else 0)
    return ops


def host_time(prof: Profile, lay: Layout, end: str, layers: int) -> tuple[float, float]:
    """(forward, backward) seconds the host takes to issue one micro-batch of a stage of
    `layers` layers (each kind in proportion), 0 under a full-iteration CUDA graph: the
    operators of `_host_ops`, backward BACKWARD_OPS × theirs (and the forward's again under
    full recomputation and torchtitan's per-op checkpointing, which runs the block's whole
    forward function again, its saved ops answered from the cache), and per local expert of a routed layer EXPERT_LINEARS GEMMs forward
    and EXPERT_LINEARS × EXPERT_BACKWARD_OPS operators backward, each at EAGER_OP_S."""
    if lay.cuda_graph:
        return 0.0, 0.0
    fwd = bwd = 0.0
    for lp in prof.layers:
        share = lp.count * layers / prof.n_layers
        local = max(1, lp.moe[0] // lay.ep) if lp.moe[0] else 0
        f = lp.host_ops + EXPERT_LINEARS * local
        fwd += share * f
        bwd += share * (BACKWARD_OPS * lp.host_ops + EXPERT_LINEARS * EXPERT_BACKWARD_OPS * local
                        + (f if lay.recompute in ("full", OP) else 0))
    each = EAGER_OP_S[ENDS.index(end)]
    return fwd * each, bwd * each


def synced_host(prof: Profile, lay: Layout, end: str, layers: int) -> float:
    """Seconds of `host_time`'s forward that the host issues in routed layers (each kind in
    proportion to the stage's `layers`): the part a device-to-host synchronisation per routed
    layer keeps from running ahead of the device (HOST_SYNC_SERIAL); 0 under a CUDA graph."""
    if lay.cuda_graph:
        return 0.0
    fwd = 0.0
    for lp in prof.layers:
        if lp.moe[0]:
            local = max(1, lp.moe[0] // lay.ep)
            fwd += lp.count * layers / prof.n_layers * (lp.host_ops + EXPERT_LINEARS * local)
    return fwd * EAGER_OP_S[ENDS.index(end)]


# ------------------------------------------------------------------------- matmul timing


def grouped_share(tokens: float) -> float:
    """The share of a dense GEMM's rate a grouped expert GEMM reaches with `tokens` rows per
    expert (GROUPED_M: DeepGEMM's measurements)."""
    if tokens >= GROUPED_M[-1][0]:
        return 1.0
    x = math.log2(max(tokens, 1.0))
    pts = [(math.log2(m), f) for m, f in GROUPED_M]
    for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
        if x >= x0:
            if x <= x1:
                return f0 + (f1 - f0) * (x - x0) / (x1 - x0)
    (x0, f0), (x1, f1) = pts[0], pts[1]
    return max(GROUPED_FLOOR, f0 - (f1 - f0) * (x0 - x) / (x1 - x0))


def gemm_time(m: float, n: float, k: float, mc: Machine, end: str, batch: int = 1,
              share: float = 1.0) -> float:
    """One (batched) matmul (m×k)·(k×n): its roofline with wave quantisation; `share` scales
    its compute rate (grouped expert GEMMs: `grouped_share`)."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    flops = 2 * m * n * k * batch
    rate = (mc.matmul_peak * mc.matmul_share * SHAPE_FACTOR[end] * SLOWEST_DEVICE[end]
            * share)
    tiles = math.ceil(m / TILE_M) * math.ceil(n / TILE_N) * batch
    wave = tiles / (math.ceil(tiles / mc.sms) * mc.sms)
    compute = flops / (rate * wave)
    moved = batch * (mc.matmul_bytes * (m * k + k * n) + ACT_BYTES * m * n)
    return max(compute, moved / (mc.hbm * mc.memory_share[end]))


def _gemm_shapes(g: Gemm, tokens_scale: float, lay: Layout) -> tuple[float, float, float, int]:
    """(M, N, K, batch) on one device of a layer's matmul for `tokens_scale` sequences."""
    t = lay.tp
    m = g.tokens * tokens_scale
    n_in, n_out = g.n_in, g.n_out
    if g.role == COLUMN or g.role == VOCAB:
        return m, n_out / t, n_in, 1
    if g.role == ROW:
        return m, n_out, n_in / t, 1
    if g.role == EXPERT:
        # A device holds T/t of the tokens (Megatron-Core runs MoE layers sequence-parallel:
        # it requires sequence parallelism with t > 1); its expert group of e·t_e devices
        # routes them to E/e local experts, each split t_e ways over the tokens the t_e ranks
        # gather: (T/t)·t_e·e/E per expert (the copies of a token are in `m`).
        local = max(1, g.copies // lay.ep)
        per_expert = m / t * lay.etp * lay.ep / g.copies
        if n_out >= n_in:
            return per_expert, n_out / lay.etp, n_in, local
        return per_expert, n_out, n_in / lay.etp, local
    if lay.sequence_parallel:  # a router on the tokens of this sequence-parallel rank
        return m / t, n_out, n_in, 1
    return m, n_out, n_in, 1  # replicated (a router): every device computes it whole


# ------------------------------------------------------------------------- compute per stage


@dataclass
class Compute:
    """Seconds of one micro-batch on one device, by what they are spent on."""

    gemm_f: float = 0.0
    gemm_b: float = 0.0
    attn_f: float = 0.0
    attn_b: float = 0.0
    mem_f: float = 0.0
    mem_b: float = 0.0
    head_f: float = 0.0
    head_b: float = 0.0
    recompute: float = 0.0
    gemm_w: float = 0.0  # the weight-gradient matmuls of the backward (inside gemm_b, head_b)
    # Routed (MoE) layers only, for the all-to-all overlap (`_paired_a2a`): how many, and
    # their compute split where Megatron-Core's 1F1B overlap splits it: the routed experts
    # ("mlp": their grouped GEMMs, casts and the unpermutation; mlp_w its weight gradients)
    # and everything before the dispatch ("pre": norms, attention, shared experts, router).
    moe_layers: float = 0.0
    pre_f: float = 0.0
    pre_b: float = 0.0
    mlp_f: float = 0.0
    mlp_b: float = 0.0
    mlp_w: float = 0.0

    @property
    def forward(self) -> float:
        return self.gemm_f + self.attn_f + self.mem_f + self.head_f

    @property
    def backward(self) -> float:
        return self.gemm_b + self.attn_b + self.mem_b + self.head_b + self.recompute

    def add(self, other: "Compute", times: float) -> None:
        mine, theirs = self.__dict__, other.__dict__  # (a plan's search adds many)
        for k in self.__dataclass_fields__:
            mine[k] += times * theirs[k]


# Bytes an element-wise recomputation moves per byte of the tensor it frees: a norm re-reads its
# input (as large as its output) and rewrites the output, 2; the experts' gated activation
# re-reads its 2f-wide input and rewrites the f-wide output, 3 (a plain one's f-wide input: 2,
# taken as 3 too, an upper bound).
MEMORY_BOUND_TRAFFIC = {"layernorm": 2, "moe_act": 3}
# Element-wise kernels (norms, activations, residual adds, the unpermutation, the
# cross-entropy) of a training step run below a device-to-device copy, the efficiency files'
# memory share: Transformer Engine's MXFP8 quantisation kernels, measured on a B200 (the
# "B200 (us)" column of ROCm/TransformerEngine pull request 598, CAST_ONLY, bf16 8192×8192:
# 134,217,728 bytes read, 67,108,864 written per direction and 2,097,152 of scales) take
# 34.84 µs row-wise, 39.61 µs column-wise and 52.34 µs both ways at once: 5.84, 5.14 and
# 5.21 TB/s, 75.8%, 66.7% and 67.6% of the part's 7.7 TB/s, where its copy reaches 90%.
# As a share of the copy's rate: 0.842, 0.741, 0.752. `low` keeps the copy's rate (kernels
# at the speed of light exist: Guo, Zadouri and Dao, "Getting Memory-bound Kernels to
# Speed-of-Light", 2025); the estimate takes the kernel a training step runs for its
# activations (both ways), `high` the slowest of the three; all of them on the efficiency
# file's best (the copy's) share, the B200's ratios assumed for every part. The quantisation
# casts themselves keep the copy's rate: their bytes (FP8_CAST_BYTES, torchao's unfused
# roofline, 6 per element for MXFP8) at 90% already take the measured fused kernel's time
# (6 · 67,108,864 / (7.7 TB/s · 0.9) = 58.1 µs against 52.34), and the optimizer's streaming
# update runs as a copy.
ELEMENTWISE = {"low": 1.0, "estimate": 0.752, "high": 0.741}
# Eager PyTorch (no torch.compile, torchtitan's `compile` off) runs each element-wise op of the
# model code as its own kernel, each reading its inputs from memory and writing its output;
# the traffic above is that of fused kernels (Transformer Engine's, or Inductor's). Bytes per
# element of the tensor the kind works on, hand-counted, as (eager, fused), 16-bit activations
# and fp32 intermediates:
# - RMSNorm (torchtitan's nn.RMSNorm, torchtitan/models/llama3/model.py lines 341-342 at
#   820504e; PyTorch's composite rms_norm, aten/src/ATen/native/layer_norm.cpp
#   `rms_norm_symint`, before its fused CUDA kernel, pytorch/pytorch pull request 153666 of
#   May 2025): input.to(fp32) reads 2 and writes 4 (6), pow 4 + 4 (8), mean reads 4 (4; its
#   output one per row), add eps and rsqrt per row (0), × rsqrt 4 + 4 (8), × weight 4 + 4 (8),
#   type_as back to 16 bits 4 + 2 (6): 40; a fused kernel reads 2 and writes 2: 4.
# - SwiGLU's activation·gate (FeedForward.forward, line 302: w2(F.silu(w1(x)) * w3(x))): silu
#   reads 2 and writes 2 (4), the multiply reads 2 + 2 and writes 2 (6): 10 per element of one
#   f-wide half; fused, both halves read and the product written: 6.
# - rotary (apply_rotary_emb, lines 134-160): .float() reads 2 and writes 4 (6), the complex
#   multiply reads 4 and writes 4 (8; the s × d_head/2 table is not counted), type_as 4 + 2
#   (6): 20 per element of Q and of K; fused, read 2 and write 2: 4.
# - residual adds (lines 365-366): one kernel either way (read 2
#   + 2, write 2): no difference.
# The difference (eager − fused) is added to the forward's memory-bound traffic, and
# MEM_BACKWARD times it to the backward's (the backward convention of the fused traffic: a
# hand count of the norm's eager backward gives more, about 88 bytes per element against 6
# fused, so the backward is a lower bound). LayerNorm (one native kernel eager) and plain
# activations (one kernel: GELU) add nothing; the routed experts' activations and the
# head's final norm are not counted; nor are copies eager and compiled code both make (GQA's
# repeat_kv, the transpose after attention).
EAGER_BYTES = {"rmsnorm": (40, 4), "swiglu": (10, 6), "rotary": (20, 4)}


def eager_extra(lp: "LayerProfile", prof: "Profile", lay: Layout) -> float:
    """Bytes one layer's eager element-wise kernels move forward beyond fused ones, per
    device and micro-batch (EAGER_BYTES): norms over the tokens each device normalises (1/t
    under sequence parallelism), SwiGLU over f/t, rotary over Q's and K's local heads."""
    layer = lp.layer
    tokens = prof.seq * lay.micro_batch / lay.cp
    t = lay.tp
    extra = 0.0
    if layer.norm.present and layer.norm.form == "rmsnorm":
        eager, fused = EAGER_BYTES["rmsnorm"]
        norms = sum(layer.norm_count().values())
        extra += (eager - fused) * norms * tokens * prof.d / (t if lay.sequence_parallel else 1)
    ffn = layer.ffn
    if ffn is not None and not ffn.routed and getattr(ffn, "gated", False) \
            and getattr(ffn, "activation", "") == "silu":
        eager, fused = EAGER_BYTES["swiglu"]
        extra += (eager - fused) * tokens * ffn.d_ff / t
    if prof.spec.positions == "rotary":
        eager, fused = EAGER_BYTES["rotary"]
        for _, kind in layer.slots():
            heads, kv = getattr(kind, "heads", 0), getattr(kind, "kv_heads", 0)
            if heads and kind.pair_terms():
                extra += (eager - fused) * tokens * (heads + (kv or heads)) * kind.qk_dim / t
    return extra


@lru_cache(maxsize=4096)
def _activation_bytes(layer: object, d: int, seq: int, batch: int, tp: int, sp: bool,
                      dropout: bool, flash: bool, recompute: str = "none") -> int:
    from ..counting.memory import Setup

    k = Setup(seq=seq, batch=batch, tp=tp, sequence_parallel=sp, dropout=dropout, flash=flash,
              recompute=recompute)
    return sum(p.value for p in layer_activations(layer, d, k))  # type: ignore[arg-type]


def _casts(lay: Layout, mc: Machine) -> Optional[tuple[int, int, int]]:
    """Bytes moved per element to quantise a matmul's operands (FP8_CAST_BYTES): the fp8
    recipe's with fp8 matmuls, NVFP4's with fp4, none in 16 bits."""
    if mc.matmul_bytes == 1:
        return FP8_CAST_BYTES.get(lay.fp8_recipe)
    if mc.matmul_bytes < 1:
        return FP8_CAST_BYTES["nvfp4"]
    return None


def _eager_attention(lp: LayerProfile, prof: Profile, lay: Layout, mc: Machine, end: str,
                     rate: float) -> tuple[float, float]:
    """(forward, backward) seconds of the eager attention path of one layer and micro-batch:
    QKᵀ and AV as batched matmuls over every pair (a mask removes no work), backward 2 × the
    forward; attention without a known head shape at the matmul rate."""
    b, t, cp = lay.micro_batch, lay.tp, lay.cp
    fwd = bwd = 0.0
    known = 0
    s_q, s_k = prof.seq / cp, prof.seq
    for heads, dqk, dv, flops in lp.attention_heads:
        if dqk and dv and 2 * heads * prof.seq * prof.seq * (dqk + dv) == flops:
            hb = max(1, round(b * heads / t))
            fwd += (gemm_time(s_q, s_k, dqk, mc, end, hb) + gemm_time(s_q, dv, s_k, mc, end, hb))
            bwd += (2 * gemm_time(s_q, dqk, s_k, mc, end, hb)
                    + gemm_time(s_q, s_k, dv, mc, end, hb)
                    + gemm_time(s_q, dv, s_k, mc, end, hb))
            known += flops
    rest = (lp.attention_full - known) * b / cp / t
    return fwd + rest / rate, bwd + 2 * rest / rate


def layer_compute(lp: LayerProfile, prof: Profile, lay: Layout, mc: Machine, end: str
                  ) -> Compute:
    """One layer, one micro-batch, one device."""
    b, t, cp = lay.micro_batch, lay.tp, lay.cp
    scale = b / cp  # sequences' worth of tokens per device
    c = Compute()
    cast = _casts(lay, mc)
    bw = mc.hbm * mc.memory_share[end]  # the casts
    ew = mc.hbm * mc.memory_share["low"] * ELEMENTWISE[end]  # element-wise kernels
    rate = mc.matmul_peak * mc.matmul_share * SHAPE_FACTOR[end] * SLOWEST_DEVICE[end]
    r = lay.lora_rank
    mods = modules_of(lay.recompute) if by_module(lay.recompute) else frozenset()
    rerun = reruns(lp.layer, mods)
    again = 0.0  # the forward matmuls Megatron-Core's recompute modules run again
    # ... or torchtitan's per-op checkpointing, matmul by matmul
    op = op_reruns((g.role for g in lp.gemms), bool(lp.moe[0])) if lay.recompute == OP \
        else (False,) * len(lp.gemms)
    for g, op_again in zip(lp.gemms, op):
        m, n, k, batch = _gemm_shapes(g, scale, lay)
        # an expert's tokens are its rows forward and backward, its reduction in the weight
        # gradient: the grouped kernel's rate at that many tokens for all three
        gs = grouped_share(m) if g.role == EXPERT else 1.0
        forward = gemm_time(m, n, k, mc, end, batch, gs)
        c.gemm_f += forward
        if (mods and rerun(g.name)) or op_again:
            again += forward
        if cast:  # quantising the input forward and the output gradient backward
            c.mem_f += cast[0] * m * k * batch / bw
            c.mem_b += cast[1] * m * n * batch / bw
        if r and g.role in ADAPTED:
            # LoRA (Hu et al. 2021): the frozen weight needs no gradient of its own; its
            # adapters A (K×r) and B (r×N) run x·A·B forward, 2·M·r·(K + N) FLOPs, and twice
            # that backward (their input and weight gradients), as small matmuls
            c.gemm_b += gemm_time(m, k, n, mc, end, batch, gs)
            adapter = 2 * m * r * (k + n) * batch
            c.gemm_f += adapter / rate
            c.gemm_b += 2 * adapter / rate
            c.gemm_w += adapter / rate
            continue
        weight_grad = gemm_time(k, n, m, mc, end, batch, gs)
        data_grad = gemm_time(m, k, n, mc, end, batch, gs)
        c.gemm_b += data_grad + weight_grad
        c.gemm_w += weight_grad
        if g.role == EXPERT:
            c.mlp_f += forward + (cast[0] * m * k * batch / bw if cast else 0.0)
            c.mlp_b += data_grad + weight_grad + (cast[1] * m * n * batch / bw if cast else 0.0)
            c.mlp_w += weight_grad
    loose = lp.loose * scale / t
    c.gemm_f += loose / rate
    c.gemm_b += 2 * loose / rate
    c.gemm_w += loose / rate
    a_peak = mc.attention_peak * SLOWEST_DEVICE[end]
    if lay.flash:
        flops = lp.attention_causal * scale / t
        flash_f = flops / (a_peak * mc.attention_forward[end])
        flash_b = FLASH_BACKWARD * flops / (a_peak * mc.attention_backward[end])
        w = SINK_EAGER_SHARE[end] if lp.sinks else 0.0
        if w:  # attention sinks: the fused kernel's time is unknown, the unfused path bounds it
            eager_f, eager_b = _eager_attention(lp, prof, lay, mc, end, rate)
            scores = (_activation_bytes(lp.layer, prof.d, prof.seq // cp, b, t,
                                        lay.sequence_parallel, lay.dropout, False)
                      - _activation_bytes(lp.layer, prof.d, prof.seq // cp, b, t,
                                          lay.sequence_parallel, lay.dropout, True))
            c.mem_f += w * MEM_FORWARD * scores / ew
            c.mem_b += w * MEM_BACKWARD * MEM_FORWARD * scores / ew
            c.attn_f += (1 - w) * flash_f + w * eager_f
            c.attn_b += (1 - w) * flash_b + w * eager_b
        else:
            c.attn_f += flash_f
            c.attn_b += flash_b
    else:
        eager_f, eager_b = _eager_attention(lp, prof, lay, mc, end, rate)
        c.attn_f += eager_f
        c.attn_b += eager_b
    scan = lp.scan * scale / t
    c.attn_f += scan / (a_peak * mc.attention_forward[end])
    c.attn_b += 2 * scan / (a_peak * mc.attention_backward[end])
    saved = _activation_bytes(lp.layer, prof.d, prof.seq // cp, b, t,
                              lay.sequence_parallel, lay.dropout, lay.flash)
    c.mem_f += MEM_FORWARD * saved / ew
    c.mem_b += MEM_BACKWARD * MEM_FORWARD * saved / ew
    if not lay.compiled:  # eager PyTorch: each element-wise op its own kernel
        unfused = eager_extra(lp, prof, lay)
        c.mem_f += unfused / ew
        c.mem_b += MEM_BACKWARD * unfused / ew
    experts, top_k = lp.moe
    unpermute = 0.0
    if experts:  # the unpermutation of the tokens this device routes (1/t under SP)
        routed = prof.seq * scale / t * prof.d * ACT_BYTES
        unpermute = (top_k + 1) * routed / ew
        c.mem_f += unpermute
        c.mem_b += (2 * top_k + 1) * routed / ew
        c.mlp_f += unpermute
        c.mlp_b += (2 * top_k + 1) * routed / ew
    if lay.recompute == "full":
        c.recompute = c.gemm_f + c.attn_f + c.mem_f
    elif lay.recompute == "selective":
        c.recompute = c.attn_f
    elif lay.recompute == OP:  # the matmuls not saved and every memory-bound kernel
        c.recompute = again + c.mem_f
    elif mods:
        c.recompute = again + (c.attn_f if "core_attn" in mods else 0.0) + (
            unpermute if "moe" in mods else 0.0)
        for module, moved in MEMORY_BOUND_TRAFFIC.items():
            if module in mods:  # element-wise: the freed tensor rewritten, its inputs re-read
                freed = (_activation_bytes(lp.layer, prof.d, prof.seq // cp, b, t,
                                           lay.sequence_parallel, lay.dropout, lay.flash)
                         - _activation_bytes(lp.layer, prof.d, prof.seq // cp, b, t,
                                             lay.sequence_parallel, lay.dropout, lay.flash,
                                             module))
                c.recompute += moved * freed / ew
    if experts:  # the rest of a routed layer runs before its dispatch (recomputation too)
        c.moe_layers = 1.0
        c.pre_f, c.pre_b = c.forward - c.mlp_f, c.backward - c.mlp_b
    else:
        c.mlp_f = c.mlp_b = c.mlp_w = 0.0
    return c


def head_compute(prof: Profile, lay: Layout, mc: Machine, end: str) -> Compute:
    """The final norm, LM head and cross-entropy of one micro-batch on the last stage."""
    c = Compute()
    if not prof.head_flops:
        return c
    tokens = prof.seq * lay.micro_batch / lay.cp
    v = prof.vocab / lay.tp
    d = prof.d
    c.head_f = gemm_time(tokens, v, d, mc, end)
    c.gemm_w = gemm_time(d, v, tokens, mc, end)
    c.head_b = gemm_time(tokens, d, v, mc, end) + c.gemm_w
    ew = mc.hbm * mc.memory_share["low"] * ELEMENTWISE[end]  # element-wise kernels
    logits = tokens * v
    c.head_f += CE_FORWARD * logits / ew
    c.head_b += CE_BACKWARD * logits / ew
    return c


_STAGES: dict[tuple, tuple] = {}


def stage_compute(prof: Profile, lay: Layout, mc: Machine, end: str, last: bool) -> Compute:
    """A stage of ⌈L/p⌉ layers (each kind in proportion), with the head if `last`
    (remembered per profile, machine and the options it depends on)."""
    key = (id(prof), id(mc), lay.tp, lay.cp, lay.ep, lay.etp, lay.pp, lay.micro_batch,
           lay.recompute, lay.sequence_parallel, lay.dropout, lay.flash, lay.fp8_recipe,
           lay.lora_rank, lay.compiled, end, last)
    found = _STAGES.get(key)
    if found is not None and found[0] is prof and found[1] is mc:  # type: ignore[index]
        return found[2]  # type: ignore[index]
    if len(_STAGES) > 50_000:
        _STAGES.clear()
    result = _stage_compute(prof, lay, mc, end, last)
    _STAGES[key] = (prof, mc, result)  # type: ignore[assignment]
    return result


_LAYERS: dict[tuple, tuple] = {}
# The Layout fields one layer's compute does not read (the stage's share of layers, the
# schedule, the communication): any other field, a new one included, keys `_LAYERS`.
_NOT_PER_LAYER = frozenset(("pp", "vp", "dp", "zero", "global_batch", "grad_fp32",
                            "tp_overlap", "capacity", "dispatcher", "moe_overlap", "schedule",
                            "cuda_graph", "routing", "async_tp"))
_per_layer = attrgetter(*(k for k in Layout.__dataclass_fields__ if k not in _NOT_PER_LAYER))


def _layer_compute(lp: LayerProfile, prof: Profile, lay: Layout, mc: Machine,
                   end: str) -> Compute:
    """`layer_compute`, remembered by every option but those it does not read (a plan's search
    meets each layer again across pipeline depths, data-parallel sizes and schedules)."""
    key = (id(lp), id(mc), end, _per_layer(lay))
    found = _LAYERS.get(key)
    if found is not None and found[0] is lp and found[1] is mc:
        return found[2]
    if len(_LAYERS) > 50_000:
        _LAYERS.clear()
    result = layer_compute(lp, prof, lay, mc, end)
    _LAYERS[key] = (lp, mc, result)
    return result


def _stage_compute(prof: Profile, lay: Layout, mc: Machine, end: str, last: bool) -> Compute:
    total = Compute()
    layers = stage_layers(prof, lay.pp)
    for lp in prof.layers:
        share = lp.count * layers / prof.n_layers
        total.add(_layer_compute(lp, prof, lay, mc, end), share)
    if last:  # remembered as a layer is
        key = ("head", id(prof), id(mc), end, _per_layer(lay))
        found = _LAYERS.get(key)
        if found is None or found[0] is not prof or found[1] is not mc:
            found = _LAYERS[key] = (prof, mc, head_compute(prof, lay, mc, end))
        total.add(found[2], 1)
    return total


# ------------------------------------------------------------------------------ the step


@dataclass
class StepTime:
    """One end of the interval (or the estimate): seconds and where they go."""

    total: float
    compute: dict[str, float]  # gemm, attention, memory_bound, head, recompute (whole step)
    bubble: float
    exposed: dict[str, float]  # tp, cp, ep, pp, dp, embedding
    optimizer: float
    comm_all: dict[str, float]  # each axis's communication time, hidden or not
    stage: str  # which stage was the slowest


def placement(lay: Layout, net: Net) -> dict[str, int]:
    """Ranks of each group that share a fast domain, in Megatron-LM's order (tp, cp, dp, pp
    from the innermost)."""
    dom = net.domain
    tp = min(lay.tp, dom)
    cp = max(1, min(lay.cp, dom // max(1, lay.tp)))
    dp = max(1, min(lay.dp * lay.cp, dom // max(1, lay.tp)))
    # Megatron-Core's expert ranks run etp innermost, then ep, then the expert data-parallel
    # ranks, inside each pipeline stage: an expert group of ep ranks spaced by etp, its
    # expert-data-parallel group spaced by ep·etp.
    ep = max(1, min(lay.ep, dom // max(1, lay.etp)))
    edp = max(1, min(lay.expert_dp, dom // max(1, lay.ep * lay.etp)))
    return {"tp": tp, "cp": cp, "dp": dp, "ep": ep, "etp": max(1, min(lay.etp, dom)),
            "edp": edp, "pp_across": int(lay.tp * lay.cp * lay.dp >= dom)}


SCHEDULES = ("1f1b", "interleaved", "zero-bubble", "dualpipe", "dualpipev")


def pipeline_bubble(schedule: str, p: int, v: int, t_f: float, t_b: float,
                    t_w: float) -> float:
    """Idle time of a pipeline of p stages whose slowest stage takes t_f forward and t_b
    backward per micro-batch (t_w of it the weight gradients), per the schedule's paper:
    - 1F1B (Narayanan et al. 2021 §2.2): (p − 1)·(F + B); interleaved over v virtual stages,
      (p − 1)·(F + B)/v;
    - zero-bubble, ZB-H1 (Qi et al. 2023; the DualPipe repository's "ZB1P"): the weight
      gradients fill the drain, (p − 1)·(F + B − 2W);
    - DualPipe (DeepSeek-V3 Technical Report, Table 2): (p/2 − 1)·(F&B + B − 3W), with F&B the
      overlapped forward and backward chunks (their compute adds: F + B);
    - DualPipeV (the DualPipe repository: DualPipe cut in half, 2p chunks of half a stage on
      p devices): (p − 1)·(F&B + B − 3W)/2 in whole-stage times.
    None with one stage."""
    if p <= 1:
        return 0.0
    if schedule == "zero-bubble":
        return (p - 1) * max(0.0, t_f + t_b - 2 * t_w)
    if schedule == "dualpipe":
        return (p / 2 - 1) * max(0.0, t_f + 2 * t_b - 3 * t_w)
    if schedule == "dualpipev":
        return (p - 1) * max(0.0, t_f + 2 * t_b - 3 * t_w) / 2
    return (p - 1) / v * (t_f + t_b)


def step_time(prof: Profile, lay: Layout, mc: Machine, end: str) -> StepTime:
    """One end of the interval (`low`, `high`) or the estimate: the slowest stage decides."""
    where = placement(lay, mc.net)
    stages = ["only"] if lay.pp == 1 else ["first", "last"]
    best: Optional[StepTime] = None
    for which in stages:
        comp = stage_compute(prof, lay, mc, end, last=which in ("last", "only"))
        result = _schedule(prof, lay, mc, end, comp, which, where)
        if best is None or result.total > best.total:
            best = result
    assert best is not None
    return best


_COMM: dict[tuple, tuple] = {}


def _remembered(prof: Profile, key: tuple, work):  # type: ignore[no-untyped-def]
    """work() once per profile and key: a plan's search meets the same micro-batch
    collectives and stage parameters across ZeRO stages, data-parallel sizes and ends."""
    key = (id(prof),) + key
    found = _COMM.get(key)
    if found is not None and found[0] is prof:
        return found[1]
    if len(_COMM) > 50_000:
        _COMM.clear()
    value = work()
    _COMM[key] = (prof, value)
    return value


def _in_floats(c):  # type: ignore[no-untyped-def]
    """The micro-batch's collectives with their exact counts as floats: the step's arithmetic
    is in seconds anyway, and Fraction arithmetic was most of a plan search's time."""
    return type(c)(*(float(getattr(c, f.name)) for f in fields(c)))


def _micro_comm(prof: Profile, lay: Layout, layers: int):  # type: ignore[no-untyped-def]
    """The collectives of one micro-batch (per_microbatch reads these fields of the layout),
    remembered."""
    return _remembered(prof, ("comm", lay.micro_batch, lay.cp, lay.recompute, lay.tp,
                              lay.sequence_parallel, lay.ep, lay.etp, lay.capacity, layers),
                       lambda: _in_floats(per_microbatch(prof, lay, layers)))


def _tp_time(comm, lay: Layout, where: dict[str, int], net: Net) -> float:  # type: ignore
    """One tensor-parallel collective (0 over one rank)."""
    return collective("allgather" if lay.sequence_parallel else "allreduce", comm.tp_size,
                      lay.tp, where["tp"], net)


def _a2a_time(comm, lay: Layout, where: dict[str, int], net: Net) -> float:  # type: ignore
    """One dispatch (or combine) of the routed tokens, with the gather over the expert's t_e
    ranks."""
    t = dispatch(lay.dispatcher, comm.ep_size, comm.ep_top_k, lay.ep, where["ep"], net,
                 lay.routing, comm.ep_experts)
    if lay.etp > 1:  # the dispatched tokens gathered over the expert's t_e ranks
        t += collective("allgather", comm.ep_size * lay.etp, lay.etp, where["etp"], net)
    return t


def exposed_floor(prof: Profile, lay: Layout, mc: Machine) -> float:
    """Communication of one micro-batch the estimate never hides: every tensor-parallel
    collective without --tp-overlap, every expert dispatch without an overlapping schedule
    and the SMs' share of it with one (`_schedule`'s rules), on the last stage."""
    if not (lay.tp > 1 and not lay.tp_overlap) and not (lay.ep > 1 or lay.etp > 1):
        return 0.0
    where = placement(lay, mc.net)
    comm = _micro_comm(prof, lay, stage_layers(prof, lay.pp))
    floor = 0.0
    if lay.tp > 1 and not lay.tp_overlap:
        floor += (comm.tp_forward + comm.tp_backward) * _tp_time(comm, lay, where, mc.net)
    overlapped = lay.moe_overlap or lay.schedule in ("dualpipe", "dualpipev")
    if (lay.ep > 1 or lay.etp > 1) and comm.ep_size:
        t = (comm.ep_forward + comm.ep_backward) * _a2a_time(comm, lay, where, mc.net)
        m = lay.micro_batches
        if overlapped and m > 1:
            # hidden behind another micro-batch, the dispatch still holds COMM_SMS of the SMs
            # for as long as it runs, and the unpaired chunks expose theirs whole
            # (`_paired_a2a`): at least min(1, p/m) of the chunks are unpaired for any
            # virtual-stage count (`unpaired_chunks` ≥ min(p·v, m·v))
            u = min(1.0, lay.pp / m)
            floor += t * (u + (1 - u) * min(1.0, COMM_SMS / mc.sms))
        else:
            floor += t
    return floor


def unpaired_chunks(lay: Layout) -> int:
    """Forward chunks (and as many backward) of a step that Megatron-Core's combined 1F1B
    schedule runs alone, with nothing of another micro-batch to overlap: without a pipeline
    the first forward and the last backward (combined_1f1b_schedule_for_no_pipelining); with
    one, the warm-up of the pipeline's first rank, where most are
    (schedules.py `get_pp_rank_microbatches` at Megatron-LM d98e8a64: 2(p − 1) +
    (v − 1)·p with interleaving, its microbatch_group_size_per_vp_stage p, plus the one extra
    forward the overlap schedules; p − 1 without, taken with the same extra one). At most
    every chunk of the step (m·v)."""
    p, v, m = lay.pp, lay.vp, lay.micro_batches
    if p == 1:
        w = 1
    elif v > 1:
        w = 2 * (p - 1) + (v - 1) * p + 1
    else:
        w = p
    return min(w, m * v)


def _paired_a2a(comp: Compute, lay: Layout, ep_f: float, ep_b: float,
                sm_share: float) -> tuple[float, float]:
    """The exposed (forward, backward) all-to-all of one micro-batch under Megatron-Core's 1F1B
    expert overlap (overlap_moe_expert_parallel_comm). Each routed layer's forward is paired
    with another micro-batch's backward of a layer, in three phases on a compute and a
    communication stream, each phase ending when both streams have
    (models/common/model_chunk_schedule_plan.py `TransformerLayerSchedulePlan.run` at
    Megatron-LM d98e8a64):

        comm: combine_bwd    | dispatch_fwd -> dispatch_bwd     | combine_fwd
        comp: pre_dispatch_f | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | pre_dispatch_b

    so an all-to-all hides only under the one block beside it, not under the pair's whole
    compute: phase 1 takes max(a, F_pre), phase 3 max(a, B_pre); in phase 2 the forward's
    experts wait for its dispatch and the backward's dispatch for the experts' input
    gradient B_x: max(max(a, B_x) + a, max(B_x + B_w, a) + F_mlp). The chunks of
    `unpaired_chunks` expose all of theirs. The hidden part still holds COMM_SMS of the SMs
    (`sm_share` of them): the compute beside it loses that share for as long."""
    n = comp.moe_layers
    f_pre, b_pre = comp.pre_f / n, comp.pre_b / n
    f_mlp, b_mlp, b_w = comp.mlp_f / n, comp.mlp_b / n, comp.mlp_w / n
    b_x = b_mlp - b_w
    a_f, a_b = ep_f / n / 2, ep_b / n / 2  # one dispatch (combine) forward; backward
    pair = (max(a_b, f_pre)
            + max(max(a_f, b_x) + a_b, max(b_mlp, a_f) + f_mlp)
            + max(a_f, b_pre))
    exposed = pair - (f_pre + f_mlp + b_pre + b_mlp)
    comm = 2 * (a_f + a_b)
    paired = exposed + (comm - exposed) * sm_share
    u = unpaired_chunks(lay) / (lay.micro_batches * lay.vp)
    per_layer = u * comm + (1 - u) * paired
    share_f = ep_f / (ep_f + ep_b)
    return n * per_layer * share_f, n * per_layer * (1 - share_f)


def _schedule(prof: Profile, lay: Layout, mc: Machine, end: str, comp: Compute, which: str,
              where: dict[str, int]) -> StepTime:
    net = mc.net
    p, v = lay.pp, lay.vp
    m = lay.micro_batches
    layers = stage_layers(prof, p)
    comm = _micro_comm(prof, lay, layers)
    hidden_all, none_hidden = end == "low", end == "high"
    # --- tensor parallelism: every micro-batch, on the critical path --------------------
    t_coll = _tp_time(comm, lay, where, net)
    tp_f_all, tp_b_all = comm.tp_forward * t_coll, comm.tp_backward * t_coll
    if hidden_all and lay.tp_overlap:
        tp_f = tp_b = 0.0
    elif none_hidden or not lay.tp_overlap:  # nothing hides them, not even at `low`
        tp_f, tp_b = tp_f_all, tp_b_all
    else:
        per_layer_gemm = comp.gemm_f / layers
        each_f = max(0.0, t_coll - per_layer_gemm / 4)
        each_b = max(0.0, t_coll - per_layer_gemm / 2)
        tp_f, tp_b = comm.tp_forward * each_f, comm.tp_backward * each_b
        if lay.async_tp:  # the backward's own collectives exposed; full recomputation's
            # re-run forward hides its collectives as the forward does (ASYNC_TP)
            rerun = comm.tp_forward if lay.recompute == "full" else 0
            tp_b = (comm.tp_backward - rerun) * t_coll + rerun * each_f
    # --- context parallelism: ring K/V steps ---------------------------------------------
    cp_f = cp_b = cp_all = 0.0
    if lay.cp > 1 and comm.cp_step:
        across = lay.tp * lay.cp > net.domain
        t_step = p2p(comm.cp_step, across, net)
        steps_f, steps_b = comm.cp_steps_forward, comm.cp_steps_backward
        cp_all = (steps_f + steps_b) * t_step
        if none_hidden:
            cp_f, cp_b = steps_f * t_step, steps_b * t_step
        elif not hidden_all:
            blk_f = comp.attn_f / max(1, steps_f)
            blk_b = comp.attn_b / max(1, steps_b)
            cp_f = steps_f * max(0.0, t_step - blk_f)
            cp_b = steps_b * max(0.0, t_step - blk_b)
    # --- expert parallelism: all-to-all --------------------------------------------------
    ep_f = ep_b = ep_all = 0.0
    if (lay.ep > 1 or lay.etp > 1) and comm.ep_size:
        t_a2a = _a2a_time(comm, lay, where, net)
        ep_all = (comm.ep_forward + comm.ep_backward) * t_a2a
        overlapped = (lay.moe_overlap or lay.schedule in ("dualpipe", "dualpipev")) and (
            lay.micro_batches > 1 and comp.moe_layers)
        # without an overlapping schedule nothing hides the dispatch: exposed at `low` too
        if not (hidden_all and overlapped):
            ep_f, ep_b = comm.ep_forward * t_a2a, comm.ep_backward * t_a2a
            if overlapped and not none_hidden and ep_f + ep_b > 0:
                ep_f, ep_b = _paired_a2a(comp, lay, ep_f, ep_b, min(1.0, COMM_SMS / mc.sms))
    # --- data parallelism ------------------------------------------------------------------
    dense, expert = _remembered(prof, ("params", lay.pp, lay.tp, lay.ep, lay.etp, which),
                                lambda: tuple(map(float, stage_params(prof, lay, which))))
    frozen = 0.0
    if lay.lora_rank:  # only the adapters have gradients, optimizer state and reductions;
        # ZeRO-3 still gathers the frozen weights
        frozen = dense + expert
        dense, expert = map(float, adapter_params(prof, lay))
    n_dp = lay.dp * lay.cp
    g_bytes = 4 if lay.grad_fp32 else 2
    dp_groups = [(dense, n_dp, where["dp"]), (expert, lay.expert_dp, where["edp"])]
    fsdp_f = fsdp_b = 0.0
    dp_exposed = dp_all = 0.0
    t_f0 = comp.forward + tp_f + cp_f + ep_f
    t_b0 = comp.backward + tp_b + cp_b + ep_b
    # --- the host: the device waits where issuing its kernels takes longer than they run
    host_f, host_b = _remembered(prof, ("host", end, lay.ep, lay.recompute, lay.cuda_graph,
                                        layers), lambda: host_time(prof, lay, end, layers))
    serial = HOST_SYNC_SERIAL[end]  # 0 but at the high end: the plan's search never asks
    synced = serial * _remembered(prof, ("synced", end, lay.ep, lay.cuda_graph, layers),
                                  lambda: synced_host(prof, lay, end, layers)) if serial else 0.0
    # a routed layer's forward waits for its split sizes on the host: the `synced` part of the
    # host's forward runs beside no device work (HOST_SYNC_SERIAL), the rest as before
    host_f_overlapped = host_f - synced
    wait = (max(0.0, host_f_overlapped - t_f0) + synced) + max(0.0, host_b - t_b0)
    t_f0, t_b0 = max(t_f0, host_f_overlapped) + synced, max(t_b0, host_b)
    if frozen:  # ZeRO-3 gathers every weight, frozen or not; only adapters are reduced
        dp_groups[0] = (dense, n_dp, where["dp"], frozen)
    for params, n, per, *gathered in dp_groups:  # one rank or no bytes: 0
        grads = params * g_bytes
        weights = (gathered[0] if gathered else params) * ACT_BYTES
        bucket = min(params, max(BUCKET_MIN, BUCKET_PER_DP * n))
        if lay.zero == 3:
            layer_w = weights / layers  # ⌈L/p⌉ >= 1
            layer_g = grads / layers
            ag = collective("allgather", layer_w, n, per, net)
            rs = collective("reducescatter", layer_g, n, per, net)
            all_f, all_b = layers * ag, layers * (ag + rs)
            dp_all += m * (all_f + all_b)
            if none_hidden:
                fsdp_f += all_f
                fsdp_b += all_b
            elif not hidden_all:
                lf, lb = t_f0 / layers, t_b0 / layers
                fsdp_f += ag + (layers - 1) * max(0.0, ag - lf)
                fsdp_b += rs + layers * max(0.0, ag + rs - lb)
            continue
        if lay.zero == 0:
            red = collective("allreduce", grads, n, per, net)
            gat = 0.0
            red_bucket = collective("allreduce", bucket * g_bytes, n, per, net)
            gat_bucket = 0.0
        else:
            red = collective("reducescatter", grads, n, per, net)
            gat = collective("allgather", weights, n, per, net)
            red_bucket = collective("reducescatter", bucket * g_bytes, n, per, net)
            gat_bucket = collective("allgather", bucket * ACT_BYTES, n, per, net)
        reductions = m if lay.zero == 2 else 1
        dp_all += reductions * red + gat
        if none_hidden:
            dp_exposed += reductions * red + gat
        elif not hidden_all:
            exposed_red = red_bucket + max(0.0, red - t_b0)
            dp_exposed += reductions * exposed_red
            if gat:
                dp_exposed += gat_bucket + max(0.0, gat - t_f0)
    t_f = t_f0 + fsdp_f
    t_b = t_b0 + fsdp_b
    # --- the pipeline -------------------------------------------------------------------
    steady = m * (t_f + t_b)
    bubble = pipeline_bubble(lay.schedule, p, v, t_f, t_b, comp.gemm_w)
    pp_exposed = pp_all = 0.0
    if p > 1:
        across = bool(where["pp_across"])
        t_send = p2p(comm.pp_send, across, net)
        if comm.pp_gather:
            t_send += collective("allgather", comm.pp_gather, lay.tp, where["tp"], net)
        sends = 2 * (v * m + p - 1)
        pp_all = sends * t_send
        if none_hidden:
            pp_exposed = pp_all
        else:  # 1F1B's blocking sends hide behind nothing, at `low` too
            pp_exposed = (2 * (p - 1) if v > 1 else sends) * t_send
    emb = 0.0
    if p > 1 and prof.tied:  # nothing hides it
        emb = collective("allreduce", prof.vocab * prof.d / lay.tp * g_bytes, 2, 1, net)
    # --- optimizer ----------------------------------------------------------------------------
    local = dense + expert
    sharded = dense / (lay.dp * lay.cp) + expert / lay.expert_dp
    updated = sharded if lay.zero >= 1 else local
    grads_local = sharded if lay.zero >= 2 else local
    cast = _casts(lay, mc)
    weight_casts = cast[2] * local if cast else 0  # each weight quantised once a step
    optimizer = (OPT_UPDATED * updated + OPT_PER_GRAD * grads_local + weight_casts) / (
        mc.hbm * mc.memory_share[end])
    total = steady + bubble + pp_exposed + dp_exposed + emb + optimizer
    # the bubble has its own line: compute and exposed time are those of the m micro-batches
    compute = {"gemm": m * (comp.gemm_f + comp.gemm_b),
               "attention": m * (comp.attn_f + comp.attn_b),
               "memory_bound": m * (comp.mem_f + comp.mem_b),
               "head": m * (comp.head_f + comp.head_b),
               "recompute": m * comp.recompute}
    exposed = {"tp": m * (tp_f + tp_b), "cp": m * (cp_f + cp_b), "ep": m * (ep_f + ep_b),
               "pp": pp_exposed, "dp": dp_exposed + m * (fsdp_f + fsdp_b), "embedding": emb}
    if wait:  # the device idle while the host issues its kernels
        exposed["host"] = m * wait
    comm_all = {"tp": m * (tp_f_all + tp_b_all), "cp": m * cp_all, "ep": m * ep_all,
                "pp": pp_all, "dp": dp_all}
    return StepTime(total, compute, bubble, exposed, optimizer, comm_all, which)

