"""A sweep counts each length in closed form (`counting.polynomial`): every family's count must
equal the direct per-length count (`model_flops` at that length, the path every other command
and the PyTorch comparisons use) at every length, on every preset, under both attention
conventions and both scans; and the closed forms must really be what a sweep runs on."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from flopcalc.counting import polynomial
from flopcalc.counting.model import model_flops, workload
from flopcalc.kinds.base import families
from flopcalc.models.registry import load_model, preset_names
from flopcalc.reports.sweep import build_sweep_report, parse_seq_spec, sweep_row

pytestmark = pytest.mark.invariant

PRESETS = preset_names()
CASES = [(name, attention, scan) for name in PRESETS for attention in ("full", "causal")
         for scan in ("chunked", "recurrent")]


def _direct(spec: Any, s: int, batch: int, attention: str, scan: str) -> list[tuple[str, int]]:
    return list(families(model_flops(spec, workload(spec, s, None, batch, attention,
                                                    scan))).items())


def _sizes(spec: Any) -> set[int]:
    """Every window, band and chunk the model's kinds name: the lengths where counts change
    form (used only to pick lengths to test at)."""
    out = set()
    for g in spec.groups():
        for _, kind in g.layer.slots():
            for _, mask in kind.pair_terms():
                for name in ("size", "radius"):
                    if isinstance(getattr(mask, name, None), int):
                        out.add(getattr(mask, name))
            for name in ("chunk", "block"):
                if isinstance(getattr(kind, name, None), int):
                    out.add(getattr(kind, name))
    return out


def _lengths(spec: Any, rng: random.Random) -> tuple[list[int], list[int]]:
    """(lengths to count, the ones to check): a 2,000-point log-spaced sweep to 1M, every
    length up to 300, and each side of every power of two from 64 and of the model's windows,
    bands and chunks (and their first multiples); checked at those edges and 40 others."""
    edges = set(range(1, 300))
    for size in _sizes(spec) | {2 ** j for j in range(6, 21)}:
        for multiple in (size, 2 * size, 3 * size, 7 * size, size + 1):
            edges |= {multiple + delta for delta in (-2, -1, 0, 1, 2) if multiple + delta >= 1}
    sweep = set(parse_seq_spec("1..1M", 2000))
    extra = {rng.randint(1, 2_000_000) for _ in range(40)}
    lengths = sorted(sweep | edges | extra)
    checked = sorted(edges | extra | set(rng.sample(sorted(sweep), 40)))
    return lengths, checked


@pytest.mark.parametrize("name, attention, scan", CASES)
def test_closed_forms_equal_the_direct_count(name: str, attention: str, scan: str) -> None:
    spec = load_model(name).spec
    rng = random.Random(f"{name} {attention} {scan}")
    batch = rng.choice((1, 1, 3))
    lengths, checked = _lengths(spec, rng)
    got = dict(zip(lengths, polynomial.forward_families(spec, lengths, batch, attention, scan)))
    for s in checked:
        assert list(got[s].items()) == _direct(spec, s, batch, attention, scan), (name, s)


# A dense model, latent attention with experts, windows, chunked attention, encoder-decoder,
# and each chunked scan (Mamba-2 alone and in hybrids, gated DeltaNet, Kimi delta, lightning).
SHAPES = ["llama-3.1-405b", "deepseek-v3", "gemma-3-27b", "llama-4-scout", "t5-base",
          "mamba2-2.7b", "nemotron-h-8b", "qwen3-next-80b-a3b", "kimi-linear-48b-a3b",
          "minimax-text-01", "deepseek-v3.2", "bert-base"]


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("attention", ["full", "causal"])
def test_a_sweep_runs_on_the_closed_forms(name: str, attention: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A 10,000-point sweep (5,974 distinct lengths) builds a few hundred workloads, not one
    per length, and its rows are the direct rows, floats included."""
    built = []
    real = polynomial.workload

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(polynomial, "workload", counted)
    loaded = load_model(name)
    report = build_sweep_report(loaded, "1..1M", 10_000, 2, attention)
    assert len(report.rows) == 5974
    assert len(built) < 600, len(built)
    monkeypatch.setattr(polynomial, "workload", real)
    n, x = report.n, report.crossover.seq
    for row in random.Random(name).sample(report.rows, 25) + report.rows[:3] + report.rows[-3:]:
        assert row == sweep_row(loaded.spec, row.seq, 2, attention, n, x)


@pytest.mark.parametrize("name, kind, claim", [
    ("mamba2-2.7b", "flopcalc.kinds.mamba2.Mamba2", None),  # hides its chunk
    ("mamba2-2.7b", "flopcalc.kinds.mamba2.Mamba2", 128),  # half its chunk of 256
    ("qwen3-next-80b-a3b", "flopcalc.kinds.gated_deltanet.GatedDeltaNet", 65),  # off by one
    ("minimax-text-01", "flopcalc.kinds.lightning.Lightning", 257),
    ("kimi-linear-48b-a3b", "flopcalc.kinds.kimi_delta.KimiDelta", None),
])
def test_a_wrong_declaration_costs_speed_never_exactness(
        name: str, kind: str, claim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind that says its blocks wrongly (or not at all) fails the checks at lengths the fit
    was not built from; those lengths are then counted directly, exactly."""
    monkeypatch.setattr(kind + ".count_period", lambda self: claim)
    spec = load_model(name).spec
    lengths = parse_seq_spec("1..300k", 3000)
    got = polynomial.forward_families(spec, lengths, 1, "causal")
    for i in sorted(random.Random(kind).sample(range(len(lengths)), 60)):
        assert list(got[i].items()) == _direct(spec, lengths[i], 1, "causal", "chunked")


def test_a_window_declared_one_short_is_still_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemma 3's sliding layers (a window of 1,024) claiming their quadratic piece ends at 1,000:
    the piece past it is then not one polynomial, and the check at its far end says so."""
    from flopcalc.kinds.masks import Mask

    real = Mask.segment_end

    def short(self: Mask, s: int) -> Any:
        end = real(self, s)
        return end - 24 if self.pattern == "window" and end is not None else end

    monkeypatch.setattr(Mask, "segment_end", short)
    spec = load_model("gemma-3-27b").spec
    lengths = list(range(900, 1200)) + parse_seq_spec("1200..100k", 500)
    got = polynomial.forward_families(spec, lengths, 1, "causal")
    for i in range(0, len(lengths), 7):
        assert list(got[i].items()) == _direct(spec, lengths[i], 1, "causal", "chunked")


# ----------------------------------------------------------------------------------- JSON


def test_json_is_json_dumps_to_the_byte_without_asdict_or_json_dumps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Report.to_dict and to_json give what dataclasses.asdict and json.dumps(indent=2,
    ensure_ascii=False, allow_nan=False) give, without calling either (a 10,000-row sweep
    spent longer in them than in counting)."""
    import dataclasses

    from flopcalc.render.data import to_json
    from flopcalc.reports import common

    report = build_sweep_report(load_model("qwen3-next-80b-a3b"), "1..100k", 500, 1, "causal")
    tricky = {"a\u2028\"\\\x1b": [], "b": {}, "é": [1, 2.5, -0.0, 1e300, None, True, False],
              7: {"x": (1, (2,))}, 2.5: 1, None: 0, True: 1,
              "rows": [{"k%s": i, "v": i / 3, "w": None, "t": i % 2 == 0, "s": f"r{i}\n",
                        "f": {"n": i}, "l": [i]} for i in range(40)] + [{"k%s": 0}, {}],
              "records": [{"a": i, "n": {"x%": i / 7, "y": None}, "e": {}} for i in range(40)]
              + [{"a": 1, "n": {"y": 1, "x%": 2}, "e": {}}, {"a": "\x00", "n": {}, "e": {}}]}
    from flopcalc.render.escape import json_safe

    want_dict = dataclasses.asdict(report)
    # json.dumps's document, with what JSON lets through raw (U+2028 here) escaped
    want = [json_safe(json.dumps(d, indent=2, ensure_ascii=False, allow_nan=False))
            for d in (want_dict, tricky)]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("called")

    monkeypatch.setattr(dataclasses, "asdict", refuse)
    monkeypatch.setattr(common, "asdict", refuse, raising=False)
    monkeypatch.setattr(json, "dumps", refuse)
    got_dict = report.to_dict()
    assert got_dict == want_dict
    assert [to_json(got_dict), to_json(tricky)] == want
    assert to_json(report.document()) == want[0]  # --format json: the report walked directly
    for bad in (float("nan"), [{"v": float("inf")}] * 40, {"v": -float("inf")}):
        with pytest.raises(ValueError, match="Out of range float"):
            to_json(bad)
