"""`serve --engine sglang==X` with SGLang's DEFAULTS: the mem_fraction_static each release picks
and the memory it reserves, worked by hand from each release's code (0.5.23:
arg_groups/memory_hook.py:89-188 for the chunk and decode-graph defaults, :281-328 for the
fraction, `reserve_for_graph_mb` :357-399, prefill graph sizes cuda_graph_hook.py:480-497),
0.5.23's request pool, the release named in the output, and unknown releases refused in one
line. SGLang's own code on the same cases: tests/engines/test_sglang_reference.py."""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from flopcalc.engines import sglang as S
from flopcalc.errors import FlopcalcError
from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.engine]

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "serve" / "configs"
# Qwen/Qwen3-235B-A22B-FP8's config.json (as reconstructed in tests/data/hf/quant/SOURCES.md;
# the reference tool reads each model from configs/)
QWEN3_235B = CONFIGS / "qwen3-235b-a22b-fp8.json"
LLAMA = CONFIGS / "llama-3.1-8b.json"  # 8 KV heads of 128, 32 layers: 131,072 bytes a token
H100_BYTES = 81_559 * 2**20  # 85,520,809,984: what SGLang reads on an H100 80GB
# What SGLang reads free before the weights on an H100 at tp > 1 (estimated from published
# measurements): CUDA's total 81,082 MiB = 85,020,639,232 − SGLang's start-up at tp > 1, 1.90
# GiB in use before the weights on an H200 worker at tp 8 (SemiAnalysisAI/InferenceX#2128:
# 139.80 − (12.25 + 125.65) GiB), 190·10,737,418 = 2,040,109,420
FREE_TP4 = 82_980_529_812


@pytest.mark.parametrize("version, fraction, reserved", [
    # 0.4.9: (9.5 + tp·pp/2) GiB under 90 GiB = 11.5 GiB = 11,776 MiB;
    #   round((81,559 − 11,776) / 81,559, 3) = round(0.85561, 3)
    ("0.4.9", 0.856, 11_776),
    # 0.5.5: 512 + 1.5·8,192 + 2·512 (decode graphs, tp ≥ 4) + 4·1/8·1,024 = 14,336;
    #   round(67,223 / 81,559, 3) = round(0.82422, 3)
    ("0.5.5", 0.824, 14_336),
    # 0.5.23: 0.5.5's + the prefill CUDA graphs: 8 MiB for each of the 58 sizes up to 8,192
    #   (4..32 by 4: 8; 48..256 by 16: 14; 288..512 by 32: 8; 576..1,024 by 64: 8;
    #   1,280..4,096 by 256: 12; 4,608..8,192 by 512: 8) = 464: 14,800;
    #   round(66,759 / 81,559, 3) = round(0.81853, 3)
    ("0.5.23", 0.819, 14_800),
])
def test_qwen3_235b_fp8_on_four_h100_at_each_releases_defaults(cli, version: str,
                                                                fraction: float,
                                                                reserved: int) -> None:
    """From the published config.json alone (fp8 blocks read from its quantization_config),
    4 H100, tp 4, SGLang's defaults. One KV head of 128 a rank: 1·128·94·2·2 = 48,128 bytes a
    token; rest = fraction·82,980,529,812 (FREE_TP4) − the rank's 59,186,485,760 bytes of
    weights."""
    d = run(cli, "serve", QWEN3_235B, "--accelerator", "h100", "--tp", "4", "--engine",
            f"sglang=={version}")["sglang"]
    assert d["version"] == version
    assert d["mem_fraction_static"] == fraction
    assert d["reserved_mib"] == reserved
    assert d["weights_bytes"] == 59_186_485_760
    rest = int(Fraction(str(fraction)) * FREE_TP4) - 59_186_485_760
    assert d["rest_bytes"] == rest
    assert d["max_total_num_tokens"] == rest // 48_128


def test_0_5_23_tokens_on_four_h100_by_hand(cli) -> None:
    """0.819·82,980,529,812 = 67,961,053,916.028 − 59,186,485,760 = 8,774,568,156 bytes →
    // 48,128 = 182,317 tokens (the published SGLang log of this checkpoint on 4 H100, at 0.93:
    367,404). The request pool: min(max(int(182,317 / 40,960·512), 2048), 4096) = 2,278, under
    182,317 // 2."""
    d = run(cli, "serve", QWEN3_235B, "--accelerator", "h100", "--tp", "4", "--engine",
            "sglang==0.5.23")["sglang"]
    assert d["rest_bytes"] == 8_774_568_156
    assert d["max_total_num_tokens"] == 182_317
    assert d["max_running_requests"] == 2_278
    assert "memory_hook.py" in d["source"] and "pool_configurator.py" in d["source"]


def test_latent_attention_reserves_a_flat_prefill_graph_budget(cli) -> None:
    """DeepSeek-V3 (MLA) on 8 H200 (143,771 MiB): 0.5.23 reserves 1.5 GiB for the prefill
    graphs of an MLA backend instead of 8 MiB a size: 512 + 1.5·8,192 + 8/8·1,024 + 2·512 +
    1,536 = 16,384 → round(127,387 / 143,771, 3) = round(0.88604, 3) = 0.886; 0.5.5 without the
    prefill graphs: 14,848 → round(0.89672, 3) = 0.897."""
    args = ("serve", CONFIGS / "deepseek-v3.json", "--accelerator", "h200", "--tp", "8")
    new = run(cli, *args, "--engine", "sglang==0.5.23")["sglang"]
    old = run(cli, *args, "--engine", "sglang==0.5.5")["sglang"]
    assert (new["reserved_mib"], new["mem_fraction_static"]) == (16_384, 0.886)
    assert (old["reserved_mib"], old["mem_fraction_static"]) == (14_848, 0.897)


def test_a100_40gb_band(cli) -> None:
    """A100 40GB (40,960 MiB, under 60 GiB, no 10 GiB floor), tp 1, 0.5.23: chunk 4,096,
    decode graphs up to 32; prefill graph sizes up to 4,096: 8 + 14 + 8 + 8 + 12 = 50 → 400
    MiB; 512 + 6,144 + 128 + 64 + 400 = 7,248 → round(33,712 / 40,960, 3) = round(0.82305, 3)."""
    d = run(cli, "serve", LLAMA, "--accelerator", "a100-40gb", "--engine",
            "sglang==0.5.23")["sglang"]
    assert (d["chunked_prefill_size"], d["cuda_graph_max_bs"]) == (4096, 32)
    assert d["reserved_mib"] == 7_248
    assert d["mem_fraction_static"] == 0.823


def test_a_model_path_naming_llama_2_caps_the_prefill_graphs(cli, tmp_path) -> None:
    """0.5.23 caps the prefill graphs at 4,096 tokens when the model path names llama-2
    (memory_hook.py:258-263): 50 sizes, 400 MiB, not 58 and 464. Llama 2 7B on an H200 at tp 2:
    512 + 12,288 + 2·256 + 2/8·1,024 + 400 = 13,968 → round(129,803 / 143,771, 3) =
    round(0.902846, 3) = 0.903; the same config under another name: 14,032 → round(0.902401,
    3) = 0.902."""
    renamed = tmp_path / "my-model.json"
    shutil.copyfile(CONFIGS / "llama-2-7b.json", renamed)
    args = ("--accelerator", "h200", "--tp", "2", "--engine", "sglang==0.5.23")
    named = run(cli, "serve", CONFIGS / "llama-2-7b.json", *args)["sglang"]
    other = run(cli, "serve", renamed, *args)["sglang"]
    assert (named["reserved_mib"], named["mem_fraction_static"]) == (13_968, 0.903)
    assert (other["reserved_mib"], other["mem_fraction_static"]) == (14_032, 0.902)


def test_given_running_requests_lower_the_decode_graphs(cli) -> None:
    """0.5.23 lowers the default decode-graph max_bs to --max-running-requests
    (memory_hook.py:182-188): 16 on an H100 at tp 1 reserves 512 + 12,288 + 128 + 2·16 + 464 =
    13,424 MiB → round(68,135 / 81,559, 3) = round(0.835408, 3) = 0.835 (256 graphs: 13,904,
    0.830)."""
    base = ("serve", LLAMA, "--accelerator", "h100", "--engine", "sglang==0.5.23")
    capped = run(cli, *base, "--max-running-requests", "16")["sglang"]
    plain = run(cli, *base)["sglang"]
    assert (capped["cuda_graph_max_bs"], capped["reserved_mib"]) == (16, 13_424)
    assert capped["mem_fraction_static"] == 0.835
    assert (plain["cuda_graph_max_bs"], plain["reserved_mib"]) == (256, 13_904)
    assert plain["mem_fraction_static"] == 0.830


def test_0_5_23_request_pool_is_at_most_half_the_tokens(cli) -> None:
    """resolve_max_num_reqs (kv_cache_configurator.py:3123-3132): min(given, tokens // 2):
    --max-total-tokens 60 and --max-running-requests 48 give 30 requests under 0.5.23, 48 under
    0.5.5 (which takes the given number)."""
    base = ("serve", LLAMA, "--accelerator", "h100", "--max-total-tokens", "60",
            "--max-running-requests", "48")
    assert run(cli, *base, "--engine", "sglang==0.5.23")["sglang"]["max_running_requests"] == 30
    assert run(cli, *base, "--engine", "sglang==0.5.5")["sglang"]["max_running_requests"] == 48


def test_keys_and_values_of_different_widths() -> None:
    """0.5.23 sizes a token as n·(head_dim + v_head_dim)·layers·bytes (pool_configurator.py
    :520-531): two layers of 2 KV heads, keys 192 wide, values 128, bf16: 2·(192 + 128)·2·2 =
    2,560 bytes; earlier releases take one head_dim for both and are refused."""
    layer = SimpleNamespace(layout="full", heads=2, k_dim=192, v_dim=128)
    assert S.cell_size([layer, layer], "auto", S.release("0.5.23").mixed_kv_dims) == 2_560
    with pytest.raises(FlopcalcError, match="--engine sglang==0.5.23"):
        S.cell_size([layer, layer], "auto", S.release("0.5.5").mixed_kv_dims)


def test_the_output_names_the_code_it_follows(cli) -> None:
    r = cli("serve", str(QWEN3_235B), "--accelerator", "h100", "--tp", "4", "--engine",
            "sglang==0.5.23")
    assert r.code == 0
    assert "SGLang 0.5.23 arithmetic" in r.out
    assert "follows SGLang 0.5.23 arg_groups/memory_hook.py" in " ".join(r.out.split())
    old = run(cli, "serve", QWEN3_235B, "--accelerator", "h100", "--tp", "4", "--engine",
              "sglang==0.4.9")["sglang"]
    assert old["source"].startswith("SGLang 0.4.9 server_args.py")


@pytest.mark.parametrize("engine", ["sglang==0.6", "sglang==0.5.24", "sglang==0.3.0",
                                    "sglang==0.5.\x1b[2J", "sglang==x" * 30])
def test_unknown_release_lists_the_known_ones(cli, engine: str) -> None:
    r = cli("serve", str(LLAMA), "--accelerator", "h100", "--engine", engine)
    assert r.code == 2
    assert "flopcalc knows the arithmetic of SGLang 0.4.9, 0.5.5, 0.5.23" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert "\x1b" not in r.err


def test_0_5_23_refuses_recurrent_models_in_one_line(cli) -> None:
    """0.5.23 serves hybrid models (tests/engines/test_sglang_hybrid_0_5_23.py) but refuses,
    at start-up, a page size that does not divide its Mamba radix cache's 256-token track
    interval (arg_groups/mamba_hook.py:135); 0.4.9 has no state pool at all."""
    r = cli("serve", "nemotron-h-8b", "--accelerator", "h100", "--engine", "sglang==0.5.23",
            "--page-size", "48")
    assert r.code == 2
    assert "SGLang 0.5.23" in r.err and "--page-size 48" in r.err and "256" in r.err
    assert len(r.err.strip().splitlines()) == 1
    r = cli("serve", "nemotron-h-8b", "--accelerator", "h100", "--engine", "sglang==0.4.9")
    assert r.code == 2
    assert "SGLang 0.4.9" in r.err and "--engine sglang==0.5.5" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_the_published_qwen3_log_at_its_own_setting(cli) -> None:
    """vllm-project/vllm#21348 (July 2025, SGLang's 0.4.9 line): Qwen3-235B-A22B-FP8 on 4 H100
    launched with `--tp 4 --mem-fraction-static 0.93` logs "KV Cache is allocated. #tokens:
    367404, K size: 8.23 GB, V size: 8.23 GB". The fraction was given, so no release's default
    enters. Estimated: 0.93·82,980,529,812 (FREE_TP4) = 77,171,892,725.16 − 59,186,485,760 =
    17,985,406,965 bytes // 48,128 = 373,699 tokens, 1.7% over the log (7.9% with only the CUDA
    context and NCCL's 0.20 GiB subtracted, 15.1% when the device's 81,559 MiB were taken as
    free): the 0.21 GiB a rank left between them is what loading allocates beyond the weights,
    which no release's code states.
    Given the pool's bytes, 367,404·48,128 = 17,682,419,712, the log line is reproduced: the
    buffers (367,404 + 1)·48,128 / 2 bytes = 8.2345 GiB for K and for V."""
    base = ("serve", QWEN3_235B, "--tp", "4", "--engine", "sglang==0.4.9")
    est = run(cli, *base, "--accelerator", "h100", "--mem-fraction-static", "0.93")["sglang"]
    assert est["rest_bytes"] == 17_985_406_965
    assert est["max_total_num_tokens"] == 373_699
    given = run(cli, *base, "--kv-memory", "17682419712")["sglang"]
    assert given["log_line"] == ("KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, "
                                 "V size: 8.23 GB")


def test_the_python_api_takes_0_5_23() -> None:
    """flopcalc.serve: the same figures as the CLI (0.819, 14,800 MiB, 182,317 tokens above);
    the model path reaches 0.5.23's llama-2 rule (0.903 on an H200 at tp 2, above)."""
    import flopcalc

    r = flopcalc.serve(str(QWEN3_235B), engine="sglang==0.5.23", accelerator="h100", tp=4)
    assert (r.sglang.reserved_mib, r.sglang.max_total_num_tokens) == (14_800, 182_317)
    assert r.sglang.reserve_terms[-1] == "prefill CUDA graphs 8·58 sizes: 464 MiB"
    r = flopcalc.serve(str(CONFIGS / "llama-2-7b.json"), engine="sglang==0.5.23",
                       accelerator="h200", tp=2)
    assert r.sglang.mem_fraction_static == 0.903
