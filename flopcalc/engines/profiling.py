"""The memory vLLM's profiling run takes, per release line (`--engine vllm==X`), as the memory it
subtracts before sizing the cache: `available = ceil(memory × gpu_memory_utilization) −
(weights + torch peak of the profiling run + non-torch increase)` (V1:
`v1/worker/gpu_worker.py` determine_available_memory; V0 0.6: `worker/worker.py`
determine_num_available_blocks).

The profiling run (V1: `v1/worker/gpu_model_runner.py` profile_run; V0 0.6:
`worker/model_runner.py` profile_run) is a forward over max_num_batched_tokens tokens, then a
sampler warm-up over R = min(max_num_seqs, max_num_batched_tokens) rows of the vocabulary V
with top_k = V − 1 and top_p = 0.9 (V0: 0.99). The forward's activations are freed before the
sampler runs (only its hidden states stay), so the peak is
`max(forward, hidden states + sampler)`; the sampler's tensors scale with R × V and dominate
whenever V is large (gpt-oss-120b at R = 1024: 206M logits, 7.3 GiB on the PyTorch-native
path). Bytes per element of R × V below count every tensor live at the sampler's peak; which
path runs depends on the install (FlashInfer present or not), so a release line with two paths
gives an interval, the first path its point.

The memory outside torch's allocator each release counts, the device total it multiplies and
PyTorch's cuBLAS workspace are `engines.overheads`; the CUDA-graph estimate and the model
runner's persistent buffers vLLM 0.33 also subtracts are `engines.graphs`. Not modelled: an
extension's buffers (a KV connector).
"""

from __future__ import annotations

from typing import Optional

from ..records import dataclass

GiB = 1 << 30

# PyTorch's CUDA sort of an R×V fp32 tensor (R ≥ 128 rows: aten/src/ATen/native/cuda/
# SortStable.cu segmented_sort_pairs) holds, besides its outputs (values 4 B, int64 indices 8 B),
# an int64 buffer of reverse indices (8 B) and CUB's DeviceSegmentedRadixSort::SortPairs
# alternate key and value buffers (4 + 8 B): 32 B per element while it sorts.
SORT_BYTES = 4 + 8 + 8 + 4 + 8


@dataclass(frozen=True)
class SamplerPath:
    """One way a release's sampler warm-up runs: the bytes per element of R × V live at its
    peak beyond the model-dtype logits and their fp32 copy, the tensors counted, and when the
    engine takes it."""

    name: str
    extra: int  # bytes per logit beyond the model-dtype logits and the fp32 copy
    tensors: str
    when: str


@dataclass(frozen=True)
class ProfilingRun:
    """A vLLM release line's profiling run: its sampler paths (the first is the point
    estimate), the extra copies of the R sampled rows' hidden states, where it is in the
    source, and whether it subtracts a CUDA-graph estimate."""

    version: str
    source: str
    paths: tuple[SamplerPath, ...]
    hidden_copies: int  # R×d copies: the indexed last hidden states (+ torch.rand_like, 0.10+)


NATIVE_V1 = ("PyTorch-native top-k/top-p", "fp32 logits sorted: values 4 + int64 indices 8 + "
             "PyTorch's int64 reverse indices 8 + CUB's alternate keys 4 and values 8 while the "
             "sort runs (v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p; afterwards the "
             "masks, probabilities and scatter hold less)")
FLASHINFER = ("FlashInfer", "masked logits 4 + their softmax 4 (flashinfer_sample: "
              "top_k_top_p_sampling_from_logits masks top-k, then samples top-p from the "
              "probabilities)")


def _v1_pip_or_docker(line: str, release: str, measured: str = "") -> ProfilingRun:
    """A V1 release whose FlashInfer is an optional extra: the native sampler after
    `pip install vllm`; FlashInfer's where its sampler is taken (`measured`: what published
    runs of that release show)."""
    return ProfilingRun(
        line, f"{release} v1/worker/gpu_model_runner.py profile_run and _dummy_sampler_run, "
        "v1/sample/sampler.py Sampler.forward, v1/sample/ops/topk_topp_sampler.py",
        (SamplerPath(NATIVE_V1[0], SORT_BYTES, NATIVE_V1[1],
                     "pip install vllm (FlashInfer is the optional extra vllm[flashinfer])"
                     + measured),
         SamplerPath(FLASHINFER[0], 4 + 4, FLASHINFER[1],
                     "FlashInfer importable and VLLM_USE_FLASHINFER_SAMPLER not 0 "
                     "(TopKTopPSampler.forward_cuda)")), 2)


# llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md (vllm/vllm-openai:v0.11.0
# on an H100, 8,192 tokens, 1,024 sequences): torch peak increases 5.56 (Qwen3-0.6B), 4.76
# (Llama-3.1-8B), 5.64 (Qwen3-32B), 7.38 GiB (gpt-oss-20b/120b) are the native path's
# R·V·38 + hidden states + the 32 MiB cuBLAS workspace within 0.01 GiB; FlashInfer's 14 bytes
# per logit would be 2.9-4.6 GiB lower.
MEASURED_0_11 = ("; vLLM 0.11.0's Docker image measured so: five models' torch peak increases "
                 "on an H100 within 0.01 GiB of this path (llm-d/llm-d-benchmark "
                 "config_explorer/empirical-vllm-memory-results.md)")


RUNS: dict[str, ProfilingRun] = {
    "0.6": ProfilingRun(
        "0.6", "vLLM 0.6.0 worker/model_runner.py profile_run (max_num_seqs sequences, "
        "SamplingParams(top_p=0.99, top_k=V − 1)), model_executor/layers/sampler.py "
        "Sampler.forward and _apply_top_k_top_p",
        (SamplerPath(
            "PyTorch-native top-k/top-p", 4 + 8 + 1 + 4 + 4 + 1 + 8 + 4,
            "at its final gather: sorted logits 4 + int64 indices 8 + top-k mask 1 + "
            "probs_sort 4 + probs_sum (cumsum, a new tensor) 4 + top-p mask 1 + inverse "
            "indices (int64) 8 + the gathered logits 4 (the sort itself holds 32)",
            "V0 samples with FlashInfer only when VLLM_USE_FLASHINFER_SAMPLER=1 (off by "
            "default)"),), 1),
    "0.8": ProfilingRun(
        "0.8", "vLLM 0.8.0 v1/worker/gpu_model_runner.py profile_run and _dummy_sampler_run, "
        "v1/sample/sampler.py Sampler.forward, v1/sample/ops/topk_topp_sampler.py",
        (SamplerPath(NATIVE_V1[0], SORT_BYTES, NATIVE_V1[1],
                     "without FlashInfer, or with FlashInfer ≥ 0.2.3, which 0.8.0 turns off for "
                     "sampling (TopKTopPSampler.__init__)"),
         SamplerPath("FlashInfer < 0.2.3", 4, "the probabilities 4 (forward_cuda: softmax, "
                     "then rejection sampling; a failed rejection renormalises into new "
                     "tensors, not counted)", "an install with FlashInfer older than 0.2.3")),
        1),
    "0.10": _v1_pip_or_docker("0.10", "vLLM 0.10.1.1"),
    "0.11": _v1_pip_or_docker("0.11", "vLLM 0.11.0", MEASURED_0_11),
    "0.33": ProfilingRun(
        "0.33", "vLLM 0.33.0 v1/worker/gpu_model_runner.py profile_run and "
        "_dummy_sampler_run (the sampler twice: FlashInfer, then with a generator, which falls "
        "back to the native path), v1/sample/ops/topk_topp_sampler.py and topk_topp_triton.py",
        (SamplerPath("FlashInfer, then Triton top-k/top-p", 4 + 4,
                     "FlashInfer: masked logits 4 + softmax 4; the native pass masks in place "
                     "(apply_top_k_top_p_triton, a cached buffer of at most one row per SM, not "
                     "counted), then probabilities 4 + exponential noise 4",
                     "FlashInfer is a dependency of the wheel"),), 2),
}


@dataclass
class ProfilePeak:
    """The profiling run's torch peak on one device: the point estimate and its low and high
    ends (the sampler paths a release may take), with the parts and how."""

    point: int
    low: int
    high: int
    rows: int  # R = min(max_num_seqs, max_num_batched_tokens)
    forward: int  # the forward's activation estimate (given)
    hidden: int  # the hidden states kept while the sampler runs
    sampler: list[tuple[str, int, int]]  # (path, bytes per logit, bytes)
    how: list[str]


def run(version: Optional[str]) -> ProfilingRun:
    """The release line's profiling run (None: the current one, 0.33)."""
    return RUNS[version or "0.33"]


def bytes_per_logit(path: SamplerPath, logit_bytes: int) -> int:
    """The model-dtype logits (logit_bytes), their fp32 copy (none when the model computes in
    fp32: `logits.to(torch.float32)` returns the tensor itself) and the path's tensors."""
    return logit_bytes + (0 if logit_bytes == 4 else 4) + path.extra


def profile_peak(version: Optional[str], forward: int, tokens: int, max_num_seqs: int,
                 vocab: int, d_model: int, value_bytes: int = 2) -> ProfilePeak:
    """The torch peak of vLLM `version`'s profiling run on one device (a last pipeline stage:
    earlier stages do not sample): max(forward, hidden states + sampler warm-up), one figure per
    sampler path. `forward` is the caller's estimate of the forward's activation peak over
    `tokens` tokens; the logits are the full vocabulary on every tensor-parallel rank (vLLM V1
    all-gathers them)."""
    r = run(version)
    rows = min(max_num_seqs, tokens)
    # hidden states T×d kept, + the R rows indexed out (and their random copy, 0.10+)
    hidden = (tokens + r.hidden_copies * rows) * d_model * value_bytes
    sampler = [(p.name, bytes_per_logit(p, value_bytes),
                rows * vocab * bytes_per_logit(p, value_bytes)) for p in r.paths]
    peaks = [max(forward, hidden + s) for _, _, s in sampler]
    how = [f"profiling peak as vLLM {r.version} runs it ({r.source}): max(forward "
           f"{forward:,}, hidden states {hidden:,} + the sampler warm-up over R = "
           f"min(max_num_seqs, tokens) = {rows:,} rows × {vocab:,} logits)"]
    for (name, per, s), p in zip(sampler, r.paths):
        how.append(f"sampler, {name}: {per} bytes per logit = {value_bytes} model-dtype "
                   + ("" if value_bytes == 4 else "+ 4 fp32 copy ")
                   + f"+ {p.extra} ({p.tensors}) → {s:,} bytes ({s / GiB:.2f} GiB); when: "
                   f"{p.when}")
    return ProfilePeak(peaks[0], min(peaks), max(peaks), rows, forward, hidden, sampler, how)


# vLLM 0.33's CUDA-graph estimate and persistent buffers are `engines.graphs`; the lines up to
# 0.11 subtract neither.
NOT_COUNTED = ("not counted: an extension's buffers (a KV connector such as LMCache); the "
               "engine measures these: give --kv-memory for its own figure")
