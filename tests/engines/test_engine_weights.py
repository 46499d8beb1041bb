"""Weights per device as vLLM loads them (`engines.loading`): MXFP4 experts padded for the MoE
backend that runs them, against engines' "Model loading took" lines of real checkpoints and a
tensor worked by hand from vLLM's `Mxfp4MoEMethod.create_weights`
(model_executor/layers/quantization/mxfp4.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc import api
from flopcalc.commands.common import load
from flopcalc.engines.loading import mxfp4_expert_bytes, triton_scale_copies

pytestmark = [pytest.mark.published, pytest.mark.engine]

LOGS = Path("/work/shared/reference/checkpoint-logs.json")
GiB = 1 << 30


@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
def test_gpt_oss_120b_on_one_h100_as_its_log():
    # vllm-project/vllm#23278: one H100, the Marlin warning in the log ("Weight-only FP4
    # compression will be used leveraging the Marlin kernel"), "Model loading took 65.9651 GiB"
    case = next(c for c in json.loads(LOGS.read_text())["cases"]
                if c["id"] == "vllm_i23278_gptoss120b_1xh100")
    logged = case["measured"]["model_loading_gib"]
    w = api.serve("gpt-oss-120b", accelerator="h100", mxfp4_backend="marlin",
                  kv_memory="1GiB").weights
    error = (w.device_bytes[0] / GiB - logged) / logged
    print(f"gpt-oss-120b marlin: {w.device_bytes[0] / GiB:.4f} GiB against {logged}: "
          f"{100 * error:+.2f}%")
    assert abs(error) < 0.03
    assert "marlin MoE backend" in w.loading


def test_gpt_oss_20b_on_one_a100_as_its_log():
    # vLLM on one A100 (SM80: no triton_kernels, no FlashInfer MXFP4, so Marlin), "Model
    # loading took 13.72 GiB" (myoceane.fr, "[AI] vLLM 部署地端模型系統訊息記錄 A100", 2026-04,
    # `vllm serve openai/gpt-oss-20b --max-model-len 131072 --gpu-memory-utilization 0.65`)
    w = api.serve("gpt-oss-20b", accelerator="a100", kv_memory="1GiB").weights
    error = (w.device_bytes[0] / GiB - 13.72) / 13.72
    assert abs(error) < 0.03
    assert "marlin" in w.loading and "ampere" in w.loading


def _expert(model: str, matrix: str):
    spec = load(model, ()).spec
    moe = next(k for g in spec.groups("decoder") for _, k in g.layer.slots()
               if getattr(k, "experts", None))
    return next(p for p in moe.params(spec.d_model) if p.name == f"experts.{matrix}.weight")


def test_one_padded_expert_tensor_by_hand():
    gate = _expert("gpt-oss-120b", "gate")
    down = _expert("gpt-oss-120b", "down")
    assert gate.shape == (128, 2880, 2880)
    # Marlin at tp 2: I' = round_up(2880/2, 128) = 1536, H' = round_up(2880, 256) = 3072.
    # gate: 128 experts × (1536 × 3072 / 2 values + 1536 × 3072/32 scales)
    #     = 128 × (2,359,296 + 147,456) = 320,864,256
    assert mxfp4_expert_bytes(gate, "marlin", 2, 1) == 320_864_256
    # down (E, H', I'/2) + (E, H', I'/32): 128 × (2,359,296 + 3072 × 48) = 320,864,256
    assert mxfp4_expert_bytes(down, "marlin", 2, 1) == 320_864_256
    # Triton at tp 2: I' = round_up(1440, 64) = 1472, H unpadded:
    # 128 × (2880 × 1472 / 2 + 1472 × 90) = 128 × (2,119,680 + 132,480) = 288,276,480
    assert mxfp4_expert_bytes(gate, "triton", 2, 1) == 288_276_480
    # FlashInfer SM100 at tp 1: I' = H' = round_up(2880, 256) = 3072; down adds three fp32
    # per expert: 128 × (3072² / 2 + 3072 × 96 + 12) = 128 × 5,013,516 = 641,730,048
    assert mxfp4_expert_bytes(down, "flashinfer-sm100", 1, 1) == 641_730_048
    # Triton's swizzled scale copies at tp 2 (Hopper: rows to 256, scale columns to 2): w13
    # rows 2 × round_up(1440, 64) = 2944 → 3072, columns 2880/32 = 90: 128 × 3072 × 90 =
    # 35,389,440; w2 rows 2880 → 3072, columns 1472/32 = 46: 128 × 3072 × 46 = 18,087,936
    up = _expert("gpt-oss-120b", "up")
    assert triton_scale_copies([gate, up, down], 2, 1) == 35_389_440 + 18_087_936
    # expert parallelism over 4: 32 whole experts, I unsplit (2944 under Marlin):
    # 32 × (2944 × 3072 / 2 + 2944 × 96) = 32 × (4,521,984 + 282,624) = 153,747,456
    assert mxfp4_expert_bytes(gate, "marlin", 1, 4) == 153_747_456


def test_padding_adds_what_vllm_allocates_over_the_checkpoint():
    # gpt-oss-20b, one device: 24 layers × 32 experts. Per expert the checkpoint stores
    # w13 5760 × 1440 + 5760 × 90 scales, w2 2880 × 1440 + 2880 × 90, biases (5760 + 2880) × 2:
    # 13,236,480 bytes; Marlin allocates w13 5888 × 1536 + 5888 × 96, w2 3072 × 1472 +
    # 3072 × 92, biases (5888 + 3072) × 2: 14,431,744. (14,431,744 − 13,236,480) × 768 =
    # 917,962,752 more than a device that keeps the checkpoint's bytes (MI300X: not modelled)
    marlin = api.serve("gpt-oss-20b", accelerator="a100", kv_memory="1GiB").weights
    kept = api.serve("gpt-oss-20b", accelerator="mi300x", kv_memory="1GiB").weights
    assert marlin.device_bytes[0] - kept.device_bytes[0] == 917_962_752
    assert "checkpoint stores them" in kept.loading
    # Triton on H100: no padding of 2880 (a multiple of 64), biases in fp32 (17,280 more bytes
    # per expert), and the swizzled scale copies kept beside the loaded scales: w13
    # round_up(5760, 256) × round_up(90, 2) = 5888 × 90 = 529,920, w2 round_up(2880, 256) × 90 =
    # 3072 × 90 = 276,480. (17,280 + 529,920 + 276,480) × 768 = 632,586,240
    triton = api.serve("gpt-oss-20b", accelerator="h100", kv_memory="1GiB").weights
    assert triton.device_bytes[0] - kept.device_bytes[0] == 632_586_240
    assert "triton" in triton.loading
    # a dense model has nothing to pad
    dense = api.serve("llama-3.1-8b", kv_memory="1GiB")
    assert "no MXFP4 experts" in dense.weights.loading


def test_the_backend_is_chosen_on_the_command_line():
    # FlashInfer SM100 at tp 1 on gpt-oss-20b: I' = H' = 3072, fp32 biases, three fp32 per
    # expert: per expert w13 6144 × 1536 + 6144 × 96, w2 3072 × 1536 + 3072 × 96, biases
    # (6144 + 3072) × 4, + 12 = 9,437,184 + 589,824 + 4,718,592 + 294,912 + 36,864 + 12 =
    # 15,077,388; over the checkpoint's 13,236,480: 1,840,908 × 768 = 1,413,817,344 more
    import json

    from tests.conftest import run_process

    args = ("serve", "gpt-oss-20b", "--kv-memory", "1GiB", "-f", "json")
    fi = json.loads(run_process(*args, "--mxfp4-backend", "flashinfer-sm100").stdout)
    kept = json.loads(run_process(*args, "--accelerator", "mi300x").stdout)
    assert fi["weights"]["layout"] == "flashinfer-sm100"
    assert fi["weights"]["device_bytes"][0] - kept["weights"]["device_bytes"][0] == \
        1_413_817_344
