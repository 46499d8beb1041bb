"""vLLM's defaults by model family: Nemotron-H's SSM state in fp32 from the shipped preset too
(vLLM's NemotronHForCausalLMConfig: DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32" when config.json
says nothing, model_executor/models/config.py), and `--kv-dtype fp8_ds_mla` on latent attention
paged in FlashMLA-sparse's 64-token blocks, the one backend that lists that layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flopcalc.commands import COMMANDS
from flopcalc.errors import FlopcalcError

pytestmark = pytest.mark.engine

DATA = Path(__file__).resolve().parents[1] / "data" / "serve"
NEMOTRON = [c for c in json.loads((DATA / "vllm_0_33.json").read_text())["cases"]
            if c["model"] == "nemotron-h-8b"]


@pytest.mark.parametrize("case", NEMOTRON, ids=lambda c: f"L{c['max_model_len']}-tp{c['tp']}-"
                         + ",".join(f"{k}={v}" for k, v in c["options"].items()))
def test_nemotron_preset_equals_vllm(case: dict) -> None:
    """The preset (no config.json) gives what vLLM 0.33.0's own code computed from the
    checkpoint's config.json (tests/data/serve/vllm_0_33.json)."""
    given = dict(max_model_len=case["max_model_len"], tp=case["tp"],
                 kv_memory=str(case["kv_memory"]), **case["options"])
    report = COMMANDS["serve"]("nemotron-h-8b", **given)
    c = report.to_dict()["capacity"]
    assert report.to_dict()["settings"]["mamba_ssm_cache_dtype"] == "fp32"
    assert (c["num_blocks"], c["tokens"], c["log_line"]) == \
        (case["num_blocks"], case["tokens"], case["log"])
    assert not any("recurrent states sized in the model dtype" in w for w in report.warnings)


def test_fp8_ds_mla_pages_64_tokens() -> None:
    """DeepSeek-V3 (61 latent layers, r_kv 512 + 64 rotary): fp8_ds_mla keeps 512 fp8 values,
    4 fp32 scales and 64 bf16 rotary values = 512 + 16 + 128 = 656 bytes per token and layer.
    Block 64: page 64·656 = 41,984 bytes; a block of all layers 61·41,984 = 2,561,024 bytes.
    40 GiB = 42,949,672,960 bytes → ⌊42,949,672,960 / 2,561,024⌋ = 16,770 blocks
    (16,770·2,561,024 = 42,948,372,480; +2,561,024 would exceed). At L = 163,840 one request
    needs 163,840 / 64 = 2,560 blocks: concurrency 16,770 / 2,560 = 6.55078125, and the
    logged size int(6.55078125·163,840) = 1,073,280 tokens (= 16,770·64)."""
    report = COMMANDS["serve"](str(DATA / "configs" / "deepseek-v3.json"), tp=8,
                               max_model_len=163840, kv_dtype="fp8_ds_mla",
                               kv_memory="42949672960")
    c = report.to_dict()["capacity"]
    assert c["bytes_per_block"] == 2_561_024
    assert c["num_blocks"] == 16_770
    assert c["tokens"] == 1_073_280
    assert c["max_concurrency"] == 6.55078125


def test_fp8_ds_mla_refuses_a_block_not_of_64() -> None:
    with pytest.raises(FlopcalcError, match="fp8_ds_mla runs on FlashMLA-sparse alone"):
        COMMANDS["serve"](str(DATA / "configs" / "deepseek-v3.json"), tp=8,
                          max_model_len=163840, kv_dtype="fp8_ds_mla", block_size=16,
                          kv_memory="42949672960")
