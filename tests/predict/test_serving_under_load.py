"""Serving under load: the engine-step model at two batch sizes (hand-worked on the tiny
model), the scheduler on a closed loop of 2 users (a timeline written by hand), the Pareto
front, the CLI and API contract, bad input, and the measured runs of
tests/serving_runs.py."""

from __future__ import annotations

import json
import sys

import pytest

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

pytest.importorskip("simpy")

from flopcalc import api  # noqa: E402
from flopcalc.engines.vllm import Engine  # noqa: E402
from flopcalc.predict.latency import DeviceCosts, Layout, Network  # noqa: E402
from flopcalc.errors import FlopcalcError  # noqa: E402
from flopcalc.engines.registry import ServingEngine as EngineOverhead
from flopcalc.predict.engine_step import Efficiencies, StepModel  # noqa: E402
from flopcalc.predict.scheduler import Workload, metrics, simulate, steady_state  # noqa: E402
from flopcalc.reports.serve_load import ParetoPoint, front  # noqa: E402

TINY = "tests/data/serve/tiny.yaml"
ONE = (1.0, 1.0, 1.0)
NONE = EngineOverhead("none", "none", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), "", (0.0, 0.0, 0.0))


def tiny_model(peak: float = 1e9, bandwidth: float = 1e6) -> StepModel:
    """The tiny model on a made-up machine: every efficiency 1, no overhead, no network."""
    spec = api.load(TINY).spec
    costs = DeviceCosts(spec, Layout(1), Engine(max_model_len=64), "bf16")
    return StepModel(spec, costs, peak, bandwidth, Network("", None),
                     Efficiencies(ONE, ONE, ONE, ONE, "test"), NONE, (10, 20))


# The tiny model (d 8, 2 heads of 4, 1 KV head, MLP 16, vocab 16, 2 layers, untied, bf16):
# matmul weights per layer q 64 + k 32 + v 32 + o 64 + up 128 + down 128 = 448; 2 layers 896,
# + 2·8 norm gains per layer (32) + final norm 8 + head 128 = 1,064 params read by every step
# = 2,128 bytes; the 16 x 8 embedding is a lookup: 16 bytes per distinct token.
# FLOPs per token: 2·896 = 1,792 (GEMMs) + 2·8·16 = 256 (head); attention at context c:
# scores 2·2·4·c + values 2·2·4·c = 32c per layer, 64c for both. KV: k + v = 2·4 values of
# 2 bytes = 16 bytes per layer and token, 32 for both.


def test_step_memory_bound_at_batch_one():
    m = tiny_model()
    # one decode token at context 10 on 1 GFLOP/s and 1 MB/s:
    # GEMMs: rows padded to 64: 64·1,792 + 256 = 114,944 FLOPs → 114.944 µs;
    #        bytes 2,128 + 16 (one embedding row) = 2,144 → 2.144 ms: memory-bound
    # attention: 640 FLOPs → 0.64 µs; cache read 32·10 + written 32 = 352 bytes → 352 µs
    low, est, high = m.time(1, 10)
    assert est == pytest.approx(2.144e-3 + 3.52e-4, rel=1e-9)
    assert low == est == high  # every end the same on this machine
    assert m.binds(1, 10) == "memory"


def test_step_compute_bound_at_large_batch():
    m = tiny_model()
    # 2,048 decode tokens, each at context 10 (sum 20,480):
    # GEMMs: 2,048·(1,792 + 256) = 4,194,304 FLOPs → 4.194304 ms; bytes 2,128 + 256 (all 16
    #        embedding rows) = 2,384 → 2.384 ms: compute-bound
    # attention: 64·20,480 = 1,310,720 FLOPs → 1.31 ms; cache 32·20,480 + 32·2,048 = 720,896
    #        bytes → 720.896 ms: memory-bound
    _, est, _ = m.time(2048, 20480)
    assert est == pytest.approx(4.194304e-3 + 0.720896, rel=1e-9)
    assert m.binds(2048, 20480) == "compute"


class Stub:
    """A step of 1 s when it prefills anything, 0.5 s when it only decodes; records each."""

    def __init__(self):
        self.steps = []

    def time(self, batch, ctx, chunks=(), pre=None):
        self.steps.append((batch, ctx, tuple((c.start, c.end, c.last) for c in chunks)))
        t = 1.0 if chunks else 0.5
        return (t, t, t)


def test_scheduler_closed_loop_of_two_users_by_hand():
    # prompt 4, gen 3, 6 tokens a step, 2 users, 4 requests.
    # t=0   A, B arrive. step 0: A prefills 4 (done: first token at 1), B 2 of 4     → t=1
    # step 1: A decodes (ctx 5), B prefills its last 2 (first token at 2)          → t=2
    # step 2: A (ctx 6), B (ctx 5) decode: A has 3 tokens, done at 2.5; C arrives  → t=2.5
    # step 3: B decodes (ctx 6), done at 3.5; C prefills 4 (first at 3.5); D comes → t=3.5
    # step 4: C decodes (ctx 5); D prefills 4 (first at 4.5)                      → t=4.5
    # step 5: C (ctx 6), D (ctx 5) decode: C done at 5                            → t=5
    # step 6: D decodes (ctx 6), done at 5.5                                      → t=5.5
    stub = Stub()
    w = Workload(prompt=4, gen=3, max_num_seqs=2, max_num_batched_tokens=6, slots=2,
                 concurrency=2, requests=4)
    run = simulate(stub, w, 1)  # type: ignore[arg-type]
    assert stub.steps == [
        (0, 0, ((0, 4, True), (0, 2, False))),
        (1, 5, ((2, 4, True),)),
        (2, 11, ()),
        (1, 6, ((0, 4, True),)),
        (1, 5, ((0, 4, True),)),
        (2, 11, ()),
        (1, 6, ()),
    ]
    got = sorted((r.arrival, r.first, r.finish) for r in run.requests)
    assert got == [(0, 1, 2.5), (0, 2, 3.5), (2.5, 3.5, 5), (3.5, 4.5, 5.5)]
    m = metrics(run)
    assert m["ttft"]["mean"] == pytest.approx((1 + 2 + 1 + 1) / 4)
    assert m["e2e"]["mean"] == pytest.approx((2.5 + 3.5 + 2.5 + 2) / 4)
    # TPOT (finish − first)/(gen − 1): 0.75, 0.75, 0.75, 0.5
    assert m["tpot"]["mean"] == pytest.approx(2.75 / 4)
    assert m["throughput"]["output_tokens_per_s"] == pytest.approx(12 / 5.5)


def test_scheduler_waits_for_the_cache():
    # a cache of 1 request: B waits until A finishes (prompt 2, gen 2, both arrive at 0)
    # step 0: A prefills (first at 1) → 1; step 1: A decodes, done at 1.5 → 1.5;
    # step 2: B prefills (first at 2.5) → 2.5; step 3: B decodes, done at 3
    stub = Stub()
    w = Workload(prompt=2, gen=2, max_num_seqs=8, max_num_batched_tokens=16, slots=1,
                 concurrency=2, requests=2)
    run = simulate(stub, w, 1)  # type: ignore[arg-type]
    assert sorted((r.first, r.finish) for r in run.requests) == [(1, 1.5), (2.5, 3)]


def test_steady_state_closed_form():
    # 4 users, prompt 8, gen 5, budget 64: one prefill step, a cycle of 1 + 4 = 5 steps,
    # 4·4/5 = 3.2 decoding and 4·8/5 = 6.4 prompt tokens a step
    st = steady_state(tiny_model(), 4, 8, 5, 64)
    assert (st.cycle_steps, st.prefill_steps) == (5, 1)
    assert st.batch == pytest.approx(3.2)
    assert st.prefill_tokens == pytest.approx(6.4)


def test_pareto_front_by_hand():
    def pt(name, per_gpu, per_user):
        return ParetoPoint(name, 1, 1, 1, 1, per_gpu, per_user, 0.0, 0.0, False)

    pts = [pt("a", 100, 50), pt("b", 80, 60), pt("c", 90, 40), pt("d", 200, 10),
           pt("e", 70, 55)]
    # c is beaten by a (more of both), e by b; the front by tokens/s per user: b, a, d
    assert [p.layout for p in front(pts)] == ["b", "a", "d"]


def test_pareto_on_the_toy_model():
    r = api.serve(TINY, accelerator="h100", count=2, prompt=16, gen=16, pareto=True,
                  max_model_len=64).to_dict()
    pts = r["pareto"]["points"]
    assert set(r["pareto"]["layouts"]) == {"tp1 dp2", "tp2 dp1"}
    for a in pts:  # no point of the front beaten on both axes by another
        assert not any(b["output_tokens_per_second_per_gpu"] > a["output_tokens_per_second_per_gpu"]
                       and b["output_tokens_per_second_per_user"]
                       > a["output_tokens_per_second_per_user"] for b in pts)


def test_json_contract():
    r = api.serve("llama-3.1-8b", accelerator="h100", prompt=512, gen=64, concurrency="4",
                  max_model_len=4096, price=2).to_dict()
    p = r["performance"]
    for key in ("output_tokens_per_second", "output_tokens_per_second_per_user",
                "requests_per_second", "ttft_seconds", "tpot_seconds", "e2e_seconds"):
        assert p[key]["low"] <= p[key]["estimate"] <= p[key]["high"]
    for q in ("p50", "p90", "p99"):
        assert p["ttft_seconds"][q]["estimate"] > 0
    # $2 an hour for one device over its tokens per hour
    d = p["dollars_per_million_output_tokens"]["estimate"]
    assert d == pytest.approx(2 / (p["output_tokens_per_second"]["estimate"] * 3600) * 1e6)


def test_open_loop_is_repeatable():
    kw = dict(accelerator="h100", prompt=256, gen=32, request_rate=4, requests=50,
              max_model_len=4096)
    a = api.serve("llama-3.1-8b", **kw).to_dict()["performance"]
    b = api.serve("llama-3.1-8b", **kw).to_dict()["performance"]
    c = api.serve("llama-3.1-8b", random_state=7, **kw).to_dict()["performance"]
    assert a == b
    assert a["ttft_seconds"] != c["ttft_seconds"]


@pytest.mark.parametrize("args, words", [
    (["--request-rate", "0"], "--request-rate"),
    (["--request-rate", "-1"], "--request-rate"),
    (["--concurrency", "64", "--max-num-seqs", "32"], "max_num_seqs wins"),
    (["--concurrency", "4", "--prompt", "4000", "--gen", "200"], "--max-model-len"),
    (["--concurrency", "4", "--request-rate", "2"], "not both"),
    (["--concurrency", "lots"], "--concurrency"),
])
def test_bad_input(cli, args, words):
    base = ["serve", "llama-3.1-8b", "--accelerator", "h100", "--max-model-len", "4096"]
    if "--prompt" not in args:
        base += ["--prompt", "256", "--gen", "32"]
    r = cli(*base, *args)
    assert r.code == 2
    assert words in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert "Traceback" not in r.err


def test_missing_prompt():
    with pytest.raises(FlopcalcError, match="--prompt"):
        api.serve("llama-3.1-8b", accelerator="h100", concurrency="4", max_model_len=4096)


def test_without_simpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "simpy", None)
    with pytest.raises(FlopcalcError, match=r"pip install 'flopcalc\[predict\]'"):
        api.serve("llama-3.1-8b", accelerator="h100", prompt=64, gen=8, concurrency="1",
                  max_model_len=4096)


def test_measured_runs():
    """Every expressible case is predicted; the floors document today's accuracy
    (docs/validation-serving.md)."""
    sys.path.insert(0, "tests")
    import serving_runs as S

    ref = json.loads(S.LOCAL.read_text())
    rows, skipped = S.rows(ref)
    cases, _ = S.cases(ref)
    assert {r["id"] for r in rows} == {c.id for c in cases}
    assert len(cases) + len(skipped) == len(ref["cases"])
    s = S.summary(rows)
    assert s["inside"] >= 0.45
    assert s["median_abs_error"] <= 0.40
    assert s["median_width"] <= 2.5


def test_speculative_step_by_hand():
    m = tiny_model()
    m.speculate(1, 1.5, None, head_bytes=16 * 8 * 2)
    # verify: 1 sequence feeds 2 tokens at context 10: GEMM bytes 2,128 + 2 embedding rows
    #   (32) = 2,160 → 2.16 ms (compute 114,944·… padded to 64 rows: 0.12 ms); cache read once
    #   320 + 2 tokens written 64 = 384 bytes → 384 µs
    # draft (MTP): one layer of the plain decode step (2.496 ms / 2 layers = 1.248 ms) + the
    #   head's 256 bytes → 256 µs
    _, est, _ = m.time(1, 10)
    assert est == pytest.approx(2.16e-3 + 3.84e-4 + 1.248e-3 + 2.56e-4, rel=1e-9)


def test_scheduler_with_speculation():
    # 2 tokens a decode step: gen 5 needs ceil(4 / 2) = 2 decode steps after the prefill.
    # step 0: prefill (1 s, first token at 1); steps 1, 2: decode (0.5 s each) → done at 2
    stub = Stub()
    stub.spec_expect, stub.spec_k = 2.0, 1
    w = Workload(prompt=4, gen=5, max_num_seqs=4, max_num_batched_tokens=16, slots=4,
                 concurrency=1, requests=1)
    run = simulate(stub, w, 1)  # type: ignore[arg-type]
    assert [(r.first, r.finish) for r in run.requests] == [(1, 2)]
    # contexts: P + 1 = 5 at the first decode, 5 + 2 = 7 at the second
    assert [s[:2] for s in stub.steps] == [(0, 0), (1, 5), (1, 7)]


def test_disaggregated_pools():
    kw = dict(accelerator="h100", count=4, prompt=512, gen=64, concurrency="32",
              max_model_len=4096)
    r = api.serve("llama-3.1-8b", prefill_devices=1, **kw).to_dict()["disaggregated"]
    assert (r["prefill_replicas"], r["decode_replicas"]) == (1, 3)
    # one request's cache: 512 tokens x 131,072 bytes (32 layers x 8 KV heads x 128 x 2 x 2)
    assert r["kv_transfer_bytes"] == 512 * 131072
    t = r["output_tokens_per_second"]
    assert t["low"] <= t["estimate"] <= t["high"]
    # the rate is the least of what the users ask and what each pool gives
    rps = t["estimate"] / 64
    assert rps <= r["prefill_requests_per_second"]["estimate"] * (1 + 1e-9)
    assert rps <= r["decode_requests_per_second"]["estimate"] * (1 + 1e-9)


def test_pool_split_leaving_no_decode(cli):
    r = cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--count", "4", "--prompt", "512",
            "--gen", "64", "--concurrency", "8", "--prefill-devices", "4",
            "--max-model-len", "4096")
    assert r.code == 2
    assert "leaves no decode" in r.err


def test_closed_loop_retimed_equals_simulated():
    from flopcalc.predict.scheduler import retime

    m = tiny_model()
    m.eff = Efficiencies(ONE, ONE, (1.0, 0.9, 0.8), ONE, "ends that differ")
    w = Workload(prompt=12, gen=6, max_num_seqs=3, max_num_batched_tokens=16, slots=3,
                 concurrency=4, requests=20)
    direct = simulate(m, w, 0)
    again = retime(simulate(m, w, 2), 0)
    key = sorted(x for r in direct.requests for x in (r.arrival, r.first, r.finish))
    got = sorted(x for r in again.requests for x in (r.arrival, r.first, r.finish))
    assert got == pytest.approx(key, rel=1e-12, abs=1e-15)


def test_pareto_plot(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "front.svg"
    r = cli("serve", TINY, "--accelerator", "h100", "--count", "2", "--prompt", "16", "--gen",
            "16", "--pareto", "--max-model-len", "64", "--plot", out, "--brief")
    assert r.code == 0, r.err
    svg = out.read_text()
    assert "Pareto front" in svg and "tp1 dp2" in svg
    r = cli("serve", TINY, "--accelerator", "h100", "--prompt", "16", "--gen", "16",
            "--concurrency", "2", "--max-model-len", "64", "--plot", tmp_path / "x.svg")
    assert r.code == 2 and "--pareto" in r.err


def test_best_split():
    kw = dict(accelerator="h100", count=4, prompt=2048, gen=64, concurrency="64",
              max_model_len=4096)
    best = api.serve("llama-3.1-8b", prefill_devices="auto", **kw).to_dict()["disaggregated"]
    assert len(best["splits"]) == 3  # 1P3D, 2P2D, 3P1D
    for n in (1, 2, 3):
        r = api.serve("llama-3.1-8b", prefill_devices=n, **kw).to_dict()["disaggregated"]
        assert r["output_tokens_per_second"]["estimate"] <= \
            best["output_tokens_per_second"]["estimate"]


@pytest.mark.parametrize("extra, words", [
    (["--requests", "1000000"], "simulation's bound"),
    (["--gen", "3000", "--max-model-len", "4096", "--prompt", "64", "--requests", "90000"],
     "engine steps"),
])
def test_simulation_is_bounded(cli, extra, words):
    r = cli("serve", TINY, "--accelerator", "h100", "--prompt", "8", "--gen", "8",
            "--max-model-len", "64", "--concurrency", "1", *extra)
    assert r.code == 2 and words in r.err
