"""`serve --max-loras`: the adapter slots vLLM reserves on every linear layer at load
(`engines.lora`), worked by hand from vLLM's `create_lora_weights` (lora/layers/
base_linear.py, row_parallel_linear.py), and vLLM's refusals of its LoRA options."""

from __future__ import annotations

import pytest

from flopcalc import api
from tests.conftest import run_process

pytestmark = [pytest.mark.hand, pytest.mark.engine]


def test_llama_8b_four_adapters_of_rank_16_by_hand():
    # Llama-3.1-8B (d 4096, 32 query and 8 KV heads of 128, f 14336, 32 layers), tp 1, bf16.
    # Values per slot of rank r = 16, per layer (column: r·n_in + r·n_out; row: the same at
    # tp 1): q 16·4096 + 16·4096 = 131,072; k and v 16·4096 + 16·1024 = 81,920 each;
    # o 131,072; gate and up 16·4096 + 16·14336 = 294,912 each; down 16·14336 + 16·4096 =
    # 294,912. Σ = 131,072 + 2·81,920 + 131,072 + 3·294,912 = 1,310,720.
    # × 32 layers × 4 slots × 2 bytes = 335,544,320 bytes (320 MiB)
    lora = api.serve("llama-3.1-8b", accelerator="h100", max_loras=4)
    plain = api.serve("llama-3.1-8b", accelerator="h100")
    assert lora.lora.device_bytes == [335_544_320]
    # allocated with the weights, so the estimated memory for the cache is that much less
    assert plain.capacity.memory.stages[0].available_bytes - \
        lora.capacity.memory.stages[0].available_bytes == 335_544_320
    assert lora.capacity.num_blocks < plain.capacity.num_blocks
    assert (lora.lora.max_lora_rank, lora.lora.max_cpu_loras) == (16, 4)  # vLLM's defaults


def test_tensor_parallel_split_by_hand():
    # tp 2, rank 8, 1 slot: column layers keep the whole input and half the output, row layers
    # half the input and the whole output. Per layer: q 8·4096 + 8·2048 = 49,152; k, v
    # 8·4096 + 8·512 = 36,864 each; o 8·2048 + 8·4096 = 49,152; gate, up 8·4096 + 8·7168 =
    # 90,112 each; down 8·7168 + 8·4096 = 90,112. Σ = 49,152 + 73,728 + 49,152 + 270,336 =
    # 442,368; × 32 layers × 2 bytes = 28,311,552
    r = api.serve("llama-3.1-8b", accelerator="h100", tp=2, max_lora_rank=8)
    assert r.lora.device_bytes == [28_311_552] and r.lora.max_loras == 1
    # two pipeline stages of 16 layers, tp 1, rank 8: half of the rank-16 layer above,
    # 655,360 values, × 16 layers × 2 bytes = 20,971,520 on each stage
    r = api.serve("llama-3.1-8b", accelerator="h100", pp=2, max_lora_rank=8, max_loras=1)
    assert r.lora.device_bytes == [20_971_520] * 2
    # given memory for the cache (the engine's own figure) is not reduced again
    given = api.serve("llama-3.1-8b", kv_memory="10GiB", max_loras=8)
    assert given.capacity.memory.stages[0].available_bytes == 10 << 30


@pytest.mark.parametrize("args, says", [
    (["--max-lora-rank", "7"], "not a rank vLLM accepts"),
    (["--max-loras", "4", "--max-cpu-loras", "2"], "below --max-loras 4"),
])
def test_bad_lora_options_are_one_line(args, says):
    r = run_process("serve", "llama-3.1-8b", "--kv-memory", "1GiB", *args)
    assert r.returncode == 2 and r.stdout == "" and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr

