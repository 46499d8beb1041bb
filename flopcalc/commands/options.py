"""Every option of every command, declared once: one name, one type, one vocabulary and one help
text wherever it appears. A command picks its options from `OPTIONS` by name; it may give one
another default or make it required (`Option.but`, with the reason), never another meaning
(tests/cli check it). Choice lists come from the tables that define them (dtypes, precisions,
optimizers, recomputation).
"""

from __future__ import annotations

from fractions import Fraction

from ..tables import COMPUTE_DTYPES, DTYPE_BITS, OPTIMIZERS, PRECISIONS, RECOMPUTE
from ..tables import SCALED_FORMATS, ZERO_STAGES
from .base import TYPES, Option

CONVENTIONS = ("full", "causal")
SCANS = ("chunked", "recurrent")  # kinds.base.SCANS, kept here so the CLI starts light
WEIGHT_FORMATS = tuple(DTYPE_BITS) + tuple(SCALED_FORMATS)
# The KV cache's dtypes as vLLM names them (--kv-cache-dtype; SGLang's are a subset), with
# int8 (a cache some engines keep): `infer` stores plain dtypes, `serve` vLLM's layouts.
KV_CACHE_DTYPES = ("auto", "bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2", "int8",
                   "fp8_ds_mla", "nvfp4_ds_mla", "nvfp4")
STATE_DTYPES = ("auto", "bf16", "fp16", "fp32")


def _length(name: str, help_: str, **kw: object) -> Option:
    return Option(name, "length", help_, metavar="N", **kw)  # type: ignore[arg-type]


def _ways(name: str, help_: str) -> Option:
    return Option(name, "count", help_, 1, metavar="N")


_ALL = (
    # ------------------------------------------------------------------ the model and workload
    _length("seq", "Sequence (source) length; k = 1024 (32k = 32,768). Default: the model's "
            "training length, else its context, else 2,048."),
    Option("seqs", "text", "Lengths: 1k,2k,4k; a range 1k..1M (every power of two); or a range "
           "with --points N (N log-spaced lengths). k = 1024.", "1k..1M", metavar="SPEC"),
    Option("points", "count", "With a range: this many log-spaced integer lengths.",
           metavar="N"),
    _length("tgt_seq", "Target (decoder) length of an encoder-decoder model. Default: --seq."),
    Option("packed", "text", "Samples packed into each sequence, attending only within "
           "themselves: their lengths, summing to --seq (1k,2k,1k; LxN for N samples of L: "
           "4kx8). Attention pairs become Σ Lᵢ² (causal Σ Lᵢ(Lᵢ+1)/2). Default: one sample.",
           metavar="LENGTHS"),
    Option("batch", "count", "Sequences in one forward pass (serve: decoding together on each "
           "replica).", 1, metavar="B"),
    Option("tokens", "count", "Training tokens D (300B, 1.5T, 3e11). Default: published, else "
           "20 per param.", metavar="D"),
    Option("attention", "choice", "full: every (query, key) pair (FlopCounterMode's count); "
           "causal: the pairs each layer's mask lets through (causal, sliding window, chunked).",
           "full", CONVENTIONS),
    Option("scan", "choice", "How chunked scans (Mamba-2, gated DeltaNet, Kimi delta, lightning "
           "attention) count their core. chunked: as Hugging Face's PyTorch path, padded to the "
           "chunk (FlopCounterMode's count); recurrent: token by token, the decode step on "
           "every real token.", "chunked", SCANS),
    Option("elementwise", "flag", "Also count bias adds, norms, activations, softmax, residual "
           "adds and routing.", False),
    Option("images", "count", "Images per sequence through the model's vision tower (a "
           "multimodal config.json): adds the tower's and projector's FLOPs and the image tokens "
           "to the text's sequence. Default: none, the tower is not run.", metavar="N"),
    Option("image_size", "text", "Size of each image, HEIGHTxWIDTH in pixels (448x448, or 448). "
           "Default: the tower's trained size.", metavar="HxW"),
    Option("set", "texts", "Override a config field (repeatable; dotted keys for nested ones, "
           "e.g. bias.qkv=false).", (), metavar="KEY=VALUE"),
    # ------------------------------------------------------------------------- the hardware
    Option("accelerator", "text", "Accelerator preset (flopcalc accelerators; short names such "
           "as h100 are listed in the presets) or a YAML file.", metavar="NAME"),
    Option("count", "count", "Devices in all. With a parallel layout, dp x tp x pp (x cp): "
           "--dp is derived when only the others are given; without one, the devices a run is "
           "spread over, peak, bandwidth and memory scaling perfectly.", metavar="N"),
    Option("peak", "count", "Dense peak FLOP/s per device, overriding the preset (989.5T, 1P).",
           metavar="FLOP/S"),
    Option("bandwidth", "bytes", "Memory bandwidth in bytes/s per device, overriding the preset "
           "(3.35TB).", metavar="BYTES/S"),
    Option("memory_fraction", "share", "Share of each device's usable memory (what its driver "
           "reports) the run may fill: 0.9 or 90%.", Fraction(1), metavar="F"),
    Option("reserve", "bytes", "Bytes per device held back from the run (CUDA context, "
           "workspaces): 2GiB.", metavar="BYTES"),
    Option("network", "text", "Network preset (presets/networks: dgx-h100, gb200-nvl72, ...) or "
           "a YAML file. Default: the accelerator's usual system.", metavar="NAME"),
    Option("efficiency", "text", "Achievable-throughput file (presets/efficiency) or a YAML "
           "file. Default: the accelerator's preset.", metavar="FILE"),
    Option("attention_kernel", "text", "Which attention kernel's shares of peak the efficiency "
           "file gives (fa2: FlashAttention-2, PyTorch SDPA's default on Hopper before cuDNN's "
           "kernel took over). Default: the file's own (fa3 on Hopper).", metavar="NAME"),
    Option("dtype", "choice", "Which of the accelerator's dense peaks the matmuls run at and "
           "MFU divides by (fp8: fp8 GEMMs).", "bf16", COMPUTE_DTYPES),
    Option("compute_dtype", "choice", "dtype of a serving run's matmuls: which of the "
           "accelerator's dense peaks applies.", "bf16", COMPUTE_DTYPES),
    Option("price", "amount", "Price per device-hour: adds the cost (serve: $ per million "
           "output tokens under load).", metavar="P"),
    # -------------------------------------------------------------------- parallel layouts
    _ways("tp", "Tensor-parallel devices (per replica; must divide the heads; vLLM's "
          "--tensor-parallel-size)."),
    _ways("pp", "Pipeline stages (per replica; at most the layers; vLLM's "
          "--pipeline-parallel-size)."),
    _ways("dp", "Data-parallel replicas: ZeRO splits over them in training; each has its own "
          "cache in serving (vLLM's --data-parallel-size)."),
    _ways("cp", "Context-parallel devices: each holds seq/cp tokens of every sequence (ring "
          "attention, a flash kernel per block)."),
    _ways("ep", "Expert-parallel devices the routed experts are spread over (must divide the "
          "experts): drawn from tp x cp x dp in training as Megatron-Core does, from tp x dp "
          "in serving (vLLM's --enable-expert-parallel); 1: experts split by --tp."),
    Option("etp", "count", "Expert tensor-parallel devices: each routed expert split this many "
           "ways (Megatron-Core's ETP; must divide --tp). Default: 1 with --ep > 1, as published "
           "MoE recipes run; --tp without expert parallelism, as Megatron-Core.", metavar="N"),
    Option("vp", "count", "Virtual pipeline stages per device (interleaved 1F1B: the first "
           "stage holds p + (p-1)/v micro-batches).", 1, metavar="V"),
    Option("schedule", "choice", "Pipeline schedule: 1f1b (interleaved with --vp > 1), "
           "interleaved, zero-bubble (ZB-H1, Qi et al. 2023), dualpipe or dualpipev "
           "(DeepSeek-V3): each with its paper's bubble and activation memory.", "1f1b",
           ("1f1b", "interleaved", "zero-bubble", "dualpipe", "dualpipev")),
    Option("zero", "number", "ZeRO stage: 0 none (DDP), 1 splits the optimizer (a distributed "
           "optimizer), 2 also the gradients (reduce-scattered every micro-batch), 3 also the "
           "weights (gathered layer by layer).", 0,
           tuple(map(str, ZERO_STAGES))),
    Option("recompute", "choice", "Activation recomputation: selective recomputes the attention "
           "core (its s² tensors are not kept), full each layer's forward from its input, op "
           "torchtitan's per-op selective checkpointing (every second matmul of a layer and "
           "all its element-wise ops run again; attention and the other matmuls are kept).",
           "none", RECOMPUTE + ("op",)),
    Option("recompute_modules", "text", "Megatron-Core's selective recomputation by module "
           "(--recompute-granularity selective --recompute-modules), a comma list of core_attn, "
           "moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts: each frees its saved "
           "tensors and runs its forward again in the backward pass. Implies --recompute "
           "selective; core_attn alone is selective.", metavar="LIST"),
    Option("sequence_parallel", "flag", "Sequence parallelism over --tp: norms and dropout "
           "split too; reduce-scatter + all-gather instead of all-reduce.", False),
    Option("micro_batch", "count", "Sequences per micro-batch per data-parallel rank.",
           metavar="B"),
    Option("global_batch", "count", "Sequences per training step, every data-parallel rank "
           "together.", metavar="B"),
    Option("dropout", "choice", "Dropout on or off: its masks kept and its kernels run (off: "
           "modern LLMs train without dropout; Korthikanti et al.'s figures assume it).", "off",
           ("on", "off")),
    # Every framework runs flash attention (FlashAttention, cuDNN's fused attention in
    # Transformer Engine, PyTorch's SDPA); --no-flash is the eager path that keeps the s² scores.
    Option("flash", "flag", "Flash-attention kernels: no s² tensor kept, the blocks a causal "
           "mask removes skipped (--no-flash: the eager kernel).", True),
    Option("precision", "choice", "mixed: 16-bit weights and gradients with an fp32 master "
           "copy; bf16: no master copy; fp32.", "mixed", tuple(PRECISIONS)),
    Option("optimizer", "choice", "adamw (fp32 m and v), adamw-8bit, sgd (momentum).", "adamw",
           tuple(OPTIMIZERS)),
    Option("grad_fp32", "flag", "Gradients accumulated (and reduced) in an fp32 buffer "
           "(Megatron-LM's main_grad; forced for bf16 there).", False),
    # On, as Megatron-Bridge's and NeMo's recipes and the Megatron-LM README's H100 runs train
    # (--tp-comm-overlap; Megatron-Core's bare default is off).
    Option("tp_overlap", "flag", "Tensor-parallel communication overlapped with the matmuls in "
           "the estimate (Megatron's --tp-comm-overlap, as its published recipes run; "
           "--no-tp-overlap: exposed).", True),
    Option("async_tp", "flag", "PyTorch's async tensor parallelism (torch.compile's "
           "micro-pipelining, torchtitan's enable_async_tensor_parallel): the estimate hides the "
           "forward's tensor-parallel collectives, not the backward's.", False),
    Option("fp8_recipe", "choice", "With --dtype fp8: how the matmuls are scaled, and so what "
           "quantising their operands moves: tensorwise (Transformer Engine's current scaling, "
           "the default), delayed, rowwise (torchao), blockwise (DeepSeek-V3) or mxfp8 "
           "(Blackwell, CDNA 4).", None,
           ("tensorwise", "delayed", "rowwise", "blockwise", "mxfp8")),
    Option("lora_rank", "gen", "LoRA adapters of rank R on every matrix of the layers: only they "
           "train (0: none).", 0, metavar="R"),
    Option("qlora", "flag", "With --lora-rank: the frozen base in 4-bit NF4 (QLoRA).", False),
    Option("fp8", "flag", "fp8 GEMMs (Transformer Engine): fp8 weight copies, 8-bit GEMM inputs "
           "kept for backward.", False),
    Option("offload_optimizer", "flag", "Optimizer state in host memory (ZeRO-Offload).", False),
    Option("zero3_buffer", "flag", "With --zero 3: count the gathered largest module "
           "(DeepSpeed's estimator).", False),
    # flex by default: DeepEP (or its HybridEP) is what Megatron-Bridge's MoE recipes and the
    # Megatron-MoE model zoo run; Megatron-Core's own default is alltoall.
    Option("dispatcher", "choice", "How routed tokens reach their experts: flex (DeepEP or "
           "Hybrid-EP, as most published MoE benchmarks run: a token goes once to each other "
           "node and each rank its experts sit on), alltoall (Megatron-Core's default: every "
           "copy) or allgather.", "flex", ("flex", "alltoall", "allgather")),
    Option("routing", "choice", "Where a token's routed copies land, for the dispatch's "
           "traffic: uniform (a balanced router, or Megatron-Core's forced balancing) or "
           "contiguous (k consecutive experts, NeMo AutoModel's fake_balanced_gate).", "uniform",
           ("uniform", "contiguous")),
    Option("moe_overlap", "flag", "Hide the expert dispatch behind another micro-batch's compute "
           "(Megatron-Core's 1F1B all-to-all overlap: off by default there, on in "
           "Megatron-Bridge's MoE recipes).", False),
    Option("compile", "flag", "Fused element-wise kernels (norms, activation times gate, rotary), "
           "as Transformer Engine and torch.compile run them; --no-compile: eager PyTorch, each "
           "op its own kernel moving its tensors (torchtitan without compile).", True),
    Option("cuda_graph", "flag", "The whole step replayed as one CUDA graph (Megatron-Core's "
           "--cuda-graph-impl full_iteration): no host time to issue its kernels. Without it "
           "the device waits where the host issues them slower than they run (small layers, "
           "many local experts).", False),
    Option("capacity_factor", "amount", "MoE capacity factor: the all-to-all's padding (1, the "
           "default: dropless).", metavar="F"),
    # ----------------------------------------------------------------------- training runs
    Option("mfu", "share", "Model FLOPs utilisation: the sustained share of peak, 0.4 or 40% "
           "(above 0, at most 1).", metavar="F"),
    Option("days", "amount", "A deadline instead of --count: the fewest devices that finish in "
           "N days.", metavar="N"),
    Option("tokens_per_second", "amount", "Measured training tokens per second (all devices "
           "together unless --per-device).", metavar="T"),
    Option("per_device", "flag", "--tokens-per-second is per device.", False),
    Option("step_time", "amount", "Measured seconds per training step (with --global-batch).",
           metavar="S"),
    Option("top", "count", "How many plans to show.", 5, metavar="K"),
    # ------------------------------------------------------------------- one attention op
    _length("n", "Keys (the sequence length); 8k = 8,192."),
    Option("d_k", "count", "Query/key width per head.", metavar="K"),
    Option("d_v", "count", "Value width per head.", metavar="V"),
    _length("m", "Queries (e.g. a decoder's target length in cross-attention). Default: n."),
    Option("heads", "count", "Heads H; totals are H x per head.", 1, metavar="H"),
    # ------------------------------------------------------------------------------ serving
    _length("prompt", "Prompt tokens per request, processed by the prefill; k = 1024."),
    Option("gen", "gen", "Generated tokens per request: one decode step each; k = 1024; 0 "
           "counts the prompt only.", 256, metavar="N"),
    Option("kv_cache_dtype", "choice", "dtype of the KV cache (vLLM's --kv-cache-dtype): auto "
           "(the model's, bf16), bf16, fp16, fp32, fp8 / fp8_e4m3 / fp8_e5m2 (per-tensor "
           "scales), int8; serve also takes vLLM's fp8_ds_mla / nvfp4_ds_mla (DeepSeek's MLA "
           "layouts) and nvfp4 (½ byte + an fp8 scale per 16).", "auto", KV_CACHE_DTYPES,
           aliases=("kv_dtype",)),
    Option("state_dtype", "choice", "dtype of recurrent layers' states (Hugging Face keeps them "
           "in fp32).", "fp32", tuple(d for d in DTYPE_BITS if d != "int4")),
    Option("weights_dtype", "choice", "How weights are stored: a dtype (int8, fp8, int4: "
           "weight-only quantisation) or a scaled format (nvfp4, mxfp4, fp8-tensor, fp8-block) "
           "with its scales. Default: as the checkpoint stores them (config.json's "
           "quantization_config, a preset's checkpoint), else bf16.", None, WEIGHT_FORMATS),
    Option("experts_dtype", "choice", "How routed experts are stored (gpt-oss: mxfp4). Default: "
           "--weights-dtype.", None, WEIGHT_FORMATS),
    Option("language_model_only", "flag", "Load a multimodal model's language model alone, "
           "without its vision tower (vLLM's --language-model-only; 0.10 and 0.11: "
           "--limit-mm-per-prompt with image and video 0). Default: the tower is loaded, as "
           "vLLM loads it when images are allowed.", False),
    Option("max_batch", "flag", "Serve the largest batch whose weights and KV cache fit the "
           "devices (needs --accelerator).", False),
    Option("engine", "text", "The serving engine (flopcalc/engines/registry.py): vllm (its "
           "capacity arithmetic is vLLM 0.33.0's blocks), sglang (adds its token pool, "
           "max_total_num_tokens, with SGLang's own options below) or trtllm (takes vLLM's); "
           "each with its per-step overhead under load. vllm==X.Y takes that release's "
           "defaults and profiling run (0.6, 0.8, 0.10, 0.11, 0.33); sglang==X that release's arithmetic "
           "(0.4.9, 0.5.5, 0.5.23; hybrid Mamba / linear-attention models from 0.5.5).", "vllm",
           metavar="NAME"),
    _length("max_model_len", "Longest request the engine admits (--max-model-len). Default: the "
            "model's context."),
    Option("gpu_memory_utilization", "share", "Share of each device's memory the engine takes. "
           "Default: the engine version's (vLLM 0.33: 0.92; --engine vllm==0.10: 0.9).",
           metavar="F"),
    Option("block_size", "count", "Tokens per KV block. Default: 16 (64 for DeepSeek's sparse "
           "MLA and for --kv-cache-dtype fp8_ds_mla: FlashMLA-sparse's pages); hybrid models "
           "grow it to fit a state page.", metavar="N"),
    Option("max_num_batched_tokens", "count", "Tokens per engine step (chunked prefill); window "
           "layers keep room for the steps in flight. Default: the engine version's (vLLM 0.33: "
           "8192; older ones by device, and without chunked prefill max(max_model_len, 2048)).",
           metavar="N"),
    Option("max_num_seqs", "count", "Sequences the scheduler runs at once. Default: the engine "
           "version's (vLLM 0.33: 1024).", metavar="N"),
    Option("async_scheduling", "flag", "Async scheduling: one more step in flight (window layers "
           "keep 2 x max_num_batched_tokens more).", True),
    Option("prefix_caching", "flag", "Prefix caching (recurrent layers then keep states in align "
           "mode: 3 blocks per request and group).", True),
    Option("hybrid_kv_cache_manager", "flag", "The hybrid KV cache manager (off: window and "
           "chunked layers cache every token).", True),
    Option("mamba_cache_dtype", "choice", "dtype of recurrent layers' conv states (auto: the "
           "model's).", "auto", STATE_DTYPES),
    Option("mamba_ssm_cache_dtype", "choice", "dtype of their SSM / recurrent states (auto: the "
           "conv dtype; vLLM's Nemotron-H defaults to fp32).", "auto", STATE_DTYPES),
    Option("gdn_prefill_backend", "choice", "Gated DeltaNet prefill kernel (auto: FlashInfer on "
           "H100/H200/B200, which keeps a prefill checkpoint block).", "auto",
           ("auto", "flashinfer", "triton")),
    Option("mxfp4_backend", "choice", "vLLM's MXFP4 MoE kernels, which pad the experts as they "
           "load (auto: its choice for --accelerator; Marlin without one).", "auto",
           ("auto", "marlin", "triton", "flashinfer-sm90", "flashinfer-sm100")),
    Option("max_loras", "count", "LoRA adapters in one batch (vLLM --max-loras; turns LoRA "
           "on): the adapter slots it reserves on each device come out of the cache.",
           metavar="N"),
    Option("max_lora_rank", "count", "Largest adapter rank (vLLM --max-lora-rank: 1, 8, 16, 32, "
           "64, 128, 256, 320 or 512; default 16 with LoRA on).", metavar="R"),
    Option("max_cpu_loras", "count", "Adapters kept in host memory (vLLM --max-cpu-loras; at "
           "least --max-loras; host memory only).", metavar="N"),
    Option("kv_memory", "text", "Bytes per device for the cache, as the engine logs 'Available "
           "KV cache memory' (one value, or one per pipeline stage, comma-separated). Default: "
           "estimated.", metavar="BYTES"),
    Option("kv_blocks", "count", "The engine's block count (num_gpu_blocks) instead of its "
           "memory.", metavar="N"),
    _length("shared_prefix", "Tokens every request shares (a system prompt): its blocks are "
            "held once and its prefill skipped."),
    Option("draft", "text", "Speculative decoding: a draft MODEL, or mtp (the model's own "
           "multi-token-prediction modules).", metavar="MODEL"),
    Option("draft_tokens", "count", "Draft tokens per step (num_speculative_tokens).", 1,
           metavar="K"),
    Option("acceptance", "share", "Probability that the target accepts a draft token (0.7 or "
           "70%).", metavar="A"),
    Option("compute_efficiency", "share", "Share of the peak the estimate assumes. Default: the "
           "efficiency preset's matmul share x 0.85.", metavar="F"),
    Option("memory_efficiency", "share", "Share of the memory bandwidth the estimate assumes. "
           "Default: the efficiency preset's typical share.", metavar="F"),
    Option("concurrency", "count_or", "Users in a closed loop (vllm bench serve "
           "--max-concurrency), or max: as many as the cache and --max-num-seqs hold (offline "
           "throughput). Needs --prompt.", choices=("max",), metavar="N|max"),
    Option("request_rate", "amount", "Poisson arrivals, requests/s (open loop). Needs --prompt.",
           metavar="R"),
    Option("requests", "count", "Requests simulated per replica. Default: 10 x concurrency, at "
           "most max(2,000, 2 x concurrency).", metavar="N"),
    Option("random_state", "gen", "Random state of the Poisson arrivals (and of the lengths, "
           "with --range-ratio): the same number draws the same arrivals.", 0, metavar="N"),
    Option("range_ratio", "amount", "Lengths drawn per request as vllm bench serve's random "
           "dataset draws them (its --random-range-ratio): prompts uniform over "
           "[P(1-R), P(1+R)], outputs over [G(1-R), G(1+R)]; below 1. Default: fixed lengths.",
           metavar="R"),
    Option("pareto", "flag", "Search tp x dp (and ep) layouts of --count devices and "
           "concurrencies: the front of tokens/s per device vs per user.", False),
    Option("board_watts", "amount", "Board power per device in watts, for joules per output "
           "token under load. Default: the accelerator preset's TDP (its datasheet).",
           metavar="W"),
    Option("prefill_devices", "count_or", "Disaggregated serving: devices of --count in the "
           "prefill pool (whole replicas); the rest decode. auto: the split with the most "
           "tokens/s.", choices=("auto",), metavar="N|auto"),
    Option("mem_fraction_static", "share", "SGLang: share of the device for weights and the "
           "token pool. Default: SGLang's rule by the device's memory, the chunk, CUDA graphs "
           "and tp.", metavar="F"),
    Option("page_size", "count", "SGLang: tokens per page; the pool is whole pages. Default: 1.",
           metavar="N"),
    Option("chunked_prefill_size", "count", "SGLang: tokens per prefill chunk. Default: by the "
           "device's memory (8192 on 80 GB).", metavar="N"),
    Option("max_running_requests", "count", "SGLang: the request pool. Default: "
           "min(max(tokens / context · 512, 2048), 4096).", metavar="N"),
    _length("context_length", "SGLang: the longest request (--context-length). Default: the "
            "model's context."),
    Option("max_total_tokens", "count", "SGLang: a ceiling on the token pool "
           "(--max-total-tokens). Default: none, the memory decides.", metavar="N"),
)

OPTIONS: dict[str, Option] = {o.name: o for o in _ALL}
assert len(OPTIONS) == len(_ALL), "an option declared twice"
assert all(o.type in TYPES for o in _ALL), "an option of a type Option does not parse"

# Why a command gives an option another default (the reason travels with the option).
CAUSAL = ("the commands that predict a time, a throughput or an MFU count the pairs the kernels "
          "compute; the counting commands keep the source documents' and PyTorch's full count")
UNKNOWN = "the estimate takes the likeliest value and the interval every value that works"


def pick(*names: str) -> tuple[Option, ...]:
    """The declared options of these names, in this order."""
    return tuple(OPTIONS[n] for n in names)
