"""vLLM 0.33's persistent buffers and CUDA-graph estimate (`engines.graphs`), worked by hand from
its code (v1/worker/gpu_model_runner.py, v1/worker/block_table.py, config/vllm.py
_set_cudagraph_sizes, v1/worker/gpu_worker.py determine_available_memory)."""

from __future__ import annotations

import pytest

from flopcalc import api
from flopcalc.engines.graphs import capture_sizes, graph_estimate, persistent_buffers

pytestmark = [pytest.mark.hand]

MiB = 1 << 20
CENTI = 10_737_418  # ⌊2^30 / 100⌋: published figures are hundredths of a GiB


def stage(model: str, **options) -> dict:
    return api.serve(model, **options).to_dict()["capacity"]["memory"]["stages"][-1]


def test_persistent_buffers_llama_8b_by_hand() -> None:
    # T = 8,192 tokens, R = 1,024 sequences, L = 16,000, d = 4,096, bf16:
    # inputs_embeds 8,192 × 4,096 × 2 = 67,108,864; input_ids 4T 32,768, positions 8T 65,536,
    # is_padding T 8,192, req_indices 8T 65,536, is_token_ids T 8,192, slot_mapping 8T 65,536,
    # query_pos 8 × max(1,025, 8,192) = 65,536 → 67,420,160; block table 1,024 ×
    # ceil(16,000 / 16) × 4 = 4,096,000 → 71,516,160; query_start_loc 4 × 1,025 = 4,100 → 4,608
    # (512-byte unit), seven int32 per request 7 × 4,096 = 28,672, prev_positions 8,192,
    # discard_request_mask 1,024 → + 42,496 = 71,558,656
    b = persistent_buffers(8192, 1024, 16000, 4096, 2)
    assert b.bytes == 71_558_656
    assert dict(b.parts)["inputs_embeds"] == 67_108_864
    assert dict(b.parts)["block_table"] == 4_096_000
    # a block size given: 1,024 × ceil(16,000 / 64) × 4 = 1,024,000 in place of 4,096,000
    assert persistent_buffers(8192, 1024, 16000, 4096, 2, 64).bytes == 71_558_656 - 3_072_000


def test_capture_sizes_by_hand() -> None:
    # max_num_seqs 1,024: top min(2,048, 512) = 512: 1, 2, 4 (3) + 8..248 by 8 (31) + 256..512
    # by 16 (17) = 51
    sizes = capture_sizes(1024, 8192)
    assert len(sizes) == 51 and sizes[-1] == 512 and sizes[:5] == [1, 2, 4, 8, 16]
    # max_num_seqs 128: top 256: 3 + 31 + [256] = 35
    assert len(capture_sizes(128, 8192)) == 35
    # max_num_batched_tokens 100 below the top: sizes ≤ 100 (1, 2, 4, 8..96: 15) + 100
    assert capture_sizes(1024, 100)[-2:] == [96, 100] and len(capture_sizes(1024, 100)) == 16
    # sm_100's ceiling 1,024: 51 + 528..1,024 by 16 (32) = 83
    assert len(capture_sizes(1024, 8192, sm100=True)) == 83


def test_graph_interval_by_hand() -> None:
    # 1,024 sequences: PIECEWISE 51 and FULL 51 (every size ≤ 1,024): the code's floor
    # (51 − 1) + (51 − 1) = 100 MiB = 104,857,600
    g = graph_estimate(1024, 8192)
    assert (g.piecewise, g.full, g.floor) == (51, 51, 104_857_600)
    # the published estimates 0.13, 0.36, 4.38 GiB: point the middle, high the largest
    assert g.point == 36 * CENTI == 386_547_048
    assert g.high == 438 * CENTI == 4_702_989_084
    # 128 sequences: PIECEWISE 35, FULL the sizes ≤ 128: 3 + 16 = 19 → (34 + 18) MiB
    assert graph_estimate(128, 8192).floor == 52 * MiB


def test_llama_8b_on_h100_by_hand_vllm_0_33() -> None:
    # vLLM 0.33 (the default), H100, utilisation 0.92, 8,192 tokens, 1,024 sequences:
    # requested ceil(85,020,639,232 × 0.92) = ceil(78,218,988,093.44) = 78,218,988,094
    # activation: 1,024 × 128,256 × 14 = 1,838,678,016 + hidden (8,192 + 2 · 1,024) · 4,096 ·
    # 2 = 83,886,080 + cuBLAS 33,554,432 + graph point 386,547,048 = 2,342,665,576;
    # non-torch 139,586,434; persistent buffers 71,558,656 (above)
    st = stage("llama-3.1-8b", accelerator="h100", max_model_len=16000)
    w = st["weights_bytes"]
    assert st["requested_bytes"] == 78_218_988_094
    assert st["activation_bytes"] == 2_342_665_576
    assert st["buffers_bytes"] == 71_558_656
    assert st["cudagraph_bytes"] == 386_547_048
    rest = 78_218_988_094 - w - 139_586_434 - 71_558_656
    assert st["available_bytes"] == rest - 2_342_665_576
    # low: the graph estimate's top 4,702,989,084 in place of the point; high: its floor
    # 104,857,600 (the sampler has one path in 0.33)
    assert st["available_low_bytes"] == rest - (2_342_665_576 - 386_547_048 + 4_702_989_084)
    assert st["available_high_bytes"] == rest - (2_342_665_576 - 386_547_048 + 104_857_600)


def test_releases_before_0_21_subtract_neither() -> None:
    # vLLM 0.11's memory_profiling takes weights + torch's peak increase + non-torch growth:
    # no buffers, no graph estimate; its figure is the one test_vllm_memory_overheads checks
    st = stage("llama-3.1-8b", accelerator="h100", engine="vllm==0.11", max_model_len=16000)
    assert st["buffers_bytes"] is None and st["cudagraph_bytes"] is None
    how = api.serve("llama-3.1-8b", accelerator="h100", max_model_len=16000).to_dict()
    text = " ".join(how["capacity"]["memory"]["how"])
    assert "as vLLM 0.33 holds them" in text and "as vLLM 0.33 subtracts it" in text
