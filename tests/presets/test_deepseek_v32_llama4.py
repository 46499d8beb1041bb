"""The DeepSeek-V3.2 and Llama 4 presets: their totals (transformers' models built on the meta
device from the published configs: tests/pytorch/test_sparse.py checks them there), and the
published configs import to the same figures as the presets."""

from __future__ import annotations

import pytest

from tests.conftest import DATA, run

pytestmark = [pytest.mark.recorded, pytest.mark.invariant]

SPARSE = DATA / "hf" / "sparse"

# (total, active): DeepseekV32ForCausalLM and Llama4ForCausalLM on the meta device.
TOTALS = {
    # DeepSeek-V3's 671,026,404,352 + 61 indexers of 1,536·8,192 + 7,168·128 + 2·128 +
    # 7,168·64 = 13,959,424; active: 58 MoE layers use 8 of 256 experts of 3·7,168·2,048.
    "deepseek-v3.2": (671_877_929_216, 671_877_929_216 - 58 * 248 * 3 * 7168 * 2048),
    # 48 MoE layers use 1 of 16 experts of 3·5,120·8,192.
    "llama-4-scout": (107_769_861_120, 107_769_861_120 - 48 * 15 * 3 * 5120 * 8192),
    # 24 MoE layers use 1 of 128.
    "llama-4-maverick": (400_711_848_960, 400_711_848_960 - 24 * 127 * 3 * 5120 * 8192),
}


@pytest.mark.parametrize("name", sorted(TOTALS))
def test_totals(cli, name):
    p = run(cli, "model", name)["params"]
    assert (p["total"], p["active"]) == TOTALS[name]


@pytest.mark.parametrize("name", sorted(TOTALS))
@pytest.mark.parametrize("attention", ["full", "causal"])
def test_published_config_counts_as_the_preset(cli, name, attention):
    # Llama 4's files are the multimodal wrapper: its text_config is the preset, and its vision
    # tower and projector (`vision.*`, tests/kinds/test_vision.py) are counted besides.
    path = SPARSE / f"{name}.json"
    for seq in (1000, 9000):
        ours = run(cli, "model", str(path), "--seq", seq, "--attention", attention)
        preset = run(cli, "model", name, "--seq", seq, "--attention", attention)
        text = {k: v for k, v in ours["params"]["components"].items()
                if not k.startswith("vision.")}
        assert text == preset["params"]["components"]
        assert ours["params"]["total"] - preset["params"]["total"] == sum(
            v for k, v in ours["params"]["components"].items() if k.startswith("vision."))
        assert ours["flops"]["components"] == preset["flops"]["components"]
    assert run(cli, "infer", str(path), "--prompt", 3000, "--gen", 5000)["decode"] == run(
        cli, "infer", name, "--prompt", 3000, "--gen", 5000)["decode"]


def test_deepseek_v32_cache_and_sparse_decode(cli):
    kv = run(cli, "infer", "deepseek-v3.2", "--prompt", 4096, "--gen", 1)["kv_cache"]
    # 61 layers x (512 + 64 + 128) values x 2 bytes.
    assert kv["bytes_per_token"] == 61 * 704 * 2 == 85_888
    d = run(cli, "infer", "deepseek-v3.2", "--prompt", 4096, "--gen", 2)["decode"]["components"]
    # The step at 4,098 keeps 2,048 keys: scores 2·128·2,048·576 per layer; the indexer sees
    # all 4,098: 2·64·128·4,098.
    assert d["decoder.attn.scores"] == 61 * 2 * 2 * 128 * 2048 * 576
    assert d["decoder.attn.indexer.scores"] == 61 * 2 * 64 * 128 * (4097 + 4098)


def test_llama4_chunked_layers_bound_the_cache(cli):
    kv = run(cli, "infer", "llama-4-scout", "--prompt", 100_000, "--gen", 1)["kv_cache"]
    # 36 chunked layers hold 8,192 tokens, the 12 NoPE layers all 100,001; K and V of 8 heads
    # of 128 in bf16: 4,096 bytes per token and layer.
    assert kv["bytes"] == 4096 * (36 * 8192 + 12 * 100_001)
