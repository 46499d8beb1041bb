"""`serve --engine sglang==X`: each SGLang release's defaults (read from its source, worked by
hand here), the release named in the report, unknown releases and models a release cannot serve
refused in one line, and --max-total-tokens against a published SGLang log."""

from __future__ import annotations

from pathlib import Path

import pytest

import flopcalc
from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.engine]

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "serve" / "configs"
LLAMA = CONFIGS / "llama-3.1-8b.json"  # 131,072 bytes per token at tp 1 (8·128·32·2·2)


@pytest.mark.parametrize("engine", ["sglang==0.4.9", "sglang==0.4.9.post6"])
def test_0_4_9_defaults_on_an_h100(cli, engine: str) -> None:
    """SGLang 0.4.9 (ServerArgs.__post_init__) reserves by the device's band, not by the chunk:
    81,559 MiB is under 90 GiB, so reserved = (9.5 + tp·pp/2)·1,024 = 10,240 MiB at tp 1;
    mem_fraction_static = round((81,559 − 10,240) / 81,559, 3) = round(0.87445, 3) = 0.874
    (0.5.5: 0.835). chunked_prefill_size 8,192 (under 160 GiB); cuda_graph_max_bs is not set
    over 35 GiB. Free before the weights at tp 1: CUDA's 81,082 MiB (85,020,639,232) − the
    context's 0.61 GiB (61·10,737,418 = 654,982,498) = 84,365,656,734; rest = 0.874·that −
    16,060,522,496 bytes of weights = 57,675,061,489.5 → 57,675,061,489 // 131,072 = 440,025
    tokens."""
    d = run(cli, "serve", LLAMA, "--engine", engine, "--accelerator", "h100")
    g = d["sglang"]
    assert g["version"] == "0.4.9"
    assert g["mem_fraction_static"] == 0.874
    assert (g["chunked_prefill_size"], g["cuda_graph_max_bs"]) == (8192, None)
    assert g["rest_bytes"] == 57_675_061_489
    assert g["max_total_num_tokens"] == 440_025
    assert "SGLang 0.4.9" in d["settings"]["engine"]


def test_the_python_api_takes_the_release() -> None:
    r = flopcalc.serve(str(LLAMA), engine="sglang==0.4.9", accelerator="h100")
    assert r.sglang.max_total_num_tokens == 440_025


def test_max_total_tokens_matches_a_published_log(cli) -> None:
    """kvcache-ai/ktransformers#1804: SGLang, DeepSeek-V3 at tp 2, --max-total-tokens 10000:
    "KV Cache is allocated. #tokens: 10000, KV size: 0.65 GB" (61·576·2 = 70,272 bytes a
    token; (10,000 + 1)·70,272 bytes = 0.6545 GiB), with memory to spare (30 GiB given)."""
    g = run(cli, "serve", CONFIGS / "deepseek-v3.json", "--tp", "2", "--engine", "sglang",
            "--kv-memory", "30GiB", "--max-total-tokens", "10000")["sglang"]
    assert g["max_total_num_tokens"] == 10_000
    assert g["log_line"] == "KV Cache is allocated. #tokens: 10000, KV size: 0.65 GB"


@pytest.mark.parametrize("args, words", [
    ((LLAMA, "--engine", "sglang==0.5.99"), "flopcalc knows the arithmetic of SGLang 0.4.9, "
     "0.5.5, 0.5.23"),
    ((LLAMA, "--engine", "sglang==0.4"), "SGLang 0.4.9, 0.5.5"),
    # a hybrid preset that names no architecture (nemotron-h-8b names NemotronHForCausalLM,
    # which 0.4.9 lacks: refused before its pools, tests/engines/test_engine_architectures.py)
    (("granite-4.0-h-small", "--engine", "sglang==0.4.9", "--kv-memory", "10GiB"),
     "SGLang 0.4.9 has no pool for recurrent"),
    ((LLAMA, "--max-total-tokens", "1000"), "--max-total-tokens is SGLang's option"),
])
def test_refusals_are_one_line(cli, args: tuple, words: str) -> None:
    r = cli("serve", *map(str, args))
    assert r.code == 2
    assert words in r.err
    assert len(r.err.strip().splitlines()) == 1
