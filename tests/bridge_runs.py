"""Megatron-Bridge's published runs (tests/data/training/megatron-bridge.json) as `flopcalc
step` inputs: each row's layout as the page gives it, flopcalc's defaults for what the page
does not state, and the measured step time from its tokens/s per GPU.

    python tests/bridge_runs.py              # docs/validation-training.md (error per run)
    python tests/bridge_runs.py development  # one half only (`half`: development, held-out)
    python tests/bridge_runs.py classes      # inside share and signed error per class of run

A row is predicted when its model has a preset (Nemotron 3 and DeepSeek-V4 do not) and its
precision is stated (25.09's tables do not say). The measured step time is
global batch × sequence / (GPUs × tokens/s per GPU), ± half the last digit of the figure.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "training" / "megatron-bridge.json"

PRESETS = {"LLAMA3_8B": "llama-3.1-8b", "LLAMA3_70B": "llama-3.1-70b",
           "LLAMA3.1_405B": "llama-3.1-405b", "DeepSeekV3": "deepseek-v3",
           "DeepSeekV3 (w/o MTP)": "deepseek-v3", "GPT OSS 120B": "gpt-oss-120b",
           "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
           "Kimi_K2": "kimi-k2"}
SYSTEMS = {"DGX-GB300": "gb300", "DGX-GB200": "gb200", "DGX-B300": "b300", "DGX-B200": "b200",
           "DGX-H100": "h100-sxm"}
# The page's precision names: the dtype the matmuls run in and the fp8 recipe.
PRECISIONS = {"BF16": ("bf16", None), "FP8": ("fp8", "tensorwise"),
              "FP8-CS": ("fp8", "tensorwise"), "MXFP8": ("fp8", "mxfp8"),
              "FP8-MX": ("fp8", "mxfp8"), "NVFP4": ("fp4", None)}


# The recompute modules of the pages' recipes (src/megatron/bridge/perf_recipes at 067f987df,
# `<model>_pretrain_<gpus>gpu_<system>_<precision>_config`, with the helpers they call): every
# row whose recipe sets a non-empty list (with recompute_granularity "selective"); the others
# recompute nothing there (no list, an empty one, or no granularity), except Llama 3 8B FP8 on
# H100's 5 of 32 whole layers (llama/h100/llama3.py line 87), taken as none.
RECIPE_MODULES = {
    ("DeepSeekV3", "DGX-B200", "MXFP8", 256): "mla_up_proj,mlp",  # b200/deepseek_v3.py:139
    ("DeepSeekV3", "DGX-B300", "MXFP8", 256): "mla_up_proj",  # b300/deepseek_v3.py:146
    ("DeepSeekV3", "DGX-GB200", "MXFP8", 256): "mla_up_proj",  # gb200/deepseek_v3.py:149
    ("DeepSeekV3 (w/o MTP)", "DGX-GB200", "BF16", 256): "mla_up_proj",  # gb200/...:45
    ("DeepSeekV3 (w/o MTP)", "DGX-GB200", "FP8-MX", 256): "mla_up_proj",  # gb200/...:149
    ("DeepSeekV3 (w/o MTP)", "DGX-GB300", "BF16", 256): "moe_act",  # gb300/deepseek_v3.py:46
    ("GPT OSS 120B", "DGX-B200", "BF16", 64): "layernorm,moe_act",  # b200/gpt_oss.py:39
    ("GPT OSS 120B", "DGX-GB200", "BF16", 64): "layernorm,moe_act",  # gb200/gpt_oss.py:195
    ("GPT OSS 120B", "DGX-H100", "BF16", 64): "layernorm,moe_act",  # h100/gpt_oss.py:39
    ("Kimi_K2", "DGX-GB300", "MXFP8", 256): "mla_up_proj",  # gb300/kimi_k2.py:161
}


# The expert all-to-all overlap (Megatron-Core's overlap_moe_expert_parallel_comm with
# delay_wgrad_compute: `--moe-overlap`) as each release's benchmark scripts set it, by release
# line, model, system and precision: Megatron-Bridge's scripts/performance workload base
# configs (`moe_a2a_overlap`, applied by utils/overrides.py `_set_moe_a2a_overlap_overrides`)
# at the tag of the container's month (25.11: v0.2.0, 26.02: v0.3.0, 26.04: v0.4.0, 26.06:
# v0.5.0; a dot release as its line), each row matched to the config of its layout (tp, pp,
# ep, micro-batch, global batch); 26.08: the perf_recipes at the pages' commit 067f987df, whose
# MXFP8 MoE recipes on GB200/GB300 call the full-iteration helpers that set it
# (qwen/common.py `_enable_hybridep_full_iteration_mxfp8`, deepseek/common.py
# `_enable_deepseek_full_iteration_mxfp8`, gpt_oss/common.py). Every other row runs without.
MOE_A2A_OVERLAP = {
    ("25.11", "Qwen3_235B_a22B", "DGX-B200", "FP8-MX"),  # QWEN3_235B_A22B_B200_FP8_MX_BASE
    ("25.11", "Qwen3_235B_a22B", "DGX-H100", "FP8-CS"),  # QWEN3_235B_A22B_H100_FP8_CS_BASE
    ("26.02", "Qwen3_235B_a22B", "DGX-B300", "MXFP8"),  # ..._PRETRAIN_CONFIG_B300_FP8_MX_V2
    ("26.02", "Qwen3_235B_a22B", "DGX-H100", "FP8"),  # ..._H100_FP8_CS_V2
    ("26.02", "Qwen3_30B_a3B", "DGX-H100", "FP8"),  # QWEN3_30B_A3B_..._H100_FP8_CS_V1
    ("26.04", "GPT OSS 120B", "DGX-GB200", "BF16"),  # GPT_OSS_120B_..._GB200_BF16_V2
    ("26.04", "Qwen3_235B_a22B", "DGX-H100", "FP8"),  # ..._H100_FP8_CS_V2
    ("26.06", "DeepSeekV3", "DGX-GB200", "MXFP8"),  # DEEPSEEK_V3_..._GB200_FP8_MX_V1/V2
    ("26.06", "DeepSeekV3", "DGX-GB300", "MXFP8"),  # ..._GB300_FP8_MX_V1/V2/GBS15360
    ("26.06", "GPT OSS 120B", "DGX-GB200", "MXFP8"),  # GPT_OSS_120B_..._GB200_FP8_MX_V2
    ("26.06", "GPT OSS 120B", "DGX-GB300", "MXFP8"),  # ..._GB300_FP8_MX_V2
    ("26.06", "Qwen3_235B_a22B", "DGX-GB200", "MXFP8"),  # ..._GB200_FP8_MX_V2
    ("26.06", "Qwen3_235B_a22B", "DGX-GB300", "MXFP8"),  # ..._GB300_FP8_MX_V2
    ("26.06", "Qwen3_30B_a3B", "DGX-B300", "MXFP8"),  # QWEN3_30B_A3B_..._B300_FP8_MX_V1
    ("26.06", "Qwen3_30B_a3B", "DGX-GB200", "MXFP8"),  # ..._GB200_FP8_MX_V1
    ("26.06", "Qwen3_30B_a3B", "DGX-GB300", "MXFP8"),  # ..._GB300_FP8_MX_V1
    ("26.08", "DeepSeekV3", "DGX-GB200", "MXFP8"), ("26.08", "DeepSeekV3", "DGX-GB300", "MXFP8"),
    ("26.08", "GPT OSS 120B", "DGX-GB200", "MXFP8"),
    ("26.08", "GPT OSS 120B", "DGX-GB300", "MXFP8"),
    ("26.08", "Qwen3_235B_a22B", "DGX-GB200", "MXFP8"),
    ("26.08", "Qwen3_235B_a22B", "DGX-GB300", "MXFP8"),
    ("26.08", "Qwen3_30B_a3B", "DGX-GB200", "MXFP8"),
    ("26.08", "Qwen3_30B_a3B", "DGX-GB300", "MXFP8"),
}


# The token dispatcher as each release's scripts set it. Megatron-Bridge's MoE recipes default to
# Megatron-Core's all-to-all (recipes/qwen/qwen3_moe.py: moe_token_dispatcher_type = "alltoall"),
# and its benchmark scripts switch to flex (DeepEP or Hybrid-EP: training/
# flex_dispatcher_backend.py `apply_flex_dispatcher_backend`) only where a workload base config
# sets moe_flex_dispatcher_backend (scripts/performance/configs/*/…workload_base_configs.py at
# the release's tag, as MOE_A2A_OVERLAP; each row matched to the config of its layout where one
# matches, and every config of its model, system and precision agreeing where none does; 26.08:
# the perf_recipes at 067f987df, whose MXFP8 MoE recipes on GB200/GB300 set hybridep). These
# rows' configs leave it unset: all-to-all. Every other MoE row runs flex.
ALLTOALL = {
    ("25.11", "GPT OSS 120B", "DGX-B200", "BF16"),  # GPT_OSS_120B_*_BASE_CONFIG (every one)
    ("25.11", "GPT OSS 120B", "DGX-GB200", "BF16"), ("25.11", "GPT OSS 120B", "DGX-GB300", "BF16"),
    ("25.11", "GPT OSS 120B", "DGX-H100", "BF16"),
    ("25.11", "Qwen3_235B_a22B", "DGX-B200", "FP8-MX"),  # QWEN3_235B_A22B_B200_FP8_MX_BASE_CONFIG
    ("25.11", "Qwen3_235B_a22B", "DGX-H100", "FP8-CS"),  # QWEN3_235B_A22B_H100_FP8_CS_BASE_CONFIG
    ("25.11", "Qwen3_30B_a3B", "DGX-B200", "FP8-MX"),  # QWEN3_30B_A3B_B200_FP8_MX_BASE_CONFIG
    ("25.11", "Qwen3_30B_a3B", "DGX-H100", "FP8-CS"),  # QWEN3_30B_A3B_H100_*_BASE_CONFIG
    ("26.02", "GPT OSS 120B", "DGX-B200", "BF16"),  # GPT_OSS_120B_PRETRAIN_CONFIG_*_BF16_V1/V2
    ("26.02", "GPT OSS 120B", "DGX-B300", "BF16"), ("26.02", "GPT OSS 120B", "DGX-GB200", "BF16"),
    ("26.02", "GPT OSS 120B", "DGX-GB300", "BF16"), ("26.02", "GPT OSS 120B", "DGX-H100", "BF16"),
    ("26.02", "Qwen3_235B_a22B", "DGX-B200", "MXFP8"),  # ..._B200_FP8_MX_V2
    ("26.02", "Qwen3_235B_a22B", "DGX-B300", "MXFP8"),  # ..._B300_FP8_MX_V2
    ("26.02", "Qwen3_235B_a22B", "DGX-H100", "FP8"),  # ..._H100_FP8_CS_V2
    ("26.02", "Qwen3_30B_a3B", "DGX-B200", "MXFP8"),  # QWEN3_30B_A3B_..._B200_FP8_MX_V1
    ("26.04", "GPT OSS 120B", "DGX-GB300", "BF16"),  # GPT_OSS_120B_..._GB300_BF16_V2
    ("26.04", "GPT OSS 120B", "DGX-H100", "BF16"),  # ..._H100_BF16_V2
    ("26.04", "Qwen3_235B_a22B", "DGX-B200", "MXFP8"),  # ..._B200_FP8_MX_V2
    ("26.04", "Qwen3_235B_a22B", "DGX-B300", "MXFP8"),  # ..._B300_FP8_MX_V2
    ("26.04", "Qwen3_235B_a22B", "DGX-H100", "FP8"),  # ..._H100_FP8_CS_V2
}


def runs(kinds: tuple[str, ...] = ("pretrain",)) -> list[dict[str, Any]]:
    """The rows flopcalc can predict: a preset model, a stated precision, pre-training."""
    out = []
    for r in json.loads(DATA.read_text())["runs"]:
        if (r["kind"] in kinds and r.get("model") in PRESETS and r.get("precision") in PRECISIONS
                and r.get("system") in SYSTEMS):
            out.append(r)
    return out


def run_id(r: dict[str, Any]) -> str:
    return (f"{r['release']}/{r['model']}/{r['system']}/{r['precision']}/{r['gpus']}"
            f"/tp{r['tp']}pp{r['pp']}cp{r['cp']}ep{r['ep']}/v{r['variant']}")


CONFIGURATION = ("model", "system", "precision", "gpus", "tp", "pp", "cp", "ep", "vp",
                 "micro_batch", "global_batch", "seq")


def half(r: dict[str, Any]) -> str:
    """`development` or `held-out`, by a fixed rule chosen before any tuning: the first byte of
    the SHA-256 of the run's configuration (model, system, precision, GPUs, layout, batch,
    sequence: every field but the release) odd is held out. The same configuration measured in
    several releases falls in one half, so a held-out run never has a development twin."""
    key = "/".join(str(r.get(k)) for k in CONFIGURATION)
    return "held-out" if hashlib.sha256(key.encode()).digest()[0] % 2 else "development"


def measured(r: dict[str, Any]) -> tuple[float, float]:
    if r.get("step_time_s"):  # the model zoo's step seconds, ± half the last digit
        return r["step_time_s"] - 0.05, r["step_time_s"] + 0.05
    tokens = r["global_batch"] * r["seq"] / r["gpus"]
    per = r["tokens_per_second_per_gpu"]
    return tokens / (per + 0.5), tokens / (per - 0.5)


def options(r: dict[str, Any]) -> dict[str, Any]:
    dtype, recipe = PRECISIONS[r["precision"]]
    ways = r["tp"] * r["pp"] * r["cp"]
    opts: dict[str, Any] = dict(
        seq=r["seq"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // ways,
        micro_batch=r["micro_batch"], global_batch=r["global_batch"],
        accelerator=SYSTEMS[r["system"]], dtype=dtype, zero=3 if r.get("fsdp") else 1,
        sequence_parallel=r["tp"] > 1, dropout="off",
        # the benchmarks reduce gradients in bf16: perf_recipes/_common.py _perf_precision
        # sets grad_reduce_in_fp32 = False (line 122 at 067f987df); the model zoo's runs keep
        # Megatron-Core's fp32 reduction with bf16
        grad_fp32=r["release"] == "modelzoo")
    if r.get("vp"):
        opts["vp"] = r["vp"]
    if r.get("ep") and r["ep"] > 1:
        opts["ep"] = r["ep"]
    if recipe:
        opts["fp8_recipe"] = recipe
    # Recomputation as the recipes state it: at the pages' commit (067f987df) every
    # pre-training recipe of these models (src/megatron/bridge/perf_recipes/<family>/<system>/)
    # recomputes nothing or a list of modules (RECIPE_MODULES), none of them whole layers,
    # except Llama 3 8B FP8 on H100 (llama/h100/llama3.py line 87: 5 of 32 layers): none.
    if r["release"] != "modelzoo":
        modules = RECIPE_MODULES.get((r["model"], r["system"], r["precision"], r["gpus"]))
        if modules:
            opts["recompute_modules"] = modules
        else:
            opts["recompute"] = "none"
    if r.get("ep") and r["ep"] > 1 and r["release"] != "modelzoo":
        opts["dispatcher"] = ("alltoall" if (r["release"][:5], r["model"], r["system"],
                                             r["precision"]) in ALLTOALL else "flex")
    if (r["release"][:5], r["model"], r["system"], r["precision"]) in MOE_A2A_OVERLAP:
        opts["moe_overlap"] = True
        # from 26.06 the rows that overlap do so inside a full-iteration CUDA graph (v0.5.0's
        # workload configs; at 067f987df the `_enable_*_full_iteration_mxfp8` helpers set
        # cuda_graph_impl = "full_iteration"): no host launches
        if r["release"][:5] >= "26.06":
            opts["cuda_graph"] = True
    for key in ("recompute", "recompute_modules", "moe_overlap", "dispatcher"):
        if key in r:
            opts[key] = r[key]
    return opts


def predict(r: dict[str, Any]) -> dict[str, Any]:
    import flopcalc.api  # noqa: F401
    from flopcalc.commands import COMMANDS
    from flopcalc.errors import FlopcalcError

    opts = options(r)
    known = {o.name for o in COMMANDS["step"].options}
    opts = {k: v for k, v in opts.items() if k in known}
    try:
        report = COMMANDS["step"](r.get("preset") or PRESETS[r["model"]], **opts).to_dict()
    except FlopcalcError as exc:
        return {"refused": str(exc)}
    return {**report["time"]["step_seconds"], "report": report}


def evaluate(rows: Optional[list[dict[str, Any]]] = None) -> list[dict[str, Any]]:
    out = []
    for r in rows if rows is not None else runs():
        lo, hi = measured(r)
        mid = (lo + hi) / 2
        p = predict(r)
        row = {"id": run_id(r), "run": r, "measured": mid, "measured_range": (lo, hi),
               "half": half(r)}
        if "refused" in p:
            row["refused"] = p["refused"]
        else:
            row.update(low=p["low"], estimate=p["estimate"], high=p["high"],
                       inside=p["low"] <= hi and lo <= p["high"],
                       error_pct=100 * (p["estimate"] / mid - 1), moe=bool(r["ep"] and
                                                                           r["ep"] > 1
                                                                           or "a3B" in r["model"]
                                                                           or "a22B" in r["model"]
                                                                           or "OSS" in r["model"]
                                                                           or "Deep" in r["model"]
                                                                           or "Kimi" in r["model"]))
        out.append(row)
    return out


GROUPS = (("all", lambda r: True), ("moe", lambda r: r["moe"]),
          ("dense", lambda r: not r["moe"]))


def summary(rows: list[dict[str, Any]], title: str = "", groups=GROUPS) -> str:
    """Predicted and refused, then per group (name, which runs): inside, median |error| and
    median width (high / low)."""
    done = [r for r in rows if "refused" not in r]
    lines = [f"{title}predicted {len(done)} of {len(rows)} (refused {len(rows) - len(done)})"]
    for name, sel in ((name, [r for r in done if keep(r)]) for name, keep in groups):
        if not sel:
            continue
        errs = sorted(abs(r["error_pct"]) for r in sel)
        widths = sorted(r["high"] / r["low"] for r in sel)
        inside = sum(r["inside"] for r in sel)
        lines.append(f"{name}: {len(sel)} runs, inside {inside} ({100 * inside / len(sel):.0f}%),"
                     f" |error| median {errs[len(errs) // 2]:.1f}%, width median "
                     f"{widths[len(widths) // 2]:.2f}x")
    return "\n".join(lines)


ZOO = ROOT / "tests" / "data" / "training" / "megatron-moe-modelzoo.json"
# The zoo's recompute column as Megatron-Core's modules ("norm": layernorm, "act": moe_act)
ZOO_RECOMPUTE = {"selective (norm, act)": ("recompute_modules", "layernorm,moe_act"),
                 "full": ("recompute", "full"), "none (column empty)": ("recompute", "none"),
                 "selective (norm, act, shared_expert)": ("recompute_modules",
                                                          "layernorm,moe_act,shared_experts")}


def zoo_runs() -> list[dict[str, Any]]:
    """The Megatron-MoE model zoo's Qwen3 runs (H100, BF16, DeepEP), as rows like the pages':
    their layouts in full, their recomputed modules (ZOO_RECOMPUTE), the 1F1B
    all-to-all overlap where the source says '+1f1b overlap', FSDP as ZeRO-3."""
    out = []
    for c in json.loads(ZOO.read_text())["cases"]:
        p, m = c["parallel"], c["model"]
        out.append({"release": "modelzoo", "kind": "pretrain", "model": c["id"],
                    "preset": m["flopcalc_preset"], "system": "DGX-H100", "precision": "BF16",
                    "gpus": c["hardware"]["num_gpus"], "global_batch":
                    p["global_batch_sequences"], "micro_batch": p["micro_batch"],
                    "seq": m["seq_length"], "fsdp": 1 if p["zero_or_sharding"] else 0,
                    "tp": p["tp"], "pp": p["pp"], "cp": p["cp"], "vp": p["virtual_pipeline"],
                    "ep": p["ep"], ZOO_RECOMPUTE[p["recompute"]][0]:
                    ZOO_RECOMPUTE[p["recompute"]][1],
                    "moe_overlap": "1f1b overlap" in c["source"]["quote"], "variant": 0,
                    "dispatcher": "alltoall" if "| A2A |" in c["source"]["quote"] else "flex",
                    "tokens_per_second_per_gpu": None,
                    "step_time_s": c["measured"]["step_time_s"]})
    return out


def classes_of(r: dict[str, Any]) -> list[str]:
    """The classes a run belongs to, to see where the model errs: release line, system,
    precision, model, dense or MoE, and an MoE run's micro-batch."""
    run = r["run"]
    release = run["release"]
    out = ["release " + ("model zoo" if release == "modelzoo" else release[:2] + ".x"),
           "system " + run["system"], "precision " + run["precision"], "model " + run["model"],
           "moe" if r["moe"] else "dense"]
    if r["moe"]:
        out.append("moe, micro-batch 1" if run["micro_batch"] == 1 else "moe, micro-batch > 1")
    return out


def class_table(rows: list[dict[str, Any]]) -> str:
    """Per class and half: runs, share inside, median signed error (estimate / measured − 1:
    negative is too fast), median |error|, runs slower than `high` (too fast) and faster
    than `low` (too slow), median width."""
    from collections import defaultdict

    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if "refused" in r:
            continue
        for c in ["all"] + classes_of(r):
            groups[(c, r["half"])].append(r)
    lines = ["| class | half | runs | inside | median error | median \\|error\\| | measured > high"
             " | measured < low | median width |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (c, h), sel in sorted(groups.items()):
        errs = sorted(r["error_pct"] for r in sel)
        mags = sorted(abs(e) for e in errs)
        widths = sorted(r["high"] / r["low"] for r in sel)
        slow = sum(r["measured_range"][0] > r["high"] for r in sel)
        fast = sum(r["measured_range"][1] < r["low"] for r in sel)
        inside = 100 * sum(r["inside"] for r in sel) / len(sel)
        lines.append(f"| {c} | {h} | {len(sel)} | {inside:.0f}%"
                     f" | {errs[len(errs) // 2]:+.1f}% | {mags[len(mags) // 2]:.1f}% | {slow} | "
                     f"{fast} | {widths[len(widths) // 2]:.2f}x |")
    return "\n".join(lines)


def run_table(rows: list[dict[str, Any]]) -> str:
    """The per-run table of the validation page: measured, the interval, the error."""
    lines = ["| run | half | measured s | low | estimate | high | inside | error |",
             "|---|---|---:|---:|---:|---:|:-:|---:|"]
    for r in rows:
        if "refused" in r:
            lines.append(f"| {r['id']} | {r['half']} | {r['measured']:.3f} | refused: "
                         f"{r['refused'][:80]} | | | | |")
            continue
        lines.append(f"| {r['id']} | {r['half']} | {r['measured']:.3f} | {r['low']:.3f} | "
                     f"**{r['estimate']:.3f}** | {r['high']:.3f} | "
                     f"{'yes' if r['inside'] else 'NO'} | {r['error_pct']:+.1f}% |")
    return "\n".join(lines)


def main(which: str = "all") -> None:
    rows = evaluate()
    if which == "classes":
        print(class_table(rows))
        return
    if which != "all":
        rows = [r for r in rows if r["half"] == which]
    print(run_table(rows))
    print()
    for name in ("development", "held-out"):
        sel = [r for r in rows if r["half"] == name]
        if sel:
            print(summary(sel, f"{name}: "))
            print()
    if which == "all":
        print(summary(rows, "both halves: "))
    zoo = evaluate(zoo_runs())
    print("\n| Megatron-MoE model zoo run | measured s | low | estimate | high | inside | error |")
    print("|---|---:|---:|---:|---:|:-:|---:|")
    for r in zoo:
        print(f"| {r['run']['model']} | {r['measured']:.1f} | {r['low']:.2f} | "
              f"**{r['estimate']:.2f}** | {r['high']:.2f} | {'yes' if r['inside'] else 'NO'} | "
              f"{r['error_pct']:+.1f}% |")
    print()
    print(summary(zoo))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(sys.argv[1] if len(sys.argv) > 1 else "all")
