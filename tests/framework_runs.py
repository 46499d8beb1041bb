"""torchtitan's and NeMo AutoModel's published runs (tests/data/training/frameworks.json) as
`flopcalc step` inputs: each layout as the source gives it, flopcalc's defaults for what it
leaves open, and the measured step time from its tokens/s per GPU (AutoModel: its step seconds).

    python tests/framework_runs.py          # docs/validation-training.md's section (error per run)

Halves, fixed before any prediction was looked at: every torchtitan row is `development`, every
NeMo AutoModel row `held-out`. A change made because of these runs may be judged on the
torchtitan rows only; the AutoModel rows say whether it carries over.

How a source's words become options (the source of each in SOURCES.md and frameworks.json):
- FSDP (FSDP2's fully_shard over the data-parallel ranks) is `--zero 3`; dp = GPUs / (tp·pp·cp)
  (torchtitan and AutoModel shard over data-parallel × context-parallel ranks; flopcalc's ZeRO
  splits over dp, the closest it can say).
- float8 is `--dtype fp8` with the row's recipe (torchtitan before 2025 had only torchao's
  dynamic tensorwise scaling); MXFP8 is `--fp8-recipe mxfp8`.
- Activation checkpointing: torchtitan's per-op selective AC is `--recompute op`, full AC
  (AutoModel's `activation_checkpointing: true` wraps each layer) `--recompute full`.
- TP runs with sequence parallelism where the source does (torchtitan's SequenceParallel
  norms; AutoModel's `sequence_parallel` key); Async TP (PyTorch's, in both frameworks) is
  `--async-tp`, vanilla TP `--no-tp-overlap`.
- AutoModel's MoE benchmark configurations route with `fake_balanced_gate: true` (each
  token to k consecutive experts): `--routing contiguous`.
- LoRA rows (AutoModel's fine-tuning table, `kind` "lora") are `--lora-rank` 16 on every
  projection, as their configs set (`dim: 16`, every linear / '*_proj').
- Gradients are reduced in fp32 (`--grad-fp32`): torchtitan's mixed_precision_reduce defaults
  to "float32" (torchtitan/config_manager.py line 227 at 820504e), AutoModel's MoE parallelizer
  sets reduce_dtype=torch.float32 (nemo_automodel/components/moe/parallelizer.py line 126 at
  89e3a9f).
- torchtitan's H100s are Grand Teton's 500 W HBM2e parts whose clock is unpublished: each run is
  predicted at the SXM peak and at 835 TFLOP/s and the interval joined (as tests/training_runs.py
  does for its torchtitan run); the estimate is the one at the midpoint of the two clocks
  (912.25 TFLOP/s), the page saying only that the peak lies between them.
- torchtitan's attention is PyTorch's scaled_dot_product_attention (torchtitan
  models/llama3/model.py at 820504e), whose flash backend is FlashAttention-2 and which took it
  on Hopper until cuDNN's kernel became the default (PyTorch 2.9, pytorch/pytorch#162073; both
  pages' runs are on earlier nightlies): `--attention-kernel fa2` on H100 and H200. On GB200
  no FlashAttention-2 share is known: the file's default kernel.
- torch.compile as each row states it (`compile`, every row here states it): compiled runs
  `--compile` (fused element-wise kernels), eager ones `--no-compile`.
- A micro-batch under pipeline parallelism and virtual stages are left open where the source
  does not state them.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "training" / "frameworks.json"

# AutoModel's "Llama3 70B" LoRA rows fine-tune Llama-3.3-70B-Instruct: Llama 3.1 70B's
# architecture (the same config.json dimensions), so its preset
PRESETS = {"Llama 3.1 8B": "llama-3.1-8b", "Llama3 8B": "llama-3.1-8b",
           "Llama 3.1 70B": "llama-3.1-70b", "Llama3 70B": "llama-3.1-70b",
           "Llama 3.1 405B": "llama-3.1-405b",
           "Llama 4 Scout": "llama-4-scout", "DeepSeek V3 671B": "deepseek-v3",
           "Kimi K2": "kimi-k2", "Qwen3 MoE 30B": "qwen3-30b-a3b", "GPT-OSS 20B": "gpt-oss-20b",
           "GPT-OSS 120B": "gpt-oss-120b"}
MOE = {"llama-4-scout", "deepseek-v3", "kimi-k2", "qwen3-30b-a3b", "gpt-oss-20b", "gpt-oss-120b"}
# Grand Teton's H100 (tests/training_runs.py GRAND_TETON) with the SXM part's dense fp8 peak,
# twice its bf16 one (NVIDIA H100 datasheet, FP8 3,958* / 2 = 1,979 TFLOPS; the same silicon):
# its power-capped clock scales both alike, so the lower bound is 2 x 835 = 1,670 TFLOP/s
GRAND_TETON = {"title": "H100 96GB HBM2e, 500 W (Grand Teton)", "vendor": "NVIDIA",
               "source": "torchtitan benchmarks/llama3_h100_202412_torchtitan.md lines 9-15: "
               "H100 96GB HBM2e, 2.4 TB/s, 500 W; peak between SXM and NVL (footnote 2)",
               "memory_bytes": "96GB", "memory_bandwidth": "2.4TB",
               "peak_flops": {"bf16": "989.5T", "fp8": "1979T"}}
RECOMPUTE = {"selective (per op)": "op", "full": "full", "none": "none"}
# AutoModel's page writes EP '-' for gpt-oss; the configs it names run DeepEP with ep_size 8
# (gptoss_20b_te_deepep.yaml) and 64 (gptoss_120b_te_deepep.yaml at 36044ad): frameworks.json
# `config`
CONFIG_EP = {"GPT-OSS 20B": 8, "GPT-OSS 120B": 64}


def runs() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text())["runs"]


def half(r: dict[str, Any]) -> str:
    return "development" if r["framework"] == "torchtitan" else "held-out"


def measured(r: dict[str, Any]) -> tuple[float, float]:
    """Step seconds, ± half the last digit of the published figure as the JSON keeps it (a
    trailing zero, 15.00 s, is lost: ± 0.05 there, a wider range than the page's)."""
    if r.get("step_time_s"):
        text = repr(r["step_time_s"])
        ulp = 10 ** -(len(text.split(".")[1]) if "." in text else 0)
        return r["step_time_s"] - ulp / 2, r["step_time_s"] + ulp / 2
    tokens = r["global_batch"] * r["seq"] / r["gpus"]
    per = r["tokens_per_second_per_gpu"]
    text = repr(per)
    ulp = 10 ** -(len(text.split(".")[1]) if "." in text else 0)
    return tokens / (per + ulp / 2), tokens / (per - ulp / 2)


def options(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The `step` options of a run: one set, or three (the unknown Grand Teton clock: the
    estimate's midpoint first, then the two ends whose intervals are joined)."""
    tp, pp, cp = r["tp"], r["pp"], r["cp"]
    opts: dict[str, Any] = dict(
        seq=r["seq"], tp=tp, pp=pp, cp=cp, dp=r["gpus"] // (tp * pp * cp),
        global_batch=r["global_batch"], zero=3, dropout="off", grad_fp32=True,
        recompute=RECOMPUTE[r["activation_checkpointing"]],
        sequence_parallel=bool(r["sequence_parallel"]))
    if r["compile"] is not None:  # (every row states it; None would keep the default)
        opts["compile"] = bool(r["compile"])
    if tp > 1:
        opts["tp_overlap"] = bool(r["async_tp"])
        if r["async_tp"]:
            opts["async_tp"] = True
    if r["micro_batch"]:
        opts["micro_batch"] = r["micro_batch"]
    elif pp == 1:  # no pipeline and no accumulation stated: the local batch is one micro-batch
        opts["micro_batch"] = r["local_batch"]
    if r["vp"]:
        opts["vp"] = r["vp"]
    if r["pp_schedule"] and "nterleaved" in r["pp_schedule"]:
        opts["schedule"] = "interleaved"
    ep = r["ep"] or CONFIG_EP.get(r["model"])
    if ep and ep > 1:
        opts["ep"] = ep
        opts["dispatcher"] = "flex" if r["dispatcher"] == "deepep" else "alltoall"
        if "fake_balanced_gate true" in (r["config"] or ""):
            opts["routing"] = "contiguous"
    if r["lora_rank"]:
        opts["lora_rank"] = r["lora_rank"]
    if r["dtype"] in ("fp8", "mxfp8"):
        opts["dtype"] = "fp8"
        opts["fp8_recipe"] = r["float8_recipe"]
    acc = r["accelerator"]
    if r["framework"] == "torchtitan" and not acc.startswith("GB200"):
        opts["attention_kernel"] = "fa2"
    if acc.startswith("H100 96GB"):
        opts.update(accelerator=GRAND_TETON, network="dgx-h100")
        fp8 = opts.get("dtype") == "fp8"
        # the estimate's run first (the midpoint clock), then the two ends to join
        return [{**opts, "peak": "1824.5T" if fp8 else "912.25T"}, opts,
                {**opts, "peak": "1670T" if fp8 else "835T"}]
    if acc.startswith("H200"):
        opts.update(accelerator="h200", network="dgx-h100")  # 8 NVLink GPUs, 400 Gb/s per GPU
    elif acc.startswith("GB200"):
        opts.update(accelerator="gb200")
    else:
        opts.update(accelerator="h100-sxm", network="dgx-h100")
    return [opts]


def predict(r: dict[str, Any], tmp: Path) -> dict[str, Any]:
    import yaml

    import flopcalc.api  # noqa: F401
    from flopcalc.commands import COMMANDS
    from flopcalc.errors import FlopcalcError

    steps = []
    for opts in options(r):
        if isinstance(opts["accelerator"], dict):
            path = tmp / "grand-teton.yaml"
            path.write_text(yaml.safe_dump(opts["accelerator"]))
            opts = {**opts, "accelerator": str(path), "efficiency": "h100-sxm"}
        try:
            steps.append(COMMANDS["step"](PRESETS[r["model"]], **opts).to_dict())
        except FlopcalcError as exc:
            return {"refused": str(exc)}
    s = [x["time"]["step_seconds"] for x in steps]
    return {"low": min(x["low"] for x in s), "estimate": s[0]["estimate"],
            "high": max(x["high"] for x in s), "report": steps[0]}


def evaluate(rows: Optional[list[dict[str, Any]]] = None) -> list[dict[str, Any]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows if rows is not None else runs():
            lo, hi = measured(r)
            mid = (lo + hi) / 2
            p = predict(r, Path(tmp))
            row = {"id": r["id"], "run": r, "measured": mid, "measured_range": (lo, hi),
                   "half": half(r), "moe": PRESETS[r["model"]] in MOE,
                   "lora": bool(r["lora_rank"])}
            if "refused" in p:
                row["refused"] = p["refused"]
            else:
                row.update(low=p["low"], estimate=p["estimate"], high=p["high"],
                           inside=p["low"] <= hi and lo <= p["high"],
                           error_pct=100 * (p["estimate"] / mid - 1))
            out.append(row)
    return out


def summary(rows: list[dict[str, Any]], title: str = "") -> str:
    """bridge_runs' summary with the pre-training and LoRA runs apart."""
    from tests.bridge_runs import GROUPS, summary as grouped

    return grouped(rows, title, GROUPS + (
        ("dense pre-training", lambda r: not r["moe"] and not r["lora"]),
        ("lora", lambda r: r["lora"])))


def main() -> None:
    from tests.bridge_runs import run_table

    rows = evaluate()
    print(run_table(rows))
    print()
    for name in ("development", "held-out"):
        print(summary([r for r in rows if r["half"] == name], f"{name}: "))
        print()
    print(summary(rows, "both halves: "))
    print()
    for name in dict.fromkeys(source(r["run"]) for r in rows):
        sel = [r for r in rows if source(r["run"]) == name]
        print(summary(sel).split("\n")[1].replace("all:", name + ":"))


def source(r: dict[str, Any]) -> str:
    """The page a torchtitan run comes from; AutoModel's pre-training or LoRA table."""
    if r["framework"] == "torchtitan":
        return "torchtitan " + r["source"]["path"].rsplit("/", 1)[-1]
    return f"NeMo AutoModel {'LoRA' if r['lora_rank'] else 'pre-training'}"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
