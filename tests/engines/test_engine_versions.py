"""`serve --engine vllm==X.Y`: the defaults `vllm serve` chose in that release line where an
option is not given, each read from the release's source distribution (vllm/engine/
arg_utils.py, vllm/config.py or vllm/config/); the cache arithmetic stays 0.33.0's."""

from __future__ import annotations

import math

import pytest

from flopcalc import api
from tests.conftest import run_process

pytestmark = pytest.mark.engine


def settings(model: str, **options):
    r = api.serve(model, **options)
    s = r.settings
    return r, (s.gpu_memory_utilization, s.max_num_batched_tokens, s.max_num_seqs)


def test_v0_chunks_prefills_only_past_32k():
    # 0.6.0 EngineArgs.create_engine_config: chunked prefill on by default when
    # max_model_len > 32768 (and no sliding window, recurrent layers, LoRA or draft); then
    # SchedulerConfig takes 512 tokens, else max(max_model_len, 2048); max_num_seqs 256;
    # gpu_memory_utilization 0.90
    r, got = settings("llama-3.1-8b", accelerator="h100", engine="vllm==0.6")
    assert got == (0.9, 512, 256)  # 131,072 > 32,768: chunked
    assert r.settings.engine == "vLLM 0.33.0 (defaults of vLLM 0.6)"
    assert "chunked prefill on" in r.conventions[-1]
    _, got = settings("llama-3.1-8b", accelerator="h100", engine="vllm==0.6",
                      max_model_len="8k")
    assert got == (0.9, 8192, 256)  # max(8,192, 2,048), unchunked
    _, got = settings("llama-3.1-8b", accelerator="h100", engine="vllm==0.6",
                      max_model_len=1000)
    assert got[1] == 2048  # max(1,000, 2,048)
    # gpt-oss-20b has sliding windows: no chunked prefill, the whole context in one step
    _, got = settings("gpt-oss-20b", kv_memory="1GiB", engine="vllm==0.6")
    assert got[1] == 131072


def test_v1_defaults_by_device():
    # 0.8.0 _set_default_args_v1: 8192 tokens on a device named H100/H200, else 2048;
    # max_num_seqs 1024
    assert settings("llama-3.1-8b", accelerator="h100", engine="vllm==0.8")[1] == \
        (0.9, 8192, 1024)
    assert settings("llama-3.1-8b", accelerator="a100", engine="vllm==0.8")[1] == \
        (0.9, 2048, 1024)
    assert settings("llama-3.1-8b", accelerator="b200", engine="vllm==0.8")[1] == \
        (0.9, 2048, 1024)
    # 0.10.0 / 0.11.0: >= 70 GiB and not an A100: 8192 and 1024, else 2048 and 256
    assert settings("llama-3.1-8b", accelerator="b200", engine="vllm==0.10")[1] == \
        (0.9, 8192, 1024)
    assert settings("llama-3.1-8b", accelerator="a100", engine="vllm==0.11.0")[1] == \
        (0.9, 2048, 256)
    assert settings("llama-3.1-8b", accelerator="a100-pcie-40gb", engine="vllm==0.10.1.1")[1] \
        == (0.9, 2048, 256)
    # no version: 0.33's, as before
    assert settings("llama-3.1-8b", accelerator="h100")[1] == (0.92, 8192, 1024)


def test_the_version_changes_the_memory_for_the_cache():
    # the engine takes ceil(memory x 0.9) under 0.10 where 0.33 takes ceil(memory x 0.92)
    old = api.serve("llama-3.1-8b", accelerator="h100", engine="vllm==0.10")
    new = api.serve("llama-3.1-8b", accelerator="h100")
    st_old, st_new = old.capacity.memory.stages[0], new.capacity.memory.stages[0]
    assert st_old.requested_bytes == math.ceil(st_old.device_bytes * 9 / 10)
    assert st_new.requested_bytes == math.ceil(st_new.device_bytes * 92 / 100)
    assert old.capacity.num_blocks < new.capacity.num_blocks


def test_a_given_option_wins_over_the_version():
    _, got = settings("llama-3.1-8b", accelerator="h100", engine="vllm==0.6",
                      gpu_memory_utilization="0.5", max_num_batched_tokens=4096, max_num_seqs=8)
    assert got == (0.5, 4096, 8)


@pytest.mark.parametrize("engine, says", [
    ("vllm==0.7", "0.6, 0.8, 0.10, 0.11, 0.33"),
    ("vllm==", "0.6, 0.8, 0.10, 0.11, 0.33"),
    ("sglang==0.4.8", "SGLang 0.4.9, 0.5.5"),
    ("sglang==\x1b[31m", "SGLang 0.4.9, 0.5.5"),
    ("vllm==\x1b[31m", "0.6, 0.8"),
])
def test_unknown_versions_are_one_line(engine, says):
    r = run_process("serve", "llama-3.1-8b", "--kv-memory", "1GiB", "--engine", engine)
    assert r.returncode == 2 and r.stdout == "" and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "\x1b" not in r.stderr


def test_the_flags_that_do_not_follow_a_version_are_named():
    # 0.6.0 EngineArgs: enable_prefix_caching False, and V0 has no async scheduling; 0.10.0
    # SchedulerConfig: async_scheduling False
    r = api.serve("llama-3.1-8b", kv_memory="1GiB", engine="vllm==0.6")
    assert "give --no-async-scheduling --no-prefix-caching" in r.warnings[-1]
    r = api.serve("llama-3.1-8b", kv_memory="1GiB", engine="vllm==0.10")
    assert r.warnings[-1].endswith("give --no-async-scheduling to match it")
    r = api.serve("llama-3.1-8b", kv_memory="1GiB", engine="vllm==0.10",
                  async_scheduling=False)
    assert not any("to match it" in w for w in r.warnings)
