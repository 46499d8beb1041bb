"""Packed attention against PyTorch's FlopCounterMode.

FlopCounterMode counts matmuls, and a mask does not shrink a matmul: an eager attention over the
packed sequence with a block-diagonal mask is counted at every (query, key) pair of the whole
sequence, the same as without packing (the first test shows it). What a variable-length kernel
computes (FlashAttention's cu_seqlens) is each sample's attention on its own, so the referee for
flopcalc's `full` packed count is FlopCounterMode summed over the samples run one by one: per
token work is the same, and attention is Σ Lᵢ² pairs.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests import torchref  # noqa: E402

pytestmark = pytest.mark.torch


def _attention(q, k, v, mask):
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def _count(fn, *args) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        fn(*args)
    return counter.get_total_flops()


def test_a_block_diagonal_mask_does_not_change_flopcountermode():
    heads, d, lengths = 2, 8, [3, 5, 9]
    s = sum(lengths)
    q, k, v = (torch.randn(heads, s, d) for _ in range(3))
    sample = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    block = (sample[:, None] == sample[None, :]) & torch.ones(s, s, dtype=torch.bool).tril()
    packed = _count(_attention, q, k, v, block)
    # every pair of the whole sequence: 2 matmuls of 2·s²·d per head
    assert packed == heads * 2 * 2 * s * s * d
    per_sample, start = 0, 0
    for n in lengths:
        sl = slice(start, start + n)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        per_sample += _count(_attention, q[:, sl], k[:, sl], v[:, sl], causal)
        start += n
    # run sample by sample, as a variable-length kernel does: Σ 4·Lᵢ²·d per head
    assert per_sample == heads * 4 * d * sum(n * n for n in lengths)
    # and the outputs agree: the mask and the split compute the same attention
    out = _attention(q, k, v, block)
    start = 0
    for n in lengths:
        sl = slice(start, start + n)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        torch.testing.assert_close(out[:, sl], _attention(q[:, sl], k[:, sl], v[:, sl], causal))
        start += n


@pytest.mark.parametrize("name, lengths", [("gpt2", [300, 724]), ("gpt2", [1, 511, 512]),
                                           ("llama-3.1-8b", [1000, 3001, 95])])
def test_model_packed_equals_samples_run_apart(cli, name, lengths):
    seq = sum(lengths)
    arch = torchref.PRESETS[name]
    reference = sum(torchref.count(arch, n)["forward_flops"] for n in lengths)
    r = cli("model", name, "--seq", seq, "--packed", ",".join(map(str, lengths)),
            "--attention", "full", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["flops"]["forward"] == reference
    # without packing, FlopCounterMode's count of the whole sequence (a mask changes nothing)
    whole = torchref.count(arch, seq)["forward_flops"]
    assert cli("model", name, "--seq", seq, "--attention", "full", "-f",
               "json").json()["flops"]["forward"] == whole > reference
