"""Weights stored as a checkpoint's config.json says (`quantization_config`, `torch_dtype`), by
hand on a tiny Llama for each format, and on published checkpoints against engines' logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc import api
from flopcalc.errors import FlopcalcError

from tests.conftest import run_process

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
LOGS = Path("/work/shared/reference/checkpoint-logs.json")
GIB = 2**30

# A one-layer Llama: d 256, 4 heads of 64, 2 KV heads, d_ff 512, vocabulary 64, untied.
# Matrices (n_in × n_out): q 256×256, k 256×128, v 256×128, o 256×256, gate and up 256×512,
# down 512×256: Σ n_in·n_out = 589,824, Σ n_out = 2,048, Σ n_in = 2,048 over 7 matrices.
# Left in bf16 by every format: the embedding and the head 2·(64·256)·2 = 65,536 bytes, two
# layer norms and the final norm 3·256·2 = 1,536 bytes: 67,072.
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
        "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 1, "vocab_size": 64, "max_position_embeddings": 256,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "silu",
        "rms_norm_eps": 1e-5}
REST = 67_072
VALUES8, VALUES4 = 589_824, 589_824 // 2  # 1 byte, ½ byte a value


def config(tmp_path: Path, quant=None, **changes) -> str:
    data = {**TINY, **changes}
    if quant is not None:
        data["quantization_config"] = quant
    folder = tmp_path / "tiny"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder / "config.json")


def weights(path: str, **options):
    return api.serve(path, kv_memory="1GiB", **options).weights


def test_no_quantization_is_the_dtype(tmp_path):
    # 623,360 parameters (589,824 in the matrices + 33,536 outside), 2 bytes each
    assert weights(config(tmp_path)).bytes == 2 * 623_360 == 1_246_720
    # float16 is 2 bytes too, and says so
    w = weights(config(tmp_path, torch_dtype="float16"))
    assert (w.bytes, w.dtype) == (1_246_720, "fp16")


def test_fp8_blocks(tmp_path):
    # 128×128 tiles, an fp32 scale each: q 2·2, k 2·1, v 2·1, o 2·2, gate and up 2·4, down
    # 4·2 = 36 tiles, 144 bytes
    q = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
         "weight_block_size": [128, 128]}
    w = weights(config(tmp_path, q))
    assert w.bytes == VALUES8 + 36 * 4 + REST == 657_040
    assert w.dtype == "fp8 128x128 blocks"
    assert "config.json quantization_config (fp8)" in w.source


def test_fp8_per_tensor_static(tmp_path):
    # one fp32 weight scale and one fp32 input scale per matrix: 7·8 = 56
    q = {"quant_method": "fp8", "activation_scheme": "static"}
    assert weights(config(tmp_path, q)).bytes == VALUES8 + 56 + REST == 656_952


def test_fbgemm_fp8_per_channel_and_per_layer_exclusions(tmp_path):
    # an fp32 scale per output row: 4·Σ n_out = 8,192
    q = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
         "modules_to_not_convert": ["lm_head"]}
    assert weights(config(tmp_path, q)).bytes == VALUES8 + 8_192 + REST == 665_088
    # two layers, the first left in bf16 as Llama-3.1-405B-FP8's first and last are: layer 0's
    # matrices 2·589,824 = 1,179,648; layer 1's 598,016; norms 5·256·2 = 2,560; embedding and
    # head 65,536
    q["modules_to_not_convert"] = ["model.layers.0", "lm_head"]
    path = config(tmp_path, q, num_hidden_layers=2)
    assert weights(path).bytes == 1_179_648 + 598_016 + 2_560 + 65_536 == 1_845_760
    # two pipeline stages: the first holds layer 0 (bf16), its two norms and the embedding; the
    # last layer 1 (fp8), its norms, the final norm and the head
    assert weights(path, pp=2).device_bytes == [1_179_648 + 1_024 + 32_768,
                                                598_016 + 1_024 + 512 + 32_768]


def test_compressed_tensors_w8a8_and_w4a16(tmp_path):
    int8 = {"quant_method": "compressed-tensors", "format": "int-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                "num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}}},
            "ignore": ["lm_head"]}
    # a bf16 scale per output row: 2·2,048
    assert weights(config(tmp_path, int8)).bytes == VALUES8 + 4_096 + REST == 660_992
    w4a16 = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                 "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                 "symmetric": True}}}, "ignore": ["lm_head"]}
    # bf16 scales per 128 inputs of each row: q 256·2, k 128·2, v 128·2, o 256·2, gate and up
    # 512·2, down 256·4 = 4,608 scales, 9,216 bytes; an int64 weight_shape (2,) per matrix 7·16
    assert weights(config(tmp_path, w4a16)).bytes == VALUES4 + 9_216 + 112 + REST == 371_312


def test_compressed_tensors_nvfp4(tmp_path):
    q = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
         "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
             "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}},
         "ignore": ["lm_head"]}
    # an fp8 scale per 16 values: 589,824 / 16 = 36,864 bytes; fp32 weight and input global
    # scales 7·8 = 56
    assert weights(config(tmp_path, q)).bytes == VALUES4 + 36_864 + 56 + REST == 398_904


def test_awq_and_gptq(tmp_path):
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
           "version": "gemm"}
    # fp16 scales 9,216 bytes (as w4a16), a 4-bit zero per scale 4,608 / 2 = 2,304
    assert weights(config(tmp_path, awq, torch_dtype="float16")).bytes == \
        VALUES4 + 9_216 + 2_304 + REST == 373_504
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
            "sym": True}
    # GPTQ stores the zeros whatever `sym`, and g_idx: an int32 per input row, 4·2,048
    assert weights(config(tmp_path, gptq)).bytes == \
        VALUES4 + 9_216 + 2_304 + 8_192 + REST == 381_696
    # group_size -1: one scale and zero per output row: 2,048·(2 + ½)
    gptq["group_size"] = -1
    assert weights(config(tmp_path, gptq)).bytes == \
        VALUES4 + 5_120 + 8_192 + REST == 375_296


def test_bitsandbytes(tmp_path):
    nf4 = {"quant_method": "bitsandbytes", "load_in_4bit": True,
           "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True}
    # an 8-bit absmax per 64 values 589,824 / 64 = 9,216; an fp32 per 256 of those: q 1,024
    # blocks → 4, k and v 512 → 2, o 4, gate, up and down 2,048 → 8: 36·4 = 144; per matrix
    # the quant map 16·4, the nested map 256·4 and the offset 4: 7·1,092 = 7,644
    assert weights(config(tmp_path, nf4)).bytes == \
        VALUES4 + 9_216 + 144 + 7_644 + REST == 378_988
    int8 = {"quant_method": "bitsandbytes", "load_in_8bit": True}
    # LLM.int8(): an fp32 scale per output row, 4·2,048
    assert weights(config(tmp_path, int8)).bytes == VALUES8 + 8_192 + REST == 665_088


def test_modelopt(tmp_path):
    fp8 = {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}
    # fp32 weight and input scales per matrix, 7·8
    assert weights(config(tmp_path, fp8)).bytes == VALUES8 + 56 + REST == 656_952
    nvfp4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
             "exclude_modules": ["lm_head"]}
    assert weights(config(tmp_path, nvfp4)).bytes == VALUES4 + 36_864 + 56 + REST == 398_904


def test_excluded_modules_stay_in_the_dtype(tmp_path):
    # every attention left in bf16: q, k, v, o 196,608 values at 2 bytes; the MLP in fp8
    # blocks: 393,216 values + gate and up 2·4 + down 4·2 = 24 tiles, 96 bytes
    q = {"quant_method": "fp8", "weight_block_size": [128, 128],
         "modules_to_not_convert": ["model.layers.*.self_attn"]}
    w = weights(config(tmp_path, q))
    assert w.bytes == 2 * 196_608 + 393_216 + 96 + REST == 853_600
    rows = {(r.module, r.format): r.bytes for r in w.storage}
    assert rows[("token mixers (attention)", "bf16")] == 393_216
    assert rows[("dense MLP", "fp8 128x128 blocks")] == 393_312


def test_flags_override_the_checkpoint(tmp_path):
    q = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    w = weights(config(tmp_path, q), weights_dtype="bf16")
    assert (w.bytes, w.source) == (1_246_720, "--weights-dtype")


def test_mxfp4_experts(tmp_path):
    # gpt-oss in small: 4 experts of gate, up and down 64×64; in bf16 12·4,096·2 = 98,304
    # bytes, in mxfp4 ½ byte a value and an e8m0 per 32 of a row: 12·(2,048 + 64·2) = 26,112
    data = json.loads((DATA / "moe" / "gpt-oss-20b.json").read_text())
    data.update(hidden_size=64, intermediate_size=64, num_local_experts=4,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                num_hidden_layers=1, layer_types=["full_attention"], vocab_size=128)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    plain = weights(str(path), weights_dtype="bf16").bytes
    w = weights(str(path))
    assert plain - w.bytes == 98_304 - 26_112
    assert (w.dtype, w.experts_dtype) == ("bf16", "mxfp4")


# ----------------------------------------------------------------------------- bad input


def test_unknown_quant_method_names_it_and_the_flag(tmp_path):
    r = run_process("serve", config(tmp_path, {"quant_method": "hqq", "nbits": 4}),
                    "--kv-memory", "1GiB")
    assert r.returncode == 2 and r.stdout == ""
    line = r.stderr.strip()
    assert "\n" not in line and "'hqq'" in line and "--weights-dtype" in line
    assert "Traceback" not in r.stderr
    # the flag is the way out
    r = run_process("serve", config(tmp_path, {"quant_method": "hqq"}), "--kv-memory", "1GiB",
                    "--weights-dtype", "int4", "--format", "json")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("key, pattern", [
    ("modules_to_not_convert", "model.layers.*.mlp.router"),  # a dense model has no router
    ("modules_to_not_convert", "model.layers.7"),  # one layer only
    ("modules_to_not_convert", "re:.*visual.*"),
])
def test_a_pattern_that_matches_nothing(tmp_path, key, pattern):
    q = {"quant_method": "fp8", "weight_block_size": [128, 128], key: [pattern]}
    with pytest.raises(FlopcalcError, match="matches no module"):
        weights(config(tmp_path, q))
    r = run_process("serve", config(tmp_path, q), "--kv-memory", "1GiB")
    assert r.returncode == 2 and pattern in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_pattern_naming_single_projections_is_a_warning(tmp_path):
    # formats are planned per module: a projection named alone keeps its module's format, and
    # the report says so (Qwen3-Next's FP8 config keeps in_proj_ba so)
    q = {"quant_method": "compressed-tensors", "config_groups": {"g": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
                                           "strategy": "channel"}}},
         "ignore": ["lm_head", "re:.*q_proj"]}
    r = api.serve(config(tmp_path, q), kv_memory="1GiB")
    assert any("1 ignore pattern ('re:.*q_proj') names single projections" in w
               for w in r.warnings)
    assert r.weights.bytes == VALUES8 + 4_096 + REST  # every matrix in fp8, a bf16 per row


def test_patterns_naming_norms_are_no_error(tmp_path):
    # Qwen3's FP8 configs list every layer norm and router: none is quantised anyway
    q = {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": [
        "lm_head", "model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm",
        "model.norm", "model.embed_tokens"]}
    assert weights(config(tmp_path, q)).bytes == 657_040


def test_a_group_that_does_not_divide_the_width(tmp_path):
    # 96 divides neither 256 nor 512
    q = {"quant_method": "awq", "bits": 4, "group_size": 96, "zero_point": True}
    with pytest.raises(FlopcalcError, match="group size 96 does not divide the input width"):
        weights(config(tmp_path, q))
    r = run_process("serve", config(tmp_path, q), "--kv-memory", "1GiB")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ published checkpoints


def test_deepseek_r1_fp8_on_8_h200_starts_with_a_cache():
    # vLLM's standard deployment: the config.json alone, no dtype flag
    r = api.serve(str(DATA / "presets2" / "deepseek-r1.json"), accelerator="h200", tp=8)
    assert r.capacity.fits and r.capacity.tokens > 0 and r.capacity.num_blocks > 0
    assert r.weights.dtype == "fp8 128x128 blocks"
    # in bf16 the weights alone (1.34 TB) do not fit 8 x 141 GB
    with pytest.raises(FlopcalcError, match="leave no memory for the cache"):
        api.serve(str(DATA / "presets2" / "deepseek-r1.json"), accelerator="h200", tp=8,
                  weights_dtype="bf16")


@pytest.mark.parametrize("model", [str(DATA / "moe" / "gpt-oss-120b.json"), "gpt-oss-120b"])
def test_gpt_oss_120b_fits_one_h100(model):
    r = api.serve(model, accelerator="h100", max_model_len=100_000)
    assert r.capacity.fits and r.capacity.tokens >= 100_000
    assert (r.weights.dtype, r.weights.experts_dtype) == ("bf16", "mxfp4")
    assert r.weights.device_bytes[0] < 80 * 10**9


def test_presets_record_their_checkpoints():
    assert api.serve("deepseek-v3", kv_memory="1GiB", tp=8).weights.dtype == \
        "fp8 128x128 blocks"
    w = api.serve("gpt-oss-20b", kv_memory="1GiB").weights
    assert (w.dtype, w.experts_dtype) == ("bf16", "mxfp4")
    assert "gpt-oss-20b's checkpoint field (openai/gpt-oss-20b config.json)" in w.source
    # a preset without one: bf16, and it says where that came from
    assert "no checkpoint format known" in api.serve("llama-3.1-8b",
                                                     kv_memory="1GiB").weights.source


def test_infer_reads_the_checkpoint_too(tmp_path):
    q = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    r = api.infer(config(tmp_path, q), prompt=16, gen=4)
    assert r.weights.bytes == 657_040
    # a decode step of one token reads every weight but 63 of the 64 embedding rows:
    # 657,040 − 63·256·2 = 624,784
    assert r.decode.bytes_components["weights.read"] == 4 * 624_784


# Engines' "Model loading took" lines for real checkpoints (reference data, not tuned to): the
# per-device weights from the config.json alone, as vLLM lays them out (gpt-oss's MXFP4
# experts padded for Marlin, which the log's warning names).
CHECKS = [
    ("vllm_i23278_gptoss120b_1xh100", DATA / "moe" / "gpt-oss-120b.json", {}, 0, 0.03),
    ("deepseek_i205_dsv3_fp8_32x4090_tp8pp4", DATA / "moe" / "deepseek-v3.json",
     {"tp": 8, "pp": 4}, 0, 0.03),
    ("vllm_i6746_llama31_405b_fp8_8xh100", DATA / "quant" / "llama-3.1-405b-instruct-fp8.json",
     {"tp": 8}, 0, 0.03),
]


@pytest.mark.skipif(not LOGS.is_file(), reason="reference logs not on this machine")
@pytest.mark.parametrize("case, path, options, stage, tolerance", CHECKS)
def test_weights_per_device_against_engine_logs(case, path, options, stage, tolerance):
    logged = next(c for c in json.loads(LOGS.read_text())["cases"] if c["id"] == case)
    m = logged["measured"]
    gib = m.get("model_loading_gib") or m.get("weights_gb_per_rank")  # V0's "GB" is GiB
    gib = gib[0] if isinstance(gib, list) else gib  # the driver's rank: stage 0
    ours = api.serve(str(path), kv_memory="1GiB", **options).weights.device_bytes[stage] / GIB
    error = (ours - gib) / gib
    print(f"{case}: {ours:.4f} GiB against {gib} GiB logged: {100 * error:+.2f}%")
    assert abs(error) < tolerance


@pytest.mark.parametrize("quant, says", [
    ({"quant_method": "fp8", "weight_block_size": 5}, "weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128, 1]}, "two integers"),
    ({"quant_method": "awq", "bits": 10**30}, "bits"),
    ({"quant_method": "gptq", "group_size": "128"}, "group_size"),
    ({"quant_method": "fp8", "modules_to_not_convert": ["re:(x+)+$"]}, "nests quantifiers"),
    ({"quant_method": "fp8", "modules_to_not_convert": ["re:["]}, "regular expression"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": 5}}, "weights scheme"),
    ([1, 2], "mapping"),
])
def test_hostile_quantization_configs_are_one_line(tmp_path, quant, says):
    r = run_process("serve", config(tmp_path, quant), "--kv-memory", "1GiB")
    assert r.returncode == 2 and r.stdout == "" and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("preset, published", [
    ("gpt-oss-120b", "moe/gpt-oss-120b.json"), ("gpt-oss-20b", "moe/gpt-oss-20b.json"),
    ("deepseek-v3", "moe/deepseek-v3.json"), ("deepseek-r1", "presets2/deepseek-r1.json"),
    ("kimi-k2", "presets2/kimi-k2.json"), ("deepseek-v3.2", "sparse/deepseek-v3.2.json"),
])
def test_a_preset_stores_its_weights_as_its_published_config_says(preset, published):
    # the preset's checkpoint block says what the checkpoint's config.json says: the same
    # bytes per module
    a = api.serve(preset, kv_memory="1GiB", tp=8).weights
    b = api.serve(str(DATA / published), kv_memory="1GiB", tp=8).weights
    assert (a.bytes, a.device_bytes) == (b.bytes, b.device_bytes)
    assert [(r.module, r.format, r.bytes) for r in a.storage] == \
        [(r.module, r.format, r.bytes) for r in b.storage]


def test_the_checkpoint_block_is_validated(tmp_path):
    base = "n_layers: 1\nd_model: 256\nn_heads: 4\nd_ff: 512\npositions: rotary\n" \
        "vocab_size: 64\nmax_seq_len: 256\ncheckpoint:\n  repo: acme/tiny\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(base + "  quant_method: fp8\n  block: [128, 128]\n")
    r = run_process("serve", str(bad), "--kv-memory", "1GiB")
    assert r.returncode == 2 and "checkpoint.block" in r.stderr
    bad.write_text(base + "  quant_method: hqq\n")
    r = run_process("serve", str(bad), "--kv-memory", "1GiB")
    assert r.returncode == 2 and "checkpoint.quant_method" in r.stderr
    # a good one: fp8 128x128 blocks, as config.json's weight_block_size. Matrices (MHA): q, k,
    # v, o 256×256 and a plain MLP 256×512, 512×256: 524,288 values and 4·4 + 8 + 8 = 32 tiles
    # (128 bytes); in bf16 the embedding, tied head, 2 layer norms (weight and bias) and the
    # final norm: 64·256·2 + 6·256·2 = 35,840
    good = tmp_path / "good.yaml"
    good.write_text(base + "  quant_method: fp8\n  weight_block_size: [128, 128]\n")
    w = api.serve(str(good), kv_memory="1GiB").weights
    assert w.bytes == 524_288 + 128 + 35_840
