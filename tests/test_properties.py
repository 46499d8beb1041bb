"""Laws that hold for every valid config (hypothesis), and fuzzing of inputs: random YAML
documents and random argument lists never raise anything but the project's own errors."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flopcalc import counting as c
from flopcalc.cli import main
from flopcalc.listing import config_yaml
from flopcalc.validation import validate_model

FAST = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def raw_configs(draw: Any) -> dict[str, Any]:
    """Valid configs in the preset schema, decoder-only and encoder-decoder."""
    kv = draw(st.integers(1, 8))
    groups = draw(st.integers(1, 4))
    heads = kv * groups
    head_dim = draw(st.integers(1, 48))
    explicit = draw(st.booleans())
    d_model = draw(st.integers(1, 600)) if explicit else heads * head_dim
    enc_dec = draw(st.booleans())
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
        "norm_placement": draw(st.sampled_from(["pre", "post"])),
        "final_norm": draw(st.booleans()),
        "positions": draw(st.sampled_from(["learned", "sinusoidal", "rotary", "none"])),
        "max_seq_len": draw(st.integers(1, 4096)),
        "vocab_size": draw(st.integers(1, 70000)),
        "tie_embeddings": draw(st.booleans()),
    }
    if explicit:
        raw["head_dim"] = head_dim
    if enc_dec:
        raw["n_encoder_layers"] = draw(st.integers(1, 6))
        raw["share_encoder_embeddings"] = draw(st.booleans())
    return raw


def cfg_of(raw: dict[str, Any]) -> Any:
    return validate_model(raw, "generated")


def forward(cfg: Any, seq: int, batch: int = 1, attention: c.Attention = "full") -> list[c.Part]:
    return c.model_flops(cfg, c.workload(cfg, seq, None, batch, attention))


seqs = st.integers(1, 5000)


@FAST
@given(raw_configs(), seqs, st.integers(1, 8), st.sampled_from(["full", "causal"]))
def test_counts_are_positive_ints_and_totals_are_sums(raw, seq, batch, attention):
    cfg = cfg_of(raw)
    for parts in (c.model_params(cfg), forward(cfg, seq, batch, attention)):
        assert all(type(p.value) is int and p.value > 0 for p in parts)
        assert c.total(parts) == sum(p.value for p in parts)
    flops = forward(cfg, seq, batch, attention)
    assert c.total(flops) == c.total(flops, c.WEIGHTS) + c.total(flops, c.ATTENTION)
    params = c.model_params(cfg)
    per_layer = {s: c.total(c.layer_params(cfg, s)) for s, _ in c.stacks(cfg)}
    layer_total = sum(n * per_layer[s] for s, n in c.stacks(cfg))
    assert c.total(params, c.LAYERS) == layer_total


@FAST
@given(raw_configs(), st.integers(2, 4), seqs)
def test_more_heads_at_fixed_width_change_nothing(raw, k, seq):
    """h heads of d_h and k·h heads of d_h/k (same d_q, same d_kv) count the same."""
    raw = {**raw, "head_dim": raw.get("head_dim", raw["d_model"] // raw["n_heads"]) * k}
    split = {**raw, "n_heads": raw["n_heads"] * k, "n_kv_heads": raw["n_kv_heads"] * k,
             "head_dim": raw["head_dim"] // k}
    a, b = cfg_of(raw), cfg_of(split)
    assert (a.d_q, a.d_kv) == (b.d_q, b.d_kv)
    assert c.model_params(a) == c.model_params(b)
    for attention in ("full", "causal"):
        assert forward(a, seq, 1, attention) == forward(b, seq, 1, attention)


@FAST
@given(raw_configs(), seqs)
def test_gqa_changes_only_k_and_v(raw, seq):
    mha = cfg_of({**raw, "n_kv_heads": raw["n_heads"]})
    gqa = cfg_of(raw)
    kv = ("attn.k.", "attn.v.", "attn.k", "attn.v")

    def differing(a: list[c.Part], b: list[c.Part]) -> set[str]:
        return {p.name for p, q in zip(a, b) if p != q}

    assert all(any(k in n for k in kv) for n in differing(c.model_params(mha), c.model_params(gqa)))
    assert all(n.endswith((".k", ".v")) for n in differing(forward(mha, seq), forward(gqa, seq)))
    assert c.total(forward(gqa, seq), c.ATTENTION) == c.total(forward(mha, seq), c.ATTENTION)


@FAST
@given(raw_configs())
def test_tying_removes_exactly_v_times_d(raw):
    tied = cfg_of({**raw, "tie_embeddings": True})
    untied = cfg_of({**raw, "tie_embeddings": False})
    diff = c.total(c.model_params(untied)) - c.total(c.model_params(tied))
    assert diff == raw["vocab_size"] * raw["d_model"]


@FAST
@given(raw_configs(), st.integers(1, 3000), st.integers(1, 6), st.sampled_from(["full", "causal"]))
def test_forward_is_linear_plus_quadratic_in_seq_and_linear_in_batch(raw, s, batch, attention):
    cfg = cfg_of(raw)
    f = [c.total(forward(cfg, n, 1, attention)) for n in (s, s + 1, s + 2, s + 3)]
    # F(s) = a·s + c·s²: constant second differences and F(0) = 0 extrapolated.
    assert f[2] - 2 * f[1] + f[0] == f[3] - 2 * f[2] + f[1]
    c2 = Fraction(f[2] - 2 * f[1] + f[0], 2)
    a = f[1] - f[0] - c2 * (2 * s + 1)
    assert a * s + c2 * s * s == f[0]
    assert c.total(forward(cfg, s, batch, attention)) == batch * f[0]


@FAST
@given(raw_configs(), st.sampled_from(["full", "causal"]))
def test_crossover_is_where_the_two_parts_meet(raw, attention):
    cfg = cfg_of(raw)
    s_star = c.crossover_seq(cfg, attention)
    lo, hi = s_star.numerator // s_star.denominator, -(-s_star.numerator // s_star.denominator)
    if lo >= 1:
        weights, attn = c.layers_weights_attention(cfg, c.workload(cfg, lo, None, 1, attention))
        assert attn <= weights
    weights, attn = c.layers_weights_attention(cfg, c.workload(cfg, max(hi, 1), None, 1, attention))
    assert attn >= weights or hi < 1


@FAST
@given(raw_configs(), seqs)
def test_causal_never_exceeds_full(raw, seq):
    cfg = cfg_of(raw)
    causal, full = forward(cfg, seq, 1, "causal"), forward(cfg, seq, 1, "full")
    assert c.total(causal) <= c.total(full)
    assert c.total(causal, c.WEIGHTS) == c.total(full, c.WEIGHTS)


@FAST
@given(raw_configs(), seqs)
def test_show_reloads_to_the_same_numbers(raw, seq):
    cfg = cfg_of(raw)
    again = cfg_of(yaml.safe_load(config_yaml(cfg)))
    assert again == cfg
    assert c.model_params(again) == c.model_params(cfg)
    assert forward(again, seq) == forward(cfg, seq)


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


@settings(max_examples=300, deadline=None,
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
          "fp8", "--peak", "--bandwidth", "--elementwise"]  # not --debug: it shows tracebacks


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)), max_size=7))
def test_random_arguments_only_raise_our_errors(capsys, argv):
    assume(not any(a.startswith("--d") and "--debug".startswith(a) for a in argv))  # tracebacks
    code = main(argv)
    _, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, err)
    assert "internal error" not in err and "Traceback" not in err
