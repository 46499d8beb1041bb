"""Published training runs as `flopcalc step` inputs, and the step time each source measured.

Each run is a model (a preset, or the dimensions the source gives, written as a model file), the
options of `flopcalc step` that the source (or the code it ran) states, and the measured step
time, converted from the published figure with the FLOP formula its authors used. What a source
leaves open is not given, so `step` treats it as unknown (the interval covers it): micro-batch,
virtual stages, recomputation and dropout for Megatron-LM's H100 table.

    python tests/training_runs.py          # docs/validation.md's table (estimate error per run)

Sources: tests/data/training/SOURCES.md and the notes on each run below.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "data" / "training" / "training-throughput.json"


@dataclass
class Run:
    id: str
    model: Any  # a preset name, or a dict written as a model file
    options: dict[str, Any]
    measured: tuple[float, float]  # step seconds: the published figure's rounding interval
    formula: str
    notes: str = ""
    also: list[dict[str, Any]] = field(default_factory=list)  # option sets to join (unknowns
    # `step` cannot range over: a power-capped clock)


def gpt(L: int, d: int, heads: int, vocab: int, seq: int, tie: bool, bias: bool = True,
        positions: str = "learned") -> dict[str, Any]:
    """Megatron's GPT: multi-head attention, a plain GELU MLP of 4d, LayerNorm, pre-norm."""
    return {"title": f"GPT {L}x{d}", "architecture": "decoder-only", "n_layers": L,
            "d_model": d, "n_heads": heads, "n_kv_heads": heads, "d_ff": 4 * d, "mlp": "plain",
            "activation": "gelu", "bias": bias, "norm": "layernorm", "norm_placement": "pre",
            "final_norm": True, "positions": positions, "max_seq_len": max(seq, 2048),
            "vocab_size": vocab, "tie_embeddings": tie}


def megatron2021_step(B: int, s: int, L: int, h: int, gpus: int, tflops: float) -> tuple:
    """Narayanan et al. 2021 eq. 3 (V = 51,200, recomputation counted): F = 96·B·s·L·h²·(1 +
    s/(6h) + V/(16·L·h)); the published TFLOP/s/GPU ± half its last digit."""
    F = Fraction(96 * B * s * L * h * h) * (1 + Fraction(s, 6 * h) + Fraction(51200, 16 * L * h))
    return (float(F) / ((tflops + 0.5) * 1e12 * gpus), float(F) / ((tflops - 0.5) * 1e12 * gpus))


def megatron_r080_step(B: int, s: int, L: int, h: int, vocab: int, gpus: int,
                       tflops: float) -> tuple:
    """Megatron-Core r0.8.0 `num_floating_point_operations` (megatron/training/training.py
    lines 73-108 at core_r0.8.0) for MHA, f = 4h, no SwiGLU: 12·B·s·L·h²·[(1 + 1 + s/h) + 4 +
    V/(2·L·h)], attention non-causal, no recomputation; TFLOP/s/GPU ± 0.05."""
    F = 12 * B * s * L * h * h * (Fraction(6) + Fraction(s, h) + Fraction(vocab, 2 * L * h))
    return (float(F) / ((tflops + 0.05) * 1e12 * gpus), float(F) / ((tflops - 0.05) * 1e12 * gpus))


def reference_runs() -> list[Run]:
    """The 19 runs of tests/data/training/training-throughput.json."""
    data = json.loads(REFERENCE.read_text())
    runs = []
    for c in data["cases"]:
        mo, pa = c["model"], c["parallel"]
        L, h, a = mo["num_layers"], mo["hidden_size"], mo["num_attention_heads"]
        tp, pp, dp, gbs = pa["tp"], pa["pp"], pa["dp"], pa["global_batch_sequences"]
        gpus = c["hardware"]["num_gpus"]
        tflops = c["measured"]["achieved_tflops_per_gpu"]
        if c["id"].startswith("narayanan2021"):
            # SC21 scripts (Megatron-LM de7dc40f88 examples/sc21): --fp16, seq 2048, full
            # recomputation (--checkpoint-activations), dropout 0.1 (arguments.py defaults),
            # no flash attention, fp16 gradient all-reduce, vocabulary 50,257 padded to a
            # multiple of 128·t (--make-vocab-size-divisible-by 128), tied embeddings,
            # --num-layers-per-virtual-pipeline-stage → v = (L/p) / that.
            vocab = math.ceil(50257 / (128 * tp)) * 128 * tp
            nlvs = pa.get("num_layers_per_virtual_pipeline_stage")
            vp = (L // pp) // nlvs if nlvs else 1
            options = dict(seq=2048, tp=tp, pp=pp, vp=vp, dp=dp, micro_batch=pa["micro_batch"],
                           global_batch=gbs, recompute="full", dropout="on", zero=0,
                           accelerator="a100-sxm-80gb", network="dgx-a100", dtype="fp16",
                           flash=False, tp_overlap=False)
            runs.append(Run(c["id"], gpt(L, h, a, vocab, 2048, tie=True), options,
                            megatron2021_step(gbs, 2048, L, h, gpus, tflops),
                            "96Bslh²(1 + s/6h + V/16lh), V = 51,200",
                            "SC21 Table 1; DDP " + pa["zero_or_sharding"]))
        else:
            # Megatron-Core r0.8.0 H100 weak scaling (README at f2e5db402c): bf16 with fp32
            # gradient reduction (arguments.py lines 304-309), --overlap-grad-reduce
            # --overlap-param-gather (the distributed optimizer: ZeRO-1), --tp-comm-overlap
            # (needs sequence parallelism), Transformer Engine fused attention (flash), GPT
            # with MHA, f = 4h, untied vocabulary 131,072 (the published sizes count both
            # tables). Unpublished, so not given: micro-batch, virtual stages, recomputation,
            # dropout.
            options = dict(seq=4096, tp=tp, pp=pp, dp=dp, global_batch=gbs, zero=1,
                           sequence_parallel=tp > 1, tp_overlap=tp > 1, grad_fp32=True,
                           flash=True, accelerator="h100-sxm", network="dgx-h100",
                           dtype="bf16")
            runs.append(Run(c["id"], gpt(L, h, a, 131072, 4096, tie=False), options,
                            megatron_r080_step(gbs, 4096, L, h, 131072, gpus, tflops),
                            "12BsLh²[(2 + s/h) + 4 + V/2Lh] (r0.8.0)",
                            "Megatron-LM README H100 table"))
    return runs


def tokens_step(tokens_per_step: int, gpus: int, per_gpu: float) -> tuple:
    """Published tokens/s per GPU (± half its last digit) as step seconds."""
    per = tokens_per_step / gpus
    return per / (per_gpu + 0.5), per / (per_gpu - 0.5)


GRAND_TETON = {"title": "H100 96GB HBM2e, 500 W (Grand Teton)", "vendor": "NVIDIA",
               "source": "torchtitan benchmarks/llama3_h100_202412_torchtitan.md lines 9-15: "
               "H100 96GB HBM2e, 2.4 TB/s, 500 W; peak between SXM and NVL (footnote 2)",
               "memory_bytes": "96GB", "memory_bandwidth": "2.4TB",
               "peak_flops": {"bf16": "989.5T"}}


def extra_runs() -> list[Run]:
    """Further published runs (sources in tests/data/training/SOURCES.md)."""
    mpt = dict(bias=False, positions="none")

    def mpt_model(L: int, d: int, heads: int) -> dict[str, Any]:
        return gpt(L, d, heads, 50368, 2048, tie=True, **mpt)

    fsdp = dict(seq=2048, zero=3, flash=True, dropout="off")
    return [
        # llm-foundry README line 86: 7b, 128 x h100_80gb, mbs 6, accum 1, GBS 768, 10,475
        # tokens/s/GPU, amp_bf16 (fp32 reduction), FULL_SHARD, no activation checkpointing
        Run("mosaic_mpt7b_h100x128", mpt_model(32, 4096, 32),
            dict(fsdp, dp=128, micro_batch=6, global_batch=768, recompute="none",
                 grad_fp32=True, accelerator="h100-sxm", network="dgx-h100"),
            tokens_step(768 * 2048, 128, 10475), "tokens/s/GPU",
            "FSDP FULL_SHARD (ZeRO-3); network assumed one 400G NIC per GPU"),
        # line 75: 70b, 512 x h100_80gb, mbs 8, GBS 4096, 1,007 tokens/s/GPU, full checkpointing
        Run("mosaic_mpt70b_h100x512", mpt_model(80, 8192, 64),
            dict(fsdp, dp=512, micro_batch=8, global_batch=4096, recompute="full",
                 grad_fp32=True, accelerator="h100-sxm", network="dgx-h100"),
            tokens_step(4096 * 2048, 512, 1007), "tokens/s/GPU", "FULL_SHARD, full recompute"),
        # line 166: 70b, 64 x a100_80gb, mbs 8, accum 4, GBS 2048, 410 tokens/s/GPU, bf16 PURE,
        # "1600 Gbps node-node interconnect (RoCE)" = 8 x 200 Gb/s (dgx-a100's figures)
        Run("mosaic_mpt70b_a100x64", mpt_model(80, 8192, 64),
            dict(fsdp, dp=64, micro_batch=8, global_batch=2048, recompute="full",
                 accelerator="a100-sxm-80gb", network="dgx-a100"),
            tokens_step(2048 * 2048, 64, 410), "tokens/s/GPU", "FULL_SHARD, bf16 reduction"),
        # torchtitan Table 3: Llama 3.1 8B, 128 GPUs, FSDP, local batch 2, selective AC, no
        # compile: 5,605 tokens/s/GPU, seq 8192 (train_configs/llama3_8b.toml); its power-capped
        # H100's clock is unpublished ("between SXM and NVL"): the estimate at the midpoint,
        # 912.25 TFLOP/s, the interval joined over 989.5 and 835; per-op checkpointing
        # (`--recompute op`), eager, PyTorch SDPA's FlashAttention-2 (tests/framework_runs.py
        # says why each)
        Run("torchtitan_llama3_8b_h100x128", "llama-3.1-8b",
            dict(seq=8192, dp=128, micro_batch=2, global_batch=256, zero=3,
                 recompute="op", flash=True, dropout="off", grad_fp32=True, compile=False,
                 attention_kernel="fa2", peak="912.25T",
                 accelerator=GRAND_TETON, network="dgx-h100"),
            tokens_step(256 * 8192, 128, 5605), "tokens/s/GPU",
            "FSDP2, per-op selective AC, eager, SDPA (FlashAttention-2), 500 W cap",
            also=[dict(peak="989.5T"), dict(peak="835T")]),
        # Llama 3 paper Table 4 (arXiv:2407.21783): 16,384 H100, TP 8, CP 1, PP 16, DP 128, seq
        # 8,192, 16M tokens per batch (2,048 sequences), 400 TFLOPs/GPU with an unpublished FLOP
        # formula: bracketed between 6·N_non-embedding and 6·N + 12·L·H·Q·T per token
        Run("llama3_405b_h100x16384", "llama-3.1-405b",
            dict(seq=8192, tp=8, pp=16, dp=128, global_batch=2048, micro_batch=1, zero=1,
                 sequence_parallel=True, flash=True, dropout="off", grad_fp32=True,
                 accelerator="h100-sxm", network="dgx-h100"),
            llama3_step(), "6N .. 6N + 12LHQT (formula unpublished)",
            "virtual stages and recomputation unpublished (unknown)"),
    ]


def llama3_step() -> tuple:
    import flopcalc
    from flopcalc.counting.published import palm, shape_of, six_nd

    spec = flopcalc.load("llama-3.1-405b").spec
    m = shape_of(spec)
    tokens = 2048 * 8192
    lo_f, hi_f = six_nd(m, 8192) * tokens, palm(m, 8192) * tokens
    return float(lo_f) / (405e12 * 16384), float(hi_f) / (395e12 * 16384)


def model_ref(model: Any, tmp: Path, name: str) -> str:
    if isinstance(model, str):
        return model
    import yaml

    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(model))
    return str(path)


def predict(run: Run, tmp: Path) -> dict[str, Any]:
    """`flopcalc step` for the run (joined over `also`): its low, estimate and high."""
    import flopcalc.api  # noqa: F401
    from flopcalc.commands import COMMANDS

    model = model_ref(run.model, tmp, run.id)
    reports = []
    for extra in [{}] + run.also:
        options = {**run.options, **extra}
        acc = options["accelerator"]
        if isinstance(acc, dict):
            import yaml

            path = tmp / f"{run.id}-accelerator.yaml"
            path.write_text(yaml.safe_dump(acc))
            options["accelerator"] = str(path)
            options.setdefault("efficiency", "h100-sxm")
        reports.append(COMMANDS["step"](model, **options))
    main = reports[0].to_dict()
    s = [r.to_dict()["time"]["step_seconds"] for r in reports]
    return {"low": min(x["low"] for x in s), "estimate": s[0]["estimate"],
            "high": max(x["high"] for x in s), "report": main}


def evaluate(runs: Optional[list[Run]] = None) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs or (reference_runs() + extra_runs()):
            p = predict(run, Path(tmp))
            lo, hi = run.measured
            mid = (lo + hi) / 2
            rows.append({"id": run.id, "measured": mid, "measured_range": (lo, hi),
                         "low": p["low"], "estimate": p["estimate"], "high": p["high"],
                         "inside": p["low"] <= hi and lo <= p["high"],
                         "error_pct": 100 * (p["estimate"] / mid - 1),
                         "layout": p["report"]["layout"], "formula": run.formula,
                         "unknowns": p["report"]["unknowns"], "notes": run.notes})
    return rows


def main() -> None:
    rows = evaluate()
    print("| run | layout | measured s | low | estimate | high | inside | estimate error |")
    print("|---|---|---:|---:|---:|---:|:-:|---:|")
    for r in rows:
        lay = r["layout"]
        text = (f"tp{lay['tp']} pp{lay['pp']}" + (f" v{lay['vp']}" if lay['vp'] > 1 else "")
                + f" dp{lay['dp']} mb{lay['micro_batch']} m{lay['micro_batches']}")
        print(f"| {r['id']} | {text} | {r['measured']:.3f} | {r['low']:.3f} | "
              f"**{r['estimate']:.3f}** | {r['high']:.3f} | {'yes' if r['inside'] else 'NO'} | "
              f"{r['error_pct']:+.1f}% |")
    errs = sorted(abs(r["error_pct"]) for r in rows)
    print(f"\ninside: {sum(r['inside'] for r in rows)}/{len(rows)}; |error| median "
          f"{errs[len(errs) // 2]:.1f}%, mean {sum(errs) / len(errs):.1f}%, max {errs[-1]:.1f}%")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
