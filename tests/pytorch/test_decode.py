"""Cross-check of `flopcalc infer` against PyTorch: a small HF Llama is run for real on CPU, a
prefill with `use_cache=True` and then one-token forwards that read and extend the KV cache, each
counted with `torch.utils.flop_counter.FlopCounterMode`; flopcalc must give the same FLOPs for
the prefill and for every decode step, and the cache HF holds at the end must be exactly
`kv_cache.bytes`.

Eager attention: on CPU tensors the SDPA kernel PyTorch 2.13 picks is not counted by
FlopCounterMode at all (its QKᵀ and AV count zero), while eager attention runs the two matmuls.
Needs torch and transformers; skipped without them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import yaml  # noqa: E402

pytestmark = pytest.mark.torch

# Small enough to run for real in well under a second; heads narrower than d/h would also work,
# but the Llama shape (head_dim = d / h) is what the presets use.
DIMS = dict(layers=2, d_model=256, heads=8, head_dim=32, d_ff=512, vocab=1000, context=512)


def hf_llama(kv_heads: int, tied: bool = False):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=DIMS["d_model"], intermediate_size=DIMS["d_ff"],
        num_hidden_layers=DIMS["layers"], num_attention_heads=DIMS["heads"],
        num_key_value_heads=kv_heads, head_dim=DIMS["head_dim"], vocab_size=DIMS["vocab"],
        max_position_embeddings=DIMS["context"], tie_word_embeddings=tied,
        attention_bias=False, mlp_bias=False, attn_implementation="eager")
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def preset_yaml(tmp_path, kv_heads: int, tied: bool = False) -> str:
    """The same architecture as a flopcalc model file."""
    path = tmp_path / f"llama-kv{kv_heads}{'-tied' if tied else ''}.yaml"
    path.write_text(yaml.safe_dump(dict(
        n_layers=DIMS["layers"], d_model=DIMS["d_model"], n_heads=DIMS["heads"],
        n_kv_heads=kv_heads, d_ff=DIMS["d_ff"], mlp="gated", activation="silu", bias=False,
        norm="rmsnorm", positions="rotary", max_seq_len=DIMS["context"],
        vocab_size=DIMS["vocab"], tie_embeddings=tied)))
    return str(path)


def run_hf(model, prompt: int, gen: int, batch: int):
    """FlopCounterMode FLOPs of the prefill and of each of `gen` decode forwards, and the cache.

    Which context each HF step has: the prefill fills the cache with the P prompt positions.
    Forward k = 1..G then feeds one token per sequence (the first is the token the prefill's
    logits chose), appends its K/V to the cache *before* attention (DynamicCache.update), and its
    query attends over the P + k keys now cached: exactly flopcalc's decode step i = k, whose
    context is c = P + i. After G forwards the cache holds P + G positions, the tokens
    `kv_cache.bytes` counts. (The logits of forward G would choose token G + 1, never fed.)
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(0, DIMS["vocab"], (batch, prompt))
    steps = []
    with torch.no_grad():
        counter = FlopCounterMode(display=False)
        with counter:
            out = model(ids, use_cache=True)
        prefill = counter.get_total_flops()
        cache = out.cache
        assert cache.get_seq_length() == prompt
        token = out.logits[:, -1:].argmax(-1)
        for k in range(1, gen + 1):
            counter = FlopCounterMode(display=False)
            with counter:
                out = model(token, cache=cache, use_cache=True)
            steps.append(counter.get_total_flops())
            assert cache.get_seq_length() == prompt + k  # this step attended over P + k keys
            token = out.logits[:, -1:].argmax(-1)
    cache_bytes = sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    return prefill, steps, cache_bytes


@pytest.mark.parametrize("kv_heads, tied, batch", [(2, False, 1), (2, False, 3), (8, False, 1),
                                                   (1, True, 2)],
                         ids=["gqa", "gqa-batch3", "mha", "mqa-tied-batch2"])
def test_decode_matches_flop_counter_mode(cli, tmp_path, kv_heads, tied, batch):
    prompt, gen = 37, 6
    prefill, steps, cache_bytes = run_hf(hf_llama(kv_heads, tied), prompt, gen, batch)

    # FlopCounterMode counts the full P x P score matrix (the mask does not shrink the matmul),
    # so the prefill is compared under --attention full.
    r = cli("infer", preset_yaml(tmp_path, kv_heads, tied), "--prompt", prompt, "--gen", gen,
            "--batch", batch, "--attention", "full", "--kv-dtype", "fp32", "-f", "json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["prefill"]["flops"] == prefill
    assert doc["decode"]["flops_first"] == steps[0]
    assert doc["decode"]["flops_last"] == steps[-1]
    assert doc["decode"]["flops"] == sum(steps)
    # Each step's attention grows by 4·d_q·L per extra key, per sequence.
    d_q = DIMS["heads"] * DIMS["head_dim"]
    assert {b - a for a, b in zip(steps, steps[1:])} == {4 * d_q * DIMS["layers"] * batch}
    # The model ran in fp32, so its cache is fp32: exactly --kv-dtype fp32's figure.
    assert doc["kv_cache"]["bytes"] == cache_bytes


def test_every_step_matches(tmp_path):
    """Not just first, last and sum: step i of flopcalc is HF's forward i, for every i."""
    from flopcalc.kinds.base import total
    from flopcalc.counting.inference import decode_parts
    from flopcalc.models.registry import load_model

    prompt, gen = 11, 9
    _, steps, _ = run_hf(hf_llama(2), prompt, gen, batch=1)
    spec = load_model(preset_yaml(tmp_path, 2)).spec
    assert steps == [total(decode_parts(spec, prompt + i, prompt + i, 1))
                     for i in range(1, gen + 1)]


def test_bf16_cache_is_kv_dtype_bf16(cli, tmp_path):
    import torch

    model = hf_llama(2).to(torch.bfloat16)
    _, _, cache_bytes = run_hf(model, 20, 4, batch=2)
    doc = cli("infer", preset_yaml(tmp_path, 2), "--prompt", 20, "--gen", 4, "--batch", 2,
              "-f", "json").json()
    assert doc["kv_cache"]["bytes"] == cache_bytes
    # Parameters in bf16: exactly weights.bytes.
    assert doc["weights"]["bytes"] == sum(p.nbytes for p in model.parameters())
