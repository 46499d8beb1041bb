"""NVFP4 weights as vLLM loads them (`engines.loading`): block scales swizzled for the FP4
tensor cores (rows to 128, scale columns to 4; 0.33 also pads values to 32), Marlin's tile
padding before Blackwell, the CUTLASS MoE's per-expert scales, and the releases' refusals;
worked by hand from vLLM 0.33.0's `swizzle_blockscale`, `pad_nvfp4_weight_for_cutlass`,
`marlin_padded_nk`, `prepare_nvfp4_moe_layer_for_fi_or_cutlass` and 0.11.0's modelopt.py."""

from __future__ import annotations

import json

import pytest

from flopcalc import api
from flopcalc.engines import loading as G
from flopcalc.errors import FlopcalcError
from flopcalc.kinds.base import EXPERT, LAYERS, Part
from tests.conftest import run_process

pytestmark = [pytest.mark.hand, pytest.mark.engine]


def test_linear_layouts_by_hand():
    # 576 × 576 (SmolLM2-135M's q): as stored 576·576/2 values + 576·36 fp8 scales = 165,888 +
    # 20,736 = 186,624
    assert G.nvfp4_matrix_bytes(576, 576, "checkpoint", None) == 186_624
    # swizzled: scale rows round_up(576, 128) = 640 × round_up(36, 4) = 36 → 23,040; values
    # already multiples of 32 → 165,888 + 23,040 = 188,928 (0.11 the same)
    assert G.nvfp4_matrix_bytes(576, 576, "swizzled", None) == 188_928
    assert G.nvfp4_matrix_bytes(576, 576, "swizzled", "0.11") == 188_928
    # Marlin (0.33): (576, round_up(576, 128) = 640) or (640, 576): equal products and sums,
    # the first wins → 576·640/2 + 576·640/16 = 184,320 + 23,040 = 207,360; 0.11 keeps 186,624
    assert G.nvfp4_matrix_bytes(576, 576, "marlin", None) == 207_360
    assert G.nvfp4_matrix_bytes(576, 576, "marlin", "0.11") == 186_624
    # 100 rows × 48 inputs, swizzled: 0.33 pads values to 128 × 64 → 4,096 bytes, scales
    # 128 × round_up(3, 4) = 512 → 4,608; 0.11 keeps the values 100·48/2 = 2,400 → 2,912
    assert G.nvfp4_matrix_bytes(100, 48, "swizzled", None) == 4_608
    assert G.nvfp4_matrix_bytes(100, 48, "swizzled", "0.11") == 2_912


def test_ungated_experts_pad_to_128_by_hand():
    # 4 experts, hidden 256, width 96, no gate (vLLM 0.33 pads w13's rows and w2's columns to
    # the swizzled scales' 128): up loaded 4·256·128/2 = 65,536 values + 4·128·16 scales =
    # 73,728 against 4·256·96/2 + 4·96·16 = 55,296 stored → 18,432 more; down 65,536 +
    # 4·256·round_up(8, 4) = 8,192 → 73,728 against 49,152 + 4·256·6 = 55,296 → 18,432 more
    up = Part("experts.up.weight", 4 * 256 * 96, LAYERS, (4, 256, 96), EXPERT, matmul=True,
              module="experts.up")
    down = Part("experts.down.weight", 4 * 96 * 256, LAYERS, (4, 96, 256), EXPERT,
                matmul=True, module="experts.down")
    for p in (up, down):
        assert G.nvfp4_bytes(p, "swizzled", 1, 1, None, gated=False) == 73_728
        assert G.nvfp4_extra(p, "swizzled", 1, 1, None, gated=False) == 18_432
    # Marlin's MoE repacking is not transcribed: the experts stay as stored
    assert G.nvfp4_extra(up, "marlin", 1, 1, None, gated=False) == 0


def test_gpt_oss_20b_nvfp4_on_b200_by_hand():
    # gpt-oss-20b with every matrix NVFP4, 24 layers, tp 1, swizzled (B200) against the
    # checkpoint's bytes (MI300X: no layout modelled). Per layer: o (N 2880, K 4096): scale
    # rows 2880 → 2944, 64·256 = 16,384 more; q, k, v (N 4096, 512, 512; K 2880) none; the
    # experts (32 of 2880 × 2880, gated): w13's 2·2880 rows are a multiple of 128, none; w2's
    # rows 2880 → 2944: 32·64·180 = 368,640 more. (16,384 + 368,640)·24 = 9,240,576
    b200, mi300x = (api.serve("gpt-oss-20b", kv_memory="1GiB", weights_dtype="nvfp4",
                              accelerator=a).weights for a in ("b200", "mi300x"))
    assert b200.device_bytes[0] - mi300x.device_bytes[0] == 9_240_576
    assert "9,240,576 bytes more" in b200.loading and "swizzle_blockscale" in b200.loading
    # Hopper runs Marlin, whose tiles these widths already fill
    h100 = api.serve("gpt-oss-20b", kv_memory="1GiB", weights_dtype="nvfp4", accelerator="h100")
    assert h100.weights.device_bytes == mi300x.device_bytes


def test_cli_json_weights_include_the_padding():
    args = ("serve", "gpt-oss-20b", "--kv-memory", "1GiB", "--weights-dtype", "nvfp4",
            "--format", "json", "--accelerator")
    got = [json.loads(run_process(*args, a).stdout)["weights"]["device_bytes"][0]
           for a in ("b200", "mi300x")]
    assert got[0] - got[1] == 9_240_576


@pytest.mark.parametrize("args, says", [
    # 0.11.0 modelopt.py asserts w2's scale columns I/16 are a multiple of 16: 2880/16 = 180
    (["gpt-oss-20b", "--engine", "vllm==0.11"], "multiples of 256"),
    # Qwen3-30B-A3B's 768-wide experts over tp 8: 96 per rank, w13 192 rows, not a multiple of
    # 128: 0.33's FlashInfer CUTLASS MoE raises NotImplementedError
    (["qwen3-30b-a3b", "--tp", "8"], "does not pad a gated w13"),
])
def test_layouts_the_release_refuses_are_one_line(args, says):
    r = run_process("serve", *args, "--kv-memory", "1GiB", "--weights-dtype", "nvfp4",
                    "--accelerator", "b200")
    assert r.returncode == 2 and r.stdout == "" and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def _gpt_oss_20b(tmp_path, quantization_config):
    from pathlib import Path

    cfg = json.loads((Path(__file__).parent.parent / "data" / "hf" / "moe" /
                      "gpt-oss-20b.json").read_text())
    cfg["quantization_config"] = quantization_config
    path = tmp_path / f"{quantization_config.get('quant_method', 'modelopt')}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_vllm_0_11_asserts_alignment_for_modelopt_not_compressed_tensors(tmp_path):
    # 0.11.0's ModelOpt MoE asserts I/16 % 16 == 0 (2880/16 = 180 is not); its
    # compressed-tensors MoE swizzles without asserting, and then 0.11 keeps the values:
    # per layer o's scale rows 2880 → 2944 (64·256 = 16,384) and w2's 32·64·180 = 368,640,
    # × 24 = 9,240,576 as under 0.33 (no value padding at these widths)
    ct = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}},
          "ignore": ["lm_head"]}
    mo = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
          "exclude_modules": ["lm_head"]}
    args = dict(kv_memory="1GiB", accelerator="b200", engine="vllm==0.11")
    r = api.serve(_gpt_oss_20b(tmp_path, ct), **args)
    plain = api.serve(_gpt_oss_20b(tmp_path, ct), kv_memory="1GiB", accelerator="mi300x",
                      engine="vllm==0.11")
    assert r.weights.device_bytes[0] - plain.weights.device_bytes[0] == 9_240_576
    with pytest.raises(FlopcalcError, match="multiples of 256"):
        api.serve(_gpt_oss_20b(tmp_path, mo), **args)
