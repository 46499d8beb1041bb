"""Hostile and out-of-range input: each case answers with one line and exit 2 (FlopcalcError
in the Python API), in bounded time, or with a correct answer."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import flopcalc
from flopcalc.errors import FlopcalcError

pytestmark = pytest.mark.behaviour

DATA = Path(__file__).resolve().parents[1] / "data"


def one_line_error(r) -> str:
    assert r.code == 2, (r.code, r.err)
    assert r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flopcalc: error: "), r.err
    assert "Traceback" not in r.err
    return lines[0]


# ----------------------------------------------------------------- serve --draft-tokens

SERVE = ("serve", "llama-3.1-70b", "--tp", "4", "--accelerator", "h200", "--draft",
         "llama-3.1-8b", "--acceptance", "0.7", "--prompt", "1000")


@pytest.mark.parametrize("k", ["16000", "1e30", "8192"])
def test_draft_tokens_past_a_step_are_refused(cli, k):
    # a verify step holds k + 1 tokens of a sequence: at most max_num_batched_tokens (8,192
    # by default), so k ≤ 8,191; 16,000 took 5.7 s and 1e30 never ended
    line = one_line_error(cli(*SERVE, "--draft-tokens", k))
    assert "--draft-tokens" in line and "at most 8,191" in line


def test_draft_tokens_limit_follows_the_step_budget(cli):
    line = one_line_error(cli(*SERVE, "--draft-tokens", "600",
                              "--max-num-batched-tokens", "512"))
    assert "at most 511" in line
    r = cli(*SERVE, "--draft-tokens", "511", "--max-num-batched-tokens", "512", "-f", "json")
    assert r.code == 0, r.err
    assert r.json()["speculative"]["draft_tokens"] == 511


def test_draft_tokens_api_bound():
    with pytest.raises(FlopcalcError, match="at most 8,191"):
        flopcalc.serve("llama-3.1-70b", tp=4, accelerator="h200", draft="llama-3.1-8b",
                       acceptance=0.7, draft_tokens=10**30)


def test_draft_steps_closed_form_equal_the_steps_one_by_one():
    """The k draft steps are summed in closed form; they must equal the k single steps
    (a sliding-window draft, tensor parallelism: the collectives repeat k times)."""
    from flopcalc.engines.vllm import Engine
    from flopcalc.predict.latency import DeviceCosts, Layout

    spec = flopcalc.load("gemma-3-1b").spec
    engine = Engine(max_model_len=4096, tp=1, pp=1, block_size=16, kv_dtype="auto",
                    max_num_batched_tokens=8192)
    costs = DeviceCosts(spec, Layout(tp=1), engine, "bf16")
    for c, k, batch in ((1, 1, 1), (500, 7, 3), (510, 40, 2)):  # 512-key window crossed
        one_by_one = costs.decode(c, c, batch)
        for j in range(1, k):
            one_by_one = one_by_one + costs.decode(c + j, c + j, batch)
        summed = costs.decode_steps(c, c + k - 1, batch)
        assert summed.flops == one_by_one.flops
        assert summed.bytes == one_by_one.bytes
        assert summed.collectives == one_by_one.collectives


def test_mtp_steps_closed_form_equal_the_steps_one_by_one():
    from flopcalc.engines.vllm import Engine
    from flopcalc.predict.latency import DeviceCosts, Layout
    from flopcalc.reports.serve_speculative import _mtp_step

    spec = flopcalc.load("deepseek-v3").spec
    layout = Layout(tp=8)
    engine = Engine(max_model_len=4096, tp=8, pp=1, block_size=64, kv_dtype="auto",
                    max_num_batched_tokens=8192)
    from flopcalc.models.quantization import plan_from_flags

    storage = plan_from_flags("bf16", None)
    costs = DeviceCosts(spec, layout, engine, storage)
    c, k, batch = 100, 5, 4
    flops, step = 0, None
    for j in range(k):
        f, s = _mtp_step(spec, costs, c + j, batch, layout, storage)
        flops += f
        step = s if step is None else step + s
    f, s = _mtp_step(spec, costs, c, batch, layout, storage, c + k - 1)
    assert (f, s.flops, s.bytes, s.comm_bytes) == (flops, step.flops, step.bytes,
                                                  step.comm_bytes)


def test_expected_tokens_large_k_is_bounded():
    from flopcalc.reports.serve_speculative import expected_tokens

    # (1 − a^(k+1)) / (1 − a) → 1 / (1 − a) = 10/3 at a = 0.7 once a^(k+1) underflows
    assert float(expected_tokens(10**29, Fraction(7, 10))) == pytest.approx(10 / 3)
    assert expected_tokens(3, Fraction(1, 2)) == Fraction(15, 8)  # 1 + ½ + ¼ + ⅛
    assert expected_tokens(10**29, Fraction(1)) == 10**29 + 1


# -------------------------------------------------------------------- serve --draft ENCODER


def test_draft_encoder_is_a_one_line_error(cli):
    line = one_line_error(cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--draft",
                              "bert-base", "--acceptance", "0.7"))
    assert "bert-base" in line and "decoder-only" in line


def test_draft_encoder_api_raises_flopcalc_error():
    with pytest.raises(FlopcalcError, match="decoder-only"):
        flopcalc.serve("llama-3.1-8b", accelerator="h100", draft="bert-base", acceptance=0.7)


# ------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("value, says", [
    ("1e-300", "below 1e-12"), ("5e-324", "below 1e-12"), ("1e-400%", "below 1e-12"),
    ("1e309", "above 0 and at most 1"), ("inf", "above 0 and at most 1"),
    ("-inf", "above 0 and at most 1"), ("1e31", "above 0 and at most 1"),
    ("-0", "above 0 and at most 1"), ("101%", "at most 100%"), ("nan", "not a number"),
])
def test_share_says_what_is_wrong(cli, value, says):
    # before: every one of these but -0 and 101% was called "not a number"
    line = one_line_error(cli("serve", "llama-3.1-8b", "--accelerator", "h100",
                              "--gpu-memory-utilization", value))
    assert "--gpu-memory-utilization" in line and says in line


@pytest.mark.parametrize("parse", ["parse_count", "parse_length", "parse_bytes",
                                   "parse_amount"])
def test_negative_huge_is_not_called_larger(parse):
    from flopcalc import numbers

    with pytest.raises(FlopcalcError, match="beyond 1e30 in size") as e:
        getattr(numbers, parse)("-1e309", "--x")
    assert "larger" not in str(e.value)


@pytest.mark.parametrize("parse", ["parse_count", "parse_length", "parse_bytes",
                                   "parse_amount", "parse_share"])
def test_input_quoted_in_one_short_line(parse):
    from flopcalc import numbers

    for text in ("1\n2", "9" * 100_000 + "x", "1\x1b[2J"):
        with pytest.raises(FlopcalcError) as e:
            getattr(numbers, parse)(text, "--x")
        message = str(e.value)
        assert "\n" not in message and "\x1b" not in message
        assert len(message) < 300, message[:300]


# ---------------------------------------------------------------------------- accelerators

ROOT = Path(__file__).resolve().parents[2]


def _accelerator(tmp_path, usable: str) -> str:
    text = (ROOT / "presets" / "accelerators" / "h100-sxm.yaml").read_text()
    text = text.replace("usable_memory_bytes: 81559MiB", f"usable_memory_bytes: {usable}")
    path = tmp_path / "device.yaml"
    path.write_text(text)
    return str(path)


def test_usable_memory_above_the_device_is_refused(cli, tmp_path):
    # 80 PB usable beside an 80 GB device was used as is
    line = one_line_error(cli("memory", "gpt2", "--accelerator", _accelerator(tmp_path, "80PB")))
    assert "usable_memory_bytes" in line and "memory_bytes 80,000,000,000" in line


def test_usable_memory_bound_is_the_nominal_read_as_gib(cli, tmp_path):
    # 80 GB read as GiB: 80 x 2^30 = 85,899,345,920 bytes is the most a driver can report
    r = cli("memory", "gpt2", "--accelerator", _accelerator(tmp_path, "85899345920"),
            "-f", "json")
    assert r.code == 0, r.err
    line = one_line_error(cli("memory", "gpt2", "--accelerator",
                              _accelerator(tmp_path, "85899345921")))
    assert "85,899,345,920" in line


# --------------------------------------------------------------------------------- plan


def test_plan_expert_sizes_come_from_the_experts():
    from flopcalc.predict.plans import divisors, ep_sizes

    assert ep_sizes([], 10**12) == [1]  # dense: nothing to split, whatever dp is
    # gcd(4096, 256) = 256 = 2^8: its 9 divisors
    assert ep_sizes([256], 4096) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert ep_sizes([8], 12) == [1, 2, 4]  # gcd(12, 8) = 4
    assert ep_sizes([8, 6], 48) == [1, 2]  # every MoE layer's experts: gcd(48, 8, 6) = 2
    # 10^12 = 2^12·5^12: its divisors up to 64
    assert divisors(10**12, 64) == [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64]


def test_plan_any_count_is_bounded(cli):
    # a dense model walked every divisor of dp for ep: 10^12 devices never ended
    r = cli("plan", "gpt2", "--global-batch", "1e12", "--count", "1e12", "--accelerator",
            "h100", "--top", "1", "-f", "json")
    assert r.code == 0, r.err
    best = r.json()["plans"][0]["layout"]
    assert best["ep"] == 1
    assert best["tp"] * best["pp"] * best["dp"] * best["cp"] == 10**12


# ----------------------------------------------------------- Hugging Face per-layer lists

HF = DATA / "hf"


def _config(tmp_path, source: Path, change, name: str = "config.json") -> str:
    """`source` with `change(text_config or the whole mapping)` applied, written to tmp."""
    data = json.loads(source.read_text())
    change(data.get("text_config", data))
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_gemma3_layer_types_of_the_wrong_length(cli, tmp_path):
    # 3 entries for 62 layers made every layer sliding
    path = _config(tmp_path, HF / "gemma-3-27b.json", lambda t: t.update(
        layer_types=["sliding_attention"] * 3))
    line = one_line_error(cli("model", path))
    assert "layer_types has 3 entries, num_hidden_layers is 62: give one per layer" in line


def test_llama4_moe_layers_out_of_range(cli, tmp_path):
    # [-1] names no layer: it removed every expert (17.2B instead of 107.8B)
    path = _config(tmp_path, HF / "sparse" / "llama-4-scout.json", lambda t: t.update(
        moe_layers=[-1]))
    line = one_line_error(cli("model", path))
    assert "moe_layers[0] = -1 is not a layer index (0..47)" in line
    path = _config(tmp_path, HF / "sparse" / "llama-4-scout.json", lambda t: t.update(
        moe_layers=[0, 48]))
    assert "moe_layers[1] = 48 is not a layer index (0..47)" in one_line_error(cli("model", path))


def test_llama4_no_rope_layers_must_be_numbers(cli, tmp_path):
    path = _config(tmp_path, HF / "sparse" / "llama-4-scout.json", lambda t: t.update(
        no_rope_layers=["1"] * 48))
    line = one_line_error(cli("model", path))
    assert "no_rope_layers[0] = '1' must be a whole number" in line
    path = _config(tmp_path, HF / "sparse" / "llama-4-scout.json", lambda t: t.update(
        no_rope_layers=[1] * 47))
    assert "no_rope_layers has 47 entries, num_hidden_layers is 48" in one_line_error(
        cli("model", path))


def test_qwen3_moe_mlp_only_layers_out_of_range(cli, tmp_path):
    # indices past the layers were dropped without a word
    path = _config(tmp_path, HF / "zoo" / "1_qwen3_moe.json", lambda t: t.update(
        mlp_only_layers=[0, 5]))
    assert "mlp_only_layers[1] = 5 is not a layer index (0..1)" in one_line_error(
        cli("model", path))
    path = _config(tmp_path, HF / "zoo" / "1_qwen3_moe.json", lambda t: t.update(
        mlp_only_layers=[True]))
    assert "mlp_only_layers[0] = True is not a layer index" in one_line_error(
        cli("model", path))


def test_exaone4_32b_published_config_imports(cli):
    # EXAONE-4.0-32B's config.json: sliding_window_pattern "LLLG" beside layer_types was
    # refused ("must be a whole number"). Hand count (untied, head_dim 128, 40 q / 8 kv heads):
    # embeddings 102,400·5,120 = 524,288,000, twice (head untied) = 1,048,576,000;
    # per layer q, o 5,120² each = 52,428,800, k, v 5,120·1,024 each = 10,485,760, q/k norms
    # 2·128 = 256, gated MLP 3·5,120·27,392 = 420,741,120, two norms 10,240:
    # 483,666,176 × 64 = 30,954,635,264; final norm 5,120 →
    # total 32,003,216,384; without embeddings 30,954,640,384 (the card's "30.95B")
    d = cli("model", str(HF / "exaone-4.0-32b.json"), "-f", "json").json()
    assert d["params"]["total"] == 32_003_216_384
    assert d["params"]["non_embedding"] == 30_954_640_384


def test_exaone4_string_pattern_without_layer_types(cli, tmp_path):
    # as Exaone4Config documents a string pattern: L local, G global, from layer 0, repeated,
    # the last layer global: "LG" over 5 layers → window, full, window, full, full
    from flopcalc.models.hf import from_hf_dict

    data = json.loads((HF / "exaone-4.0-32b.json").read_text())
    del data["layer_types"]
    data.update(num_hidden_layers=5, sliding_window_pattern="LG")
    raw = from_hf_dict(data, "exaone.json")
    assert raw["layer_types"] == ["window", "full", "window", "full", "full"]
    assert raw["sliding_window"] == 4096
    path = _config(tmp_path, HF / "exaone-4.0-32b.json", lambda t: t.update(
        sliding_window_pattern="LXG", layer_types=None))
    assert "sliding_window_pattern" in one_line_error(cli("model", path))


def test_config_without_a_context_imports_with_seq(cli, tmp_path):
    # refused before ("missing 'max_position_embeddings'") even with --seq; rotary positions
    # hold no table, so the counts need no context: the same as with one
    path = _config(tmp_path, HF / "llama-3.1-8b.json",
                   lambda t: t.pop("max_position_embeddings"))
    r = cli("model", path, "--seq", "1M", "-f", "json")
    assert r.code == 0, r.err
    assert "context" not in r.err  # no past-context warning: there is no context to pass
    d = r.json()
    assert "no max_position_embeddings: the context is unknown" in d["model"]["notes"]
    assert d["model"]["title"].endswith("(Hugging Face llama config; context unknown)")
    assert d["params"]["total"] == 8_030_261_248  # Llama 3.1 8B, the published count
    assert d["settings"]["seq"] == 2**20


@pytest.mark.parametrize("key, value, says", [
    ("num_hidden_layers", 10**40, "num_hidden_layers"),  # built its layer list: never ended
    ("mamba_expand", "x" * 5000, "mamba_expand"),  # a 20-million-character "width"
])
def test_jamba_hostile_sizes(cli, tmp_path, key, value, says):
    path = _config(tmp_path, HF / "mamba1" / "jamba-1.5-mini.json",
                   lambda t: t.update({key: value}))
    assert says in one_line_error(cli("model", path, "--seq", "4096"))


def test_nemotron_h_pattern_length_differs_from_num_hidden_layers(cli, tmp_path):
    # transformers 5.24's NemotronHConfig uses the pattern's length and warns that
    # num_hidden_layers does not match: the same here, said in the model's notes
    path = _config(tmp_path, HF / "mamba2_hybrids" / "nemotron-h-8b-base-8k.json",
                   lambda t: t.update(hybrid_override_pattern="M-M-*-"))
    d = cli("model", path, "--seq", "4096", "-f", "json").json()
    assert "num_hidden_layers (52) does not match the layer pattern's 6 layers" in \
        d["model"]["notes"]


def test_llama4_empty_no_rope_layers_is_the_default(cli, tmp_path):
    # transformers: `no_rope_layers if no_rope_layers else default` (every 4th layer NoPE)
    path = _config(tmp_path, HF / "sparse" / "llama-4-scout.json",
                   lambda t: t.update(no_rope_layers=[]))
    empty = cli("model", path, "-f", "json")
    assert empty.code == 0, empty.err
    full = cli("model", str(HF / "sparse" / "llama-4-scout.json"), "-f", "json").json()
    assert empty.json()["flops"]["forward"] == full["flops"]["forward"]


def test_pareto_search_is_bounded_by_the_model_not_the_device_count(cli):
    # tp divides the heads: the layouts tried are the divisors of --count up to 512, not every
    # number up to it (10^12 of them once)
    r = cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--count", "1e12", "--prompt",
            100, "--gen", 10, "--pareto", "-f", "json")
    assert r.code == 0, r.err
    assert {p["layout"].split()[0] for p in r.json()["pareto"]["points"]} <= {
        "tp1", "tp2", "tp4", "tp8"}
