"""`serve --engine sglang==0.5.23` on hybrid models (Mamba-2 / gated delta net beside full
attention), worked by hand from 0.5.23's code: `_handle_max_mamba_cache`
(mem_cache/kv_cache_configurator.py:3229-3409) keeps one padding slot in its split,
max_mamba_cache_size = int((budget − per_req) // per_req) with budget = rest·0.9/1.9, and
takes (size + 1)·per_req; the request pool is capped at max_mamba_cache_size // 5
(`_calculate_mamba_ratio` :3062-3088: 3 slots + 2 for the radix cache's extra buffer, which
`_mamba_radix_cache_resolution`, arg_groups/overrides.py:453-487, picks with the overlap
schedule on). SGLang's own code on more cases: tests/engines/test_sglang_reference.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.engine]

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "serve" / "configs"
NEMOTRON = str(CONFIGS / "nemotron-h-8b.json")
GRANITE = str(CONFIGS / "granite-4.0-h-tiny.json")
QWEN3_NEXT = str(CONFIGS / "qwen3-next-80b-a3b.json")
TEN_GIB = "10737418240"


def test_nemotron_h_states_keep_a_padding_slot(cli) -> None:
    """Nemotron-H-8B, tp 1, 10 GiB for the pools: 102,137,856 bytes of states a request (24
    Mamba-2 layers: conv (8,192 + 2·8·128)·3 values in bf16 + SSM 128·64·128 in fp32 =
    4,255,744 bytes a layer). budget = 10,737,418,240·0.9/1.9 = 5,086,145,482.1 = 49.80
    requests' states → (budget − per_req) // per_req = 48 = max_mamba_cache_size, and the
    states take 49·102,137,856 = 5,004,754,944 bytes (0.5.5: 49 slots, the same bytes). The
    token pool: 5,732,663,296 // 16,384 (4 attention layers · 8 KV heads · 128 · 2 · 2) =
    349,894 tokens. Requests: min(4,096, 349,894 // 2) capped at 48 // 5 = 9 (0.5.5: 49 // 3 =
    16)."""
    d = run(cli, "serve", NEMOTRON, "--engine", "sglang==0.5.23", "--kv-memory", TEN_GIB)
    d = d["sglang"]
    assert d["mamba_cache_per_req"] == 102_137_856
    assert d["max_mamba_cache_size"] == 48
    assert d["rest_bytes"] == 5_732_663_296
    assert d["max_total_num_tokens"] == 349_894
    assert d["max_running_requests"] == 9
    assert "SGLang 0.5.23" in d["source"] and "_handle_max_mamba_cache" in d["source"]


def test_granite_4_h_by_hand(cli) -> None:
    """Granite-4.0-H-Tiny, tp 1, 10 GiB: 36 Mamba-2 layers of 48 heads of 64, state 128, one
    group, conv 4: conv (3,072 + 2·1·128)·3 = 9,984 values in bf16 = 19,968 bytes, SSM
    48·64·128 = 393,216 values in fp32 = 1,572,864 bytes: 1,592,832 a layer, 57,341,952 a
    request. budget 5,086,145,482.1 = 88.70 requests' states → 87, taking 88·57,341,952 =
    5,046,091,776 bytes; the rest 5,691,326,464 // 8,192 (4 attention layers · 4 KV heads · 128
    · 2 · 2) = 694,742 tokens; requests min(int(694,742 / 131,072·512) = 2,713, 347,371) capped
    at 87 // 5 = 17."""
    d = run(cli, "serve", GRANITE, "--engine", "sglang==0.5.23", "--kv-memory", TEN_GIB)
    d = d["sglang"]
    assert d["mamba_cache_per_req"] == 57_341_952
    assert d["max_mamba_cache_size"] == 87
    assert d["cell_size"] == 8_192
    assert d["max_total_num_tokens"] == 694_742
    assert d["max_running_requests"] == 17


def test_too_few_states_is_refused_in_one_line(cli) -> None:
    """Refused as 0.5.23 refuses at start-up. 970,309,632 bytes: budget = 459,620,352 = 4.5
    Nemotron-H requests' states → max_mamba_cache_size 3, and 3 // 5 = 0 requests ("state cache
    is too small to serve any requests", kv_cache_configurator.py:3152-3157); 0.5.5 starts
    with 4 slots and one request. 200 MiB: budget under two requests' states → size 0 ("Not
    enough GPU memory for hybrid ... state cache", :3392)."""
    r = cli("serve", NEMOTRON, "--engine", "sglang==0.5.23", "--kv-memory", "970309632")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "too small to serve any requests" in r.err and "--mem-fraction-static" in r.err
    old = run(cli, "serve", NEMOTRON, "--engine", "sglang==0.5.5", "--kv-memory",
              "970309632")["sglang"]
    assert (old["max_mamba_cache_size"], old["max_running_requests"]) == (4, 1)
    r = cli("serve", NEMOTRON, "--engine", "sglang==0.5.23", "--kv-memory", "200MiB")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "Not enough GPU memory for hybrid" in r.err


def test_pages_that_divide_the_track_interval_are_served(cli) -> None:
    """--page-size 64 divides 256: Qwen3-Next at tp 4 on 10 GiB, tokens in whole pages."""
    d = run(cli, "serve", QWEN3_NEXT, "--tp", "4", "--engine", "sglang==0.5.23",
            "--kv-memory", TEN_GIB, "--page-size", "64")["sglang"]
    assert d["max_total_num_tokens"] % 64 == 0 and d["max_mamba_cache_size"] > 0


def test_the_python_api_takes_hybrid_models() -> None:
    import flopcalc

    r = flopcalc.serve(GRANITE, engine="sglang==0.5.23", kv_memory=TEN_GIB)
    assert (r.sglang.max_mamba_cache_size, r.sglang.max_running_requests) == (87, 17)
