"""Laws that hold for every valid config (hypothesis), and fuzzing of inputs: random YAML
documents and random argument lists never raise anything but the project's own errors."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import pytest

from flopcalc.cli import main
from flopcalc.kinds import base as c
from flopcalc.counting.crossover import crossover, layers_weights_attention
from flopcalc.counting.layers import layer_params
from flopcalc.counting.model import model_flops, model_params, workload
from flopcalc.models.validation import validate_model
from flopcalc.render.data import to_yaml
from flopcalc.reports.listing import config_data

pytestmark = [pytest.mark.invariant, pytest.mark.behaviour]

FAST = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def raw_configs(draw: Any, local: bool = True) -> dict[str, Any]:
    """Valid configs in the preset schema: decoder-only (with sliding windows, chunks, sandwich
    and post norms, parallel blocks, QK-norm, value heads of their own width) and
    encoder-decoder."""
    kv = draw(st.integers(1, 8))
    groups = draw(st.integers(1, 4))
    heads = kv * groups
    head_dim = draw(st.integers(1, 48))
    explicit = draw(st.booleans())
    d_model = draw(st.integers(1, 600)) if explicit else heads * head_dim
    enc_dec = draw(st.booleans())
    parallel = not enc_dec and draw(st.booleans())
    raw: dict[str, Any] = {
        "architecture": "encoder-decoder" if enc_dec else "decoder-only",
        "n_layers": draw(st.integers(1, 6)),
        "d_model": d_model,
        "n_heads": heads,
        "n_kv_heads": kv,
        "d_ff": draw(st.integers(1, 900)),
        "mlp": draw(st.sampled_from(["plain", "gated"])),
        "activation": draw(st.sampled_from(["relu", "gelu", "silu"])),
        "bias": {k: draw(st.booleans()) for k in ("qkv", "attn_out", "mlp")},
        "norm": draw(st.sampled_from(["layernorm", "rmsnorm", "none"])),
        "norm_placement": "pre" if parallel else draw(st.sampled_from(["pre", "post",
                                                                       "sandwich"])),
        "final_norm": draw(st.booleans()),
        "qk_norm": draw(st.sampled_from(["none", "per_head", "all_heads"])),
        "positions": draw(st.sampled_from(["learned", "sinusoidal", "rotary", "none"])),
        "max_seq_len": draw(st.integers(1, 4096)),
        "vocab_size": draw(st.integers(1, 70000)),
        "tie_embeddings": draw(st.booleans()),
    }
    if explicit:
        raw["head_dim"] = head_dim
        if draw(st.booleans()):
            raw["v_head_dim"] = draw(st.integers(1, 48))
    if parallel:
        raw.update(parallel_block=True, parallel_norms=draw(st.sampled_from([1, 2])))
    if enc_dec:
        raw["n_encoder_layers"] = draw(st.integers(1, 6))
        raw["share_encoder_embeddings"] = draw(st.booleans())
    if local and draw(st.booleans()):
        key = draw(st.sampled_from(["sliding_window", "attention_chunk"]))
        raw[key] = draw(st.integers(1, 300))
        if draw(st.booleans()):
            raw["global_every"] = draw(st.integers(2, 4))
    return raw


def spec_of(raw: dict[str, Any]) -> Any:
    return validate_model(raw, "generated")[1]


def forward(spec: Any, seq: int, batch: int = 1, attention: str = "full") -> list[c.Part]:
    return model_flops(spec, workload(spec, seq, None, batch, attention))  # type: ignore[arg-type]


seqs = st.integers(1, 5000)


@FAST
@given(raw_configs(), seqs, st.integers(1, 8), st.sampled_from(["full", "causal"]))
def test_counts_are_positive_ints_and_totals_are_sums(raw, seq, batch, attention):
    spec = spec_of(raw)
    for parts in (model_params(spec), forward(spec, seq, batch, attention)):
        assert all(type(p.value) is int and p.value > 0 for p in parts)
        assert c.total(parts) == sum(p.value for p in parts)
    flops = forward(spec, seq, batch, attention)
    assert c.total(flops) == c.total(flops, c.WEIGHTS) + c.total(flops, c.ATTENTION)
    layer_total = sum(g.count * c.total(layer_params(g.layer, spec.d_model))
                      for g in spec.groups())
    assert c.total(model_params(spec), c.LAYERS) == layer_total


@FAST
@given(raw_configs(), st.integers(2, 4), seqs)
def test_more_heads_at_fixed_width_change_nothing(raw, k, seq):
    """h heads of d_h and k·h heads of d_h/k (same d_q, same d_kv) count the same (QK-norm per
    head aside: its weights are one head wide)."""
    raw = {**raw, "head_dim": raw.get("head_dim", raw["d_model"] // raw["n_heads"]) * k,
           "qk_norm": "none" if raw["qk_norm"] == "per_head" else raw["qk_norm"]}
    raw.pop("v_head_dim", None)
    split = {**raw, "n_heads": raw["n_heads"] * k, "n_kv_heads": raw["n_kv_heads"] * k,
             "head_dim": raw["head_dim"] // k}
    a, b = spec_of(raw), spec_of(split)
    assert model_params(a) == model_params(b)
    for attention in ("full", "causal"):
        assert forward(a, seq, 1, attention) == forward(b, seq, 1, attention)


@FAST
@given(raw_configs(), seqs)
def test_gqa_changes_only_k_and_v(raw, seq):
    mha = spec_of({**raw, "n_kv_heads": raw["n_heads"]})
    gqa = spec_of(raw)
    kv = ("attn.k.", "attn.v.", "attn.k", "attn.v", "attn.k_norm.")

    def differing(a: list[c.Part], b: list[c.Part]) -> set[str]:
        return {p.name for p, q in zip(a, b) if p != q}

    assert all(any(k in n for k in kv)
               for n in differing(model_params(mha), model_params(gqa)))
    assert all(n.endswith((".k", ".v")) for n in differing(forward(mha, seq), forward(gqa, seq)))
    assert c.total(forward(gqa, seq), c.ATTENTION) == c.total(forward(mha, seq), c.ATTENTION)


@FAST
@given(raw_configs())
def test_tying_removes_exactly_v_times_d(raw):
    tied = spec_of({**raw, "tie_embeddings": True})
    untied = spec_of({**raw, "tie_embeddings": False})
    diff = c.total(model_params(untied)) - c.total(model_params(tied))
    assert diff == raw["vocab_size"] * raw["d_model"]


@FAST
@given(raw_configs(local=False), st.integers(1, 3000), st.integers(1, 6),
       st.sampled_from(["full", "causal"]))
def test_forward_is_linear_plus_quadratic_in_seq_and_linear_in_batch(raw, s, batch, attention):
    spec = spec_of(raw)
    f = [c.total(forward(spec, n, 1, attention)) for n in (s, s + 1, s + 2, s + 3)]
    # F(s) = a·s + c·s²: constant second differences and F(0) = 0 extrapolated.
    assert f[2] - 2 * f[1] + f[0] == f[3] - 2 * f[2] + f[1]
    c2 = Fraction(f[2] - 2 * f[1] + f[0], 2)
    a = f[1] - f[0] - c2 * (2 * s + 1)
    assert a * s + c2 * s * s == f[0]
    assert c.total(forward(spec, s, batch, attention)) == batch * f[0]


@FAST
@given(raw_configs(), st.sampled_from(["full", "causal"]))
def test_crossover_is_the_first_length_where_attention_catches_up(raw, attention):
    spec = spec_of(raw)
    x = crossover(spec, attention)

    def at(n: int) -> tuple[int, int]:
        return layers_weights_attention(spec, workload(spec, n, n, 1, attention))

    if x.seq is None:
        for n in (1, 10, 1000, 10**6):
            weights, attn = at(n)
            assert attn < weights
        return
    weights, attn = at(x.seq)
    assert attn >= weights
    if x.seq > 1:
        weights, attn = at(x.seq - 1)
        assert attn < weights


@FAST
@given(raw_configs(), seqs)
def test_causal_never_exceeds_full(raw, seq):
    spec = spec_of(raw)
    causal, full = forward(spec, seq, 1, "causal"), forward(spec, seq, 1, "full")
    assert c.total(causal) <= c.total(full)
    assert c.total(causal, c.WEIGHTS) == c.total(full, c.WEIGHTS)


@FAST
@given(raw_configs(), seqs)
def test_show_reloads_to_the_same_numbers(raw, seq):
    config, b = validate_model(raw, "generated")
    again, a = validate_model(yaml.safe_load(to_yaml(config_data(config))), "again")
    assert again == config
    assert model_params(a) == model_params(b)
    assert forward(a, seq) == forward(b, seq)


# ------------------------------------------------------------------------------------ fuzzing

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**12), st.floats(),
                    st.text(max_size=12))
KEYS = ["n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "mlp", "bias",
        "norm", "positions", "max_seq_len", "vocab_size", "architecture", "n_encoder_layers",
        "tie_embeddings", "qkv", "title", "x"]
documents = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(st.sampled_from(KEYS), inner, max_size=8)),
    max_leaves=20)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents)
def test_random_yaml_documents_only_raise_our_errors(tmp_path_factory, capsys, doc):
    path = tmp_path_factory.mktemp("fuzz") / "model.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = main(["model", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    assert "internal error" not in err and "Traceback" not in err
    assert (out == "") == (code != 0)


TOKENS = ["model", "list", "show", "sweep", "compare", "check", "schema", "gpt2", "gpt3",
          "transformer-base", "--seq", "--tgt-seq", "--batch", "--tokens", "--attention",
          "--format", "-f", "--set", "--max", "--points", "--budget", "json", "csv", "table",
          "full", "causal", "1k", "2048", "0", "-1", "1.5", "nan", "3e23", "1..64", "4k,8k",
          "params.total=1", "n_layers=2", "bias.qkv=true", "=", "", "--", "--help", "x.yaml",
          "1e30", "12B", "infer", "train", "conventions", "attention", "accelerators",
          "llama-3.1-8b", "--prompt", "--gen", "--accelerator", "h100-sxm", "--count", "--mfu",
          "40%", "1.5", "--n", "--m", "--d-k", "--d-v", "--heads", "--recompute", "--kv-dtype",
          "fp8", "--peak", "--bandwidth", "--elementwise", "--brief", "--min", "--days", "--price",
          "--weights-dtype", "int4", "--compute-dtype", "memory", "--zero", "3", "--tp", "8",
          "--recompute", "selective", "-", "~0", "~no-such-user-flopcalc", "H100", "Llama-3.1-8B", "--plot",
          "x.svg", "mixtral-8x7b", "deepseek-v3", "gemma-3-27b", "bert-base", "t5-base",
          "--install-completion", "--show-completion"]  # not --debug: it shows tracebacks


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)), max_size=7))
def test_random_arguments_only_raise_our_errors(capsys, argv):
    assume(not any(a.startswith("--d") and "--debug".startswith(a) for a in argv))  # tracebacks
    code = main(argv)
    _, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, err)
    assert "internal error" not in err and "Traceback" not in err
