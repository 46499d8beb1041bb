"""Measured serving runs as `flopcalc serve` inputs under load, and what each source measured.

Every case of the shared reference file (`serving-performance.json`: MLPerf Inference
v4.1-v5.1, TensorRT-LLM's DeepSeek-R1 guides, SGLang's disaggregated DeepSeek deployment,
speculative decoding, and others) that flopcalc can express gets the options its source
states: the model, dtypes, device, tensor/expert parallelism, engine, lengths and concurrency.
A figure is compared when the source states it. What flopcalc cannot express is listed with
the reason (not predicted):

- MLPerf runs: the dataset's input and output lengths are not stated in the logs (variable
  lengths; a distribution the load model does not take yet);
- speculative decoding whose acceptance has no published figure (EAGLE drafts, draft models);
- disaggregated prefill/decode pools and DP-attention ranks of multi-node deployments;
- a run whose engine is not vLLM, SGLang or TensorRT-LLM (gpt-fast).

    python tests/serving_runs.py            # the table for docs/validation-serving.md

The ranges are the load model's (low, high); "inside" when the measured figure lies in them;
error = estimate / measured − 1.

Development and held-out halves, fixed by source before any constant was revisited: a case
whose source is NVIDIA's TensorRT-LLM repository (its DeepSeek-R1 guides and its issue
tracker) is in the development half, the one step-model constants may be checked against;
every other source (InferenceX, tt-inference-server, MLPerf, SGLang's blog, and whatever is
added later) is held out: nothing is tuned on it, and its accuracy is reported apart.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path("/work/shared/reference/serving-performance.json")
LOCAL = ROOT / "tests" / "data" / "serve" / "serving-performance.json"

# Qwen2.5-72B-Instruct's config.json (hidden 8192, 80 layers, 64 heads, 8 KV heads,
# intermediate 29568, vocab 152064, qkv bias) on the Llama 3.1 70B preset's skeleton.
QWEN25_72B = ["d_ff=29568", "vocab_size=152064", "bias.qkv=true", "max_seq_len=32768"]

DSR1_FP8_H200 = dict(accelerator="h200", weights_dtype="fp8-block", compute_dtype="fp8")
# The B200 efficiency preset has no fp4 matmul share: the idle-latency section needs one
# (given as the bf16 share x 0.85); the load model falls back to the bf16 share itself.
DSR1_FP4_B200 = dict(accelerator="b200", weights_dtype="nvfp4", compute_dtype="fp4",
                     compute_efficiency="66%")


DEVELOPMENT_SOURCE = "NVIDIA/TensorRT-LLM"


def half(case: dict) -> str:
    """'development' or 'held-out' for a case of the reference file, by its source's
    repository (the rule is fixed: see the module's docstring)."""
    return "development" if case.get("source", {}).get("repo") == DEVELOPMENT_SOURCE \
        else "held-out"


@dataclass
class Case:
    id: str
    model: str
    options: dict[str, Any]
    # (figure name, measured value, getter of (low, estimate, high) from the performance JSON)
    figures: list[tuple[str, float, Callable[[dict], tuple[float, float, float]]]]


def mean(key: str, scale: float = 1.0) -> Callable[[dict], tuple[float, float, float]]:
    return lambda p: tuple(p[key][e] * scale for e in ("low", "estimate", "high"))  # type: ignore


def pct(key: str, q: str, scale: float = 1.0) -> Callable[[dict], tuple[float, float, float]]:
    ends = ("low", "estimate", "high")
    return lambda p: tuple(p[key][q][e] * scale for e in ends)  # type: ignore


def cases(ref: dict) -> tuple[list[Case], list[tuple[str, str]]]:
    by_id = {c["id"]: c for c in ref["cases"]}
    out: list[Case] = []
    for dtype, hw, opts in (("fp8", "h200", DSR1_FP8_H200), ("fp4", "b200", DSR1_FP4_B200)):
        for prompt in (1600, 8192):
            cid = f"trtllm_issue5929_dsr1_{dtype}_{hw}x8_b1_in{prompt}"
            m = by_id[cid]["measured"]
            out.append(Case(cid, "deepseek-r1", dict(
                opts, tp=8, engine="trtllm", prompt=prompt, gen=600, concurrency="1",
                max_model_len=prompt + 600), [
                ("TPOT p50 (ms)", m["itl_p50_ms_if_seconds"], pct("tpot_seconds", "p50", 1e3)),
                ("TTFT p50 (ms)", m["ttft_p50_ms_if_seconds"], pct("ttft_seconds", "p50", 1e3))]))
    for c in (4, 16, 32):
        cid = f"inferencex_i870_b200x8_dsr1_fp4_sglang_c{c}_1k1k"
        m = by_id[cid]["measured"]
        out.append(Case(cid, "deepseek-r1", dict(
            DSR1_FP4_B200, tp=8, ep=8, engine="sglang", prompt=1024, gen=1024,
            concurrency=str(c), max_model_len=2048), [
            ("output tok/s/GPU", m["output_tokens_per_s_per_gpu"],
             mean("output_tokens_per_second_per_gpu")),
            ("TTFT mean (ms)", m["ttft_mean_ms"], mean("ttft_seconds", 1e3))]))
    cid = "trtllm_dsr1_b200x8_fp4_maxtput_fp16kv"
    m = by_id[cid]["measured"]
    # attention data parallelism (enable_attention_dp): 8 attention replicas of one device,
    # each with max_batch_size 384 and max_num_tokens 1536, the experts over all 8 (ep 8)
    out.append(Case(cid, "deepseek-r1", dict(
        DSR1_FP4_B200, tp=1, dp=8, ep=8, engine="trtllm", prompt=1024, gen=2048,
        concurrency="3072", max_num_seqs=384, max_num_batched_tokens=1536, max_model_len=3072,
        gpu_memory_utilization="0.93"), [
        ("output tok/s", m["output_tokens_per_s"], mean("output_tokens_per_second"))]))
    for prompt in (128, 2048):
        cid = f"ttis_i143_h100x2_qwen25_72b_c1_{prompt}_128"
        m = by_id[cid]["measured"]
        out.append(Case(cid, "llama-3.1-70b", dict(
            accelerator="h100", tp=2, engine="vllm", prompt=prompt, gen=128, concurrency="1",
            max_model_len=4096, set=QWEN25_72B), [
            ("TTFT mean (ms)", m["ttft_mean_ms"], mean("ttft_seconds", 1e3)),
            ("TPOT mean (ms)", m["tpot_mean_ms"], mean("tpot_seconds", 1e3))]))
    # MTP with 3 next-token layers at batch 1; acceptance not stated: 0.85, the low end of
    # DeepSeek-V3's report (arXiv:2412.19437 §5.4.3: "the acceptance rate of the second token
    # prediction ranges between 85% and 90%"). TensorRT-LLM's MoE layout tp x ep (ep 2 / 4)
    # holds 1/8 of the experts per device, as --tp 8 splits them.
    for cid, opts in (("trtllm_dsr1_b200x8_fp4_minlatency_mtp3", DSR1_FP4_B200),
                      ("trtllm_dsr1_h200x8_fp8_minlatency_mtp3", DSR1_FP8_H200)):
        m = by_id[cid]["measured"]
        out.append(Case(cid, "deepseek-r1", dict(
            opts, tp=8, engine="trtllm", prompt=1024, gen=2048, concurrency="1",
            max_model_len=3072, draft="mtp", draft_tokens=3, acceptance="0.85"), [
            ("output tok/s per user", m["output_tokens_per_s_per_user"],
             mean("output_tokens_per_second_per_user"))]))
    done = {c.id for c in out}
    skipped = []
    for c in ref["cases"]:
        if c["id"] in done:
            continue
        why = ("speculative decoding without a stated or published acceptance"
               if c["category"] == "speculative_decoding" else
               "MLPerf dataset lengths are not stated (variable lengths)"
               if "mlperf" in c.get("tags", []) else
               "disaggregated pools / DP-attention ranks are not modelled"
               if c["category"] == "disaggregated" or "per_rank" in json.dumps(c["measured"]) else
               "gpt-fast is not a modelled engine" if c["id"].startswith("gptfast") else
               "variable (ShareGPT) lengths" if "sharegpt" in c["id"] else "not expressible")
        skipped.append((c["id"], why))
    return out, skipped


def predict(case: Case) -> dict:
    import flopcalc

    report = flopcalc.serve(case.model, **case.options)
    return report.to_dict()["performance"]


def rows(ref: Optional[dict] = None) -> tuple[list[dict], list[tuple[str, str]]]:
    ref = ref or json.loads((REFERENCE if REFERENCE.exists() else LOCAL).read_text())
    halves = {c["id"]: half(c) for c in ref["cases"]}
    cs, skipped = cases(ref)
    out = []
    for c in cs:
        perf = predict(c)
        for name, measured, get in c.figures:
            lo, est, hi = get(perf)
            lo, hi = min(lo, hi), max(lo, hi)
            out.append(dict(id=c.id, half=halves[c.id], figure=name, measured=measured,
                            low=lo, estimate=est, high=hi, inside=lo <= measured <= hi,
                            error=est / measured - 1))
    return out, skipped


def summary(rs: list[dict]) -> dict[str, float]:
    return {"figures": len(rs),
            "median_abs_error": statistics.median(abs(r["error"]) for r in rs),
            "inside": sum(r["inside"] for r in rs) / len(rs),
            "median_width": statistics.median(r["high"] / r["low"] for r in rs)}


def line(name: str, rs: list[dict]) -> str:
    s = summary(rs)
    return (f"{name}: {s['figures']} figures, median |error| {s['median_abs_error']:.0%}, "
            f"{s['inside']:.0%} inside [low, high], median width (high / low) "
            f"{s['median_width']:.2f}x")


def table(rs: list[dict], skipped: list[tuple[str, str]]) -> str:
    lines = ["| half | case | figure | measured | low | estimate | high | inside | error |",
             "|---|---|---|--:|--:|--:|--:|:-:|--:|"]
    for r in sorted(rs, key=lambda r: r["half"]):
        lines.append(f"| {r['half']} | {r['id']} | {r['figure']} | {r['measured']:,.4g} | "
                     f"{r['low']:,.4g} | {r['estimate']:,.4g} | {r['high']:,.4g} | "
                     f"{'yes' if r['inside'] else 'no'} | {r['error']:+.0%} |")
    lines += [""]
    for name in ("development", "held-out"):
        part = [r for r in rs if r["half"] == name]
        if part:
            lines += [f"- {line(name, part)}"]
    lines += [f"- {line('all', rs)}", "", "Not predicted:", ""]
    lines += [f"- {cid}: {why}" for cid, why in skipped]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    rs, skipped = rows()
    print(table(rs, skipped))
