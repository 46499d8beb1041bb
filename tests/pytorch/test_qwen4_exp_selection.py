"""Qwen4-Exp's QSA under `--attention causal`, like with like: the keys flopcalc counts for each
query (kinds/qwen4_exp.py `QsaAttention.pairs`) against the selection mask transformers 5.24's
indexer (`Qwen4ExpTextQSAIndexer`) returns in a real forward, for several block sizes, budgets
and lengths (the selection is data-dependent in which keys, never in how many)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from flopcalc.kinds.base import Span  # noqa: E402
from flopcalc.kinds.masks import Mask  # noqa: E402
from flopcalc.kinds.qwen4_exp import QsaAttention  # noqa: E402

pytestmark = pytest.mark.torch


def _selected(ratio: int, budget: int, batch: int, seq: int) -> int:
    """True entries of the indexer's selection mask over a forward of `batch` × `seq`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        "qwen4_exp_text", vocab_size=97, hidden_size=32, num_hidden_layers=1,
        layer_types=["indexed_attention"], num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, num_experts=2, num_experts_per_tok=1, moe_intermediate_size=8,
        shared_expert_intermediate_size=8, indexer_n_heads=2, indexer_kv_heads=1,
        indexer_head_dim=8, indexer_budget=budget, indexer_compress_ratio=ratio)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    indexer = model.model.layers[0].self_attn.indexer
    masks = []
    forward = indexer.forward

    def keep(*args, **kwargs):
        masks.append(forward(*args, **kwargs))
        return masks[-1]

    indexer.forward = keep
    with torch.no_grad():
        model(torch.randint(0, 97, (batch, seq)), use_cache=False)
    return int(masks[0].sum())


@pytest.mark.parametrize("ratio, budget, seq", [(2, 4, 13), (3, 3, 20), (1, 2, 9), (4, 8, 30)])
def test_kept_keys_equal_the_indexers_selection(ratio, budget, seq):
    attn = QsaAttention(heads=4, kv_heads=2, qk_dim=8, v_dim=8, mask=Mask("causal"),
                        index_heads=2, index_dim=8, ratio=ratio, blocks=budget // ratio)
    assert attn.pairs(Span(2, seq, seq, "causal")) == _selected(ratio, budget, 2, seq)
