"""A matmul's FLOPs carry the tensor-parallel role of the weight they multiply (the step-time
model shards each matmul by it): for every shipped preset, every weight-family FLOP part of a
forward, a recurrent forward and a decode step has the role its kind gives the parameter of
the same name."""

from __future__ import annotations

import json

import pytest

from flopcalc.counting.workload import Workload
from flopcalc.kinds.base import WEIGHTS
from flopcalc.models.registry import load_model

from tests.conftest import ROOT

pytestmark = pytest.mark.invariant

PRESETS = sorted(p.stem for p in (ROOT / "presets").glob("*.yaml"))


def flop_parts(kind, d, stack, slot):
    for scan in ("chunked", "recurrent"):
        w = Workload(seq=9, tgt_seq=9, batch=2, scan=scan)
        yield from kind.forward(d, w.span(stack, slot))
    if stack == "decoder" and slot != "cross_attn":
        yield from kind.decode(d, 2, 9, 11)


@pytest.mark.parametrize("name", PRESETS)
def test_flop_parts_carry_their_weights_role(name):
    spec = load_model(name).spec
    checked = 0
    for g in spec.groups():
        for slot, kind in g.layer.slots():
            roles = {p.name: p.role for p in kind.params(spec.d_model)}
            for part in flop_parts(kind, spec.d_model, g.layer.stack, slot):
                role = roles.get(f"{part.name}.weight", roles.get(part.name))
                if part.family != WEIGHTS or not part.weight_shape or role is None:
                    continue
                assert part.role == role, (slot, part.name)
                checked += 1
    assert checked > 0


def _assert_biases_gathered_with_weights(spec) -> None:
    from flopcalc.counting.model import model_params

    parts = model_params(spec)
    weights = {p.name: p for p in parts if p.name.endswith(".weight")}
    pairs = [(p, weights[p.name[:-len("bias")] + "weight"]) for p in parts
             if p.name.endswith(".bias") and p.name[:-len("bias")] + "weight" in weights]
    for bias, weight in pairs:
        assert weight.module is not None, weight.name
        assert bias.module == weight.module, (bias.name, bias.module, weight.module)


@pytest.mark.parametrize("name", PRESETS)
def test_a_bias_is_gathered_with_its_weight(name):
    """ZeRO-3 gathers a module's tensors together (`Part.module`), so a bias names the module
    of the weight it is added to: for `x.bias` beside `x.weight`, the two modules are equal.
    BERT's head transform and head norm are among the pairs this reads."""
    _assert_biases_gathered_with_weights(load_model(name).spec)


def test_a_bias_is_gathered_with_its_weight_in_bert_with_its_pooler():
    # BertModel's pooler is a Linear: its weight and bias one module (no preset holds it)
    spec = load_model("bert-base", ["pooler=true"]).spec
    _assert_biases_gathered_with_weights(spec)
    assert spec.pooler


def _assert_quantised_parts_hold_whole_matrices(spec) -> None:
    # counting.quant prices a quantised part as value / (n_in·n_out) matrices in the format
    from flopcalc.counting.model import model_params
    from flopcalc.counting.quant import quantised

    for p in model_params(spec):
        if quantised(p):
            n_in, n_out = p.shape[-2:]
            assert p.value % (n_in * n_out) == 0, (p.name, p.value, p.shape)


@pytest.mark.parametrize("name", PRESETS)
def test_a_quantised_part_is_whole_matrices(name):
    _assert_quantised_parts_hold_whole_matrices(load_model(name).spec)


def test_only_layer_matrices_are_quantised():
    # BERT with its pooler: the head transform and the pooler are matmuls, column-split like a
    # layer's up projection, but outside the layers (kind `head`), so a scaled format leaves
    # them in 16 bits, as it does the lookup tables
    from flopcalc.counting.model import model_params
    from flopcalc.counting.quant import quantised

    parts = {p.name: p for p in model_params(load_model("bert-base", ["pooler=true"]).spec)}
    assert not any(quantised(parts[n]) for n in ("head.transform.weight", "pooler.weight",
                                                  "embed.tokens", "embed.positions"))
    assert quantised(parts["encoder.mlp.up.weight"]) and quantised(parts["encoder.attn.q.weight"])


def _zoo_configs() -> list[tuple[str, dict]]:
    from tests.hf.test_recorded_model_types import PARAMS

    return [(label, entry["config"]) for label, entry in PARAMS]


ZOO_CONFIGS = _zoo_configs()


@pytest.mark.parametrize("config", [c for _, c in ZOO_CONFIGS],
                         ids=[label for label, _ in ZOO_CONFIGS])
def test_biases_and_quantised_matrices_in_the_zoo(config, tmp_path):
    # the same over every recorded config: BERT's pooler and a biased `embed.project_in`
    # (OPT-like projections with a bias) are in no preset
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = load_model(str(path)).spec
    _assert_biases_gathered_with_weights(spec)
    _assert_quantised_parts_hold_whole_matrices(spec)


def test_bert_head_biases_are_read_by_the_invariant():
    # The test above must see BERT's masked-LM transform bias, or it proves nothing for it.
    from flopcalc.counting.model import model_params

    names = {p.name for p in model_params(load_model("bert-base").spec)}
    assert {"head.transform.bias", "head.transform.weight", "head.norm.bias"} <= names


@pytest.mark.parametrize("name", ["gpt2", "llama-3.1-8b", "qwen3-next-80b-a3b"])
def test_the_lm_heads_flops_are_marked_as_the_head(name):
    # serving leaves the head out of a prefill's body by this mark (engines compute the last
    # token's logits only), so a forward's and a decode step's head part must carry it:
    # 2·t·d·V for t tokens, and nothing else is marked
    from flopcalc.counting.model import decode_flops, model_flops, workload

    spec = load_model(name).spec
    head = 2 * spec.d_model * spec.vocab_size
    forward = [p for p in model_flops(spec, workload(spec, 7)) if p.head]
    assert sum(p.value for p in forward) == 7 * head
    decode = [p for p in decode_flops(spec, 5, 7, 2) if p.head]  # contexts 5, 6, 7; batch 2
    assert [(p.name, p.value) for p in decode] == [("lm_head", 3 * 2 * head)]


def test_berts_masked_lm_head_and_pooler_flops_are_marked_as_the_head():
    # BERT's masked-LM head (the preset is BertForMaskedLM: no pooler) is the transform d x d
    # and the vocabulary projection: at 7 tokens 2·7·768² and 2·7·768·30,522, both marked
    from flopcalc.counting.model import model_flops, workload

    spec = load_model("bert-base").spec
    marked = {p.name: p.value for p in model_flops(spec, workload(spec, 7)) if p.head}
    assert marked == {"head.transform": 2 * 7 * 768 * 768, "lm_head": 2 * 7 * 768 * 30_522}


def test_the_mtp_modules_tensors_are_named_under_mtp():
    # DeepSeek-V3's one MTP module: its tensors are reported as mtp.*, apart from the model's
    # own layers of the same kind
    from flopcalc.counting.model import mtp_params

    names = [p.name for p in mtp_params(load_model("deepseek-v3").spec)]
    assert names and all(n.startswith("mtp.") for n in names)
    # DeepSeek-V3's own names for the module's norms and 2d → d projection (enorm, hnorm,
    # eh_proj and shared_head.norm in its checkpoint's model.layers.61)
    assert {"mtp.enorm.weight", "mtp.hnorm.weight", "mtp.eh_proj.weight",
            "mtp.shared_head.norm.weight"} <= set(names)


# The flag's two exceptions, each on purpose: JetMoE's attention experts are held as
# q_experts/o_experts (transformers' names) and counted as the q and o of the layer, and
# LongCat-Flash's gate/up rows for its identity experts are stacked expert matrices (so
# quantised with the rest) that no token ever multiplies.
NAMED_APART = {"jetmoe": {"decoder.attn.q_experts", "decoder.attn.o_experts"},
               "longcat_flash": {"decoder.mlp.zero_experts.gate_up"}}
ZOO_LOADED = sorted(NAMED_APART) + ["dbrx", "deepseek_v3", "gemma3_text", "kimi_linear",
                                    "lfm2", "minimax", "qwen3_next", "qwen3_5_moe"]


def _matmul_marks_match_the_flops(spec):
    from flopcalc.counting.model import model_flops, token_params, workload

    # the text model's tensors and a text forward (the towers name their FLOPs coarser,
    # vision.layers.attn.qkv for q, k and v)
    # (a tensor of a name another shape already took is listed as `name [AxB]`: DeepSeek-V4's
    # compressors, d → 2·d_h in CSA layers, d → d_h in HCA layers)
    marked = {p.name.split(" [")[0].removesuffix(".weight") for p in token_params(spec)
              if p.matmul}
    multiplied = {p.name for p in model_flops(spec, workload(spec, 8)) if p.family == WEIGHTS}
    if spec.tie_embeddings:  # a tied head multiplies the token table, a lookup table
        multiplied.discard("lm_head")
    return marked, multiplied


@pytest.mark.parametrize("name", PRESETS + [f"zoo:{n}" for n in ZOO_LOADED])
def test_a_tensor_marked_matmul_is_one_a_forward_multiplies(name):
    """`Part.matmul` marks the weights a matmul multiplies: quantisation and adapters read it.
    Over every preset and the zoo configs that load as they are, the marked tensors are those
    the forward's weight FLOPs are named by (the untied LM head among them), but for the
    exceptions above."""
    if name.startswith("zoo:"):
        name = name[4:]
        spec = load_model(str(ROOT / "tests" / "data" / "zoo" / f"{name}.json")).spec
    else:
        spec = load_model(name).spec
    marked, multiplied = _matmul_marks_match_the_flops(spec)
    assert marked - NAMED_APART.get(name, set()) == multiplied - {
        n.replace("_experts", "") for n in NAMED_APART.get(name, set())}


def test_berts_pooler_is_a_marked_matmul():
    # BertModel's pooler (a d x d dense on the first token), in no preset: marked as the
    # forward multiplies it
    marked, multiplied = _matmul_marks_match_the_flops(
        load_model("bert-base", ["pooler=true"]).spec)
    assert "pooler" in marked and marked == multiplied


def test_opts_narrow_embedding_projection_is_a_marked_matmul(tmp_path):
    # OPT-350M's embed_dim: project_in (e → d) and project_out (d → e) are matmuls like any
    # other, and its untied head (tie_embeddings: false) is marked with them
    path = tmp_path / "m.yaml"
    path.write_text("n_layers: 1\nd_model: 4\nn_heads: 1\nd_ff: 8\nvocab_size: 8\n"
                    "positions: learned\nmax_seq_len: 6\nembed_dim: 2\ntie_embeddings: false\n")
    marked, multiplied = _matmul_marks_match_the_flops(load_model(str(path)).spec)
    assert {"embed.project_in", "embed.project_out", "lm_head"} <= marked
    assert marked == multiplied
