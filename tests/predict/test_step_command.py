"""`flopcalc step`: the report's keys, the interval around the estimate, unknowns, memory,
formats, and one-line errors."""

from __future__ import annotations

import pytest

import flopcalc

from tests.conftest import ROOT

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

GPT3 = dict(tp=8, pp=8, count=1024, global_batch=1536, accelerator="h100", flash=True,
            sequence_parallel=True, zero=1, micro_batch=1, recompute="selective", vp=2,
            dropout="off")


def test_json_keys_of_the_issue():
    d = flopcalc.step("gpt3", **GPT3).to_dict()
    for key in ("low", "estimate", "high"):
        assert key in d["time"]["step_seconds"]
        assert key in d["throughput"]["tokens_per_second"]
        assert key in d["mfu"]
    for axis in ("tp", "cp", "pp", "dp", "ep"):
        assert {"bytes", "seconds"} <= set(d["communication"][axis])
    assert 0 <= d["bubble_fraction"] < 1
    assert d["memory"]["total"] > 0 and d["fits"] is True and d["memory"]["fits"] is True
    assert d["unknowns"] == []  # every option given
    t = d["time"]["step_seconds"]
    assert t["low"] <= t["estimate"] <= t["high"]
    tps = d["throughput"]["tokens_per_second"]
    assert tps["low"] <= tps["estimate"] <= tps["high"]
    # tokens/s = global batch × seq / step
    assert tps["estimate"] == pytest.approx(1536 * 2048 / t["estimate"])
    # MFU = 3 × exact forward × sequences / (step × devices × peak), the causal count by
    # default (the pairs the kernels compute)
    model = flopcalc.model("gpt3", attention="causal").to_dict()["flops"]["forward"]
    assert d["model_flops_per_step"] == 3 * model * 1536
    assert d["mfu"]["estimate"] == pytest.approx(3 * model * 1536 / (
        t["estimate"] * 1024 * 989.5e12))


@pytest.mark.parametrize("layout", [
    dict(tp=1, pp=1, count=8, global_batch=64, zero=3, flash=True),
    dict(tp=2, pp=2, count=16, global_batch=64, zero=0, micro_batch=2, recompute="full",
         dropout="on"),
    dict(tp=4, pp=1, cp=2, count=16, global_batch=32, zero=2, flash=True,
         sequence_parallel=True, grad_fp32=True, tp_overlap=True),
])
def test_interval_contains_the_estimate(layout):
    d = flopcalc.step("llama-3.1-8b", accelerator="h100", seq=4096, **layout).to_dict()
    t = d["time"]["step_seconds"]
    assert 0 < t["low"] <= t["estimate"] <= t["high"]
    b = d["time"]["breakdown"]["low"]["exposed"]
    # low: every communication hidden that a mechanism can hide (the gradient reduction, the
    # ring's K/V steps, tensor parallelism with --tp-overlap, which the low end assumes where
    # it is not given); 1F1B's blocking sends stay exposed
    assert b.get("dp", 0) == 0 and b.get("cp", 0) == 0 and b.get("tp", 0) == 0
    assert (b.get("pp", 0) == 0) == (layout["pp"] == 1)


def test_options_not_given_are_unknowns():
    d = flopcalc.step("llama-3.1-8b", accelerator="h100", seq=4096, tp=2, pp=2, count=16,
                      global_batch=64, flash=True).to_dict()
    names = {u["option"] for u in d["unknowns"]}
    assert names == {"micro_batch", "vp", "recompute", "dropout"}
    est = {u["option"]: u["estimate"] for u in d["unknowns"]}
    assert est["micro_batch"] == 1 and est["vp"] == 1 and est["dropout"] is False
    given = flopcalc.step("llama-3.1-8b", accelerator="h100", seq=4096, tp=2, pp=2, count=16,
                          global_batch=64, flash=True, micro_batch=1, vp=1,
                          recompute=est["recompute"], dropout="off").to_dict()
    assert given["unknowns"] == []
    # the same estimate; the unknowns only widen the interval
    assert given["time"]["step_seconds"]["estimate"] == d["time"]["step_seconds"]["estimate"]
    assert d["time"]["step_seconds"]["high"] >= given["time"]["step_seconds"]["high"]
    assert d["time"]["step_seconds"]["low"] <= given["time"]["step_seconds"]["low"]


def test_layout_that_does_not_fit_is_reported():
    d = flopcalc.step("llama-3.1-70b", accelerator="h100", seq=8192, count=8, tp=8,
                      global_batch=8, micro_batch=1, recompute="none", dropout="off").to_dict()
    assert d["fits"] is False
    assert any("does not fit" in w for w in d["warnings"])


def test_an_attention_free_model_passes_nothing_round_the_context_ring():
    # Mamba-2 2.7B has no layer with K/V: context parallelism sends nothing this tool counts
    # (its recurrent state's hand-off between ranks is left out, and the text says so)
    def cp(count, **kw):
        return flopcalc.step("mamba2-2.7b", accelerator="h100", seq=8192, count=count,
                             global_batch=8, flash=True, **kw).to_dict()["communication"]["cp"]

    assert (cp(8)["bytes"], cp(8)["collectives"]) == (0, "none (cp 1)")
    two = cp(8, cp=2)
    assert two["bytes"] == 0 and two["seconds"] == 0
    assert two["collectives"] == ("none counted over 2 ranks: no layer has K/V to pass round "
                                  "the ring")


def test_an_accelerator_file_runs_fp8_with_attention_at_its_bf16_peak(tmp_path):
    # A YAML file in the preset schema (the step looked the file's name up as a preset, and
    # failed). H100 SXM's bf16 peak is 989.5 TFLOP/s, its fp8 peak 1,979: the same file
    # without its bf16 row runs attention at the fp8 peak, twice as fast, all else equal.
    text = (ROOT / "presets" / "accelerators" / "h100-sxm.yaml").read_text()
    with_bf16, without = tmp_path / "mine.yaml", tmp_path / "mine-no-bf16.yaml"
    with_bf16.write_text(text)
    without.write_text("\n".join(x for x in text.splitlines() if "bf16:" not in x))

    def attention(path):
        d = flopcalc.step("llama-3.1-8b", accelerator=str(path), count=8, global_batch=8,
                          dtype="fp8", seq=8192, flash=True).to_dict()
        return d["time"]["breakdown"]["estimate"]["attention"]

    assert attention(with_bf16) == pytest.approx(2 * attention(without), rel=1e-12)


def test_fp8_matmuls_and_days():
    bf = flopcalc.step("gpt3", **GPT3).to_dict()
    f8 = flopcalc.step("gpt3", **{**GPT3, "dtype": "fp8"}).to_dict()
    assert f8["time"]["breakdown"]["estimate"]["gemm"] < bf["time"]["breakdown"]["estimate"]["gemm"]
    days = bf["training"]["days"]["estimate"]
    assert days == pytest.approx(bf["training"]["tokens"] /
                                 bf["throughput"]["tokens_per_second"]["estimate"] / 86400)
    priced = flopcalc.step("gpt3", **GPT3, price=2).to_dict()
    assert priced["training"]["cost"]["estimate"] == pytest.approx(
        2 * priced["training"]["device_hours"]["estimate"])


def test_networks_and_devices():
    for net in ("dgx-h100", "gb200-nvl72", "dgx-b200"):
        d = flopcalc.step("llama-3.1-70b", accelerator="b200", network=net, seq=8192,
                          tp=8, count=64, global_batch=64, zero=1, flash=True,
                          sequence_parallel=True, micro_batch=1, recompute="selective",
                          dropout="off").to_dict()
        assert d["machine"]["network"] == net
    d = flopcalc.step("llama-3.1-8b", accelerator="mi300x", seq=4096, count=8,
                      global_batch=64, zero=3, flash=True).to_dict()
    assert d["machine"]["network"] == "mi300x"


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_formats(cli, fmt):
    r = cli("step", "llama-3.1-8b", "--accelerator", "h100", "--count", "8",
            "--global-batch", "32", "--seq", "4k", "--zero", "3", "--flash", "--format", fmt)
    assert r.code == 0, r.err
    if fmt == "table":
        assert "Where the time goes" in r.out and "Not given" in r.out
    if fmt == "json":
        assert r.json()["command"] == "step"


def test_brief_and_schema(cli):
    r = cli("step", "gpt2", "--accelerator", "a100", "--global-batch", "8", "--brief")
    assert r.code == 0 and "step" in r.out and len(r.out.splitlines()) <= 8
    for name in ("step", "mfu", "plan"):
        s = cli("schema", name)
        assert s.code == 0 and s.json()["title"] == f"flopcalc {name} report"


@pytest.mark.parametrize("args, fragment", [
    (["--global-batch", "10", "--dp", "4"], "multiple of the 4 data-parallel"),
    (["--global-batch", "8", "--pp", "4", "--vp", "4"], "--vp 4 is more than the 3 layers"),
    (["--global-batch", "8", "--cp", "2", "--no-flash"], "--no-flash"),
    (["--global-batch", "8", "--micro-batch", "3"], "--micro-batch 3 must divide"),
    (["--global-batch", "8", "--dtype", "fp8"], "fp8"),
])
def test_errors_are_one_line(cli, args, fragment):
    r = cli("step", "gpt2", "--accelerator", "a100", *args)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("flopcalc: error: ") and r.err.count("\n") == 1, r.err
    assert fragment in r.err


def test_needs_an_accelerator(cli):
    r = cli("step", "gpt2", "--global-batch", "8")
    assert r.code == 2 and "--accelerator" in r.err


def test_custom_device_without_efficiency_file_warns(cli, tmp_path):
    acc = tmp_path / "chip.yaml"
    acc.write_text("title: chip\nvendor: x\nsource: test\nmemory_bytes: 80GB\n"
                   "memory_bandwidth: 3TB\npeak_flops: {bf16: 1P}\n")
    r = cli("step", "gpt2", "--accelerator", str(acc), "--global-batch", "8", "--network",
            "dgx-h100", "--format", "json")
    assert r.code == 0, r.err
    assert any("no efficiency preset" in w for w in r.json()["warnings"])
    # without --network it has no usual system either: DGX H100's is taken, and said
    r = cli("step", "gpt2", "--accelerator", str(acc), "--global-batch", "8", "--format",
            "json")
    assert r.code == 0, r.err
    assert r.json()["warnings"] == [
        "no efficiency preset for 'chip': the h100-sxm shares are used (give --efficiency "
        "FILE for yours)",
        "no default network for 'chip': dgx-h100 is used (give --network NAME)"]
    assert r.json()["machine"]["network"] == "dgx-h100"


def test_an_efficiency_file_without_the_devices_dtype_is_refused(cli, tmp_path):
    # H100's file with its bf16 share taken out: an H100 computes in bf16 by default
    eff = tmp_path / "eff.yaml"
    eff.write_text((ROOT / "presets" / "efficiency" / "h100-sxm.yaml").read_text().replace(
        "matmul: {bf16: 80.3%, fp16: 80.3%, fp8: 70.9%}", "matmul: {fp16: 80.3%, fp8: 70.9%}"))
    r = cli("step", "gpt2", "--accelerator", "h100", "--efficiency", str(eff),
            "--global-batch", "8")
    assert r.code == 2 and r.err.strip() == (
        "flopcalc: error: the efficiency file eff has no matmul share for bf16 (it lists fp16, "
        "fp8); choose one of those dtypes")



def test_a_device_without_memory_bandwidth_is_refused_naming_the_fix():
    # an accelerator file must give memory_bandwidth, but a custom device from --peak alone
    # (enough for `flopcalc train`) has none, and the step time's memory-bound work needs it
    from flopcalc.predict.plans import machine_for
    from flopcalc.errors import FlopcalcError
    from flopcalc.models.hardware import resolve

    found = resolve(None, "bf16", 1, 10 ** 15, None, need_bandwidth=False, timed=True,
                    network="dgx-h100")
    assert found.hw is not None and found.hw.bandwidth is None
    with pytest.raises(FlopcalcError) as e:
        machine_for(found)
    assert str(e.value) == "the step time needs the memory bandwidth: give --accelerator"


def test_a_custom_fp8_device_runs_attention_at_its_own_peak():
    # an fp8 preset's attention runs at its bf16 peak; a custom device (--peak, --bandwidth)
    # has no table to look that up in, so its one peak serves both
    from flopcalc.predict.plans import machine_for
    from flopcalc.models.hardware import resolve

    found = resolve(None, "fp8", 1, 2 * 10 ** 15, 3 * 10 ** 12, timed=True, network="dgx-h100")
    assert found.hw is not None and found.hw.name == "custom"
    m = machine_for(found).machine
    assert m.attention_peak == m.matmul_peak == 2e15 and m.matmul_bytes == 1


def test_the_machine_cites_its_efficiency_file():
    # the plan and step reports quote where the shares came from: the preset's own source
    from pathlib import Path

    import yaml

    from flopcalc.predict.plans import machine_for
    from flopcalc.models.hardware import resolve

    source = yaml.safe_load((Path(__file__).resolve().parents[2] / "presets" / "efficiency"
                             / "h200.yaml").read_text())["source"]
    r = machine_for(resolve("h200", "bf16", 1, timed=True))
    assert r.efficiency == "h200" and r.efficiency_source == source


def test_the_interval_skips_micro_batches_the_interleaved_schedule_cannot_run(cli):
    # gpt2 on two stages of 6 layers, 2 virtual stages each, 6 sequences on one replica, the
    # micro-batch not given: it ranges over 1, 2 and 3 (each leaving at least 2 micro-batches
    # for the 2 stages), but 2 leaves 3 micro-batches, not a multiple of --pp 2, which the
    # interleaved schedule needs: 2 combinations remain
    r = cli("step", "gpt2", "--accelerator", "h100", "--global-batch", "6", "--pp", "2",
            "--vp", "2", "--dp", "1", "--tp", "1", "--recompute", "none", "--dropout", "off",
            "--flash")
    assert r.code == 0, r.err
    assert "unknowns (options not given) ranged over 2 combinations that fit" in r.out


def test_a_model_without_a_head_spends_no_step_time_on_one(cli):
    # BERT with its masked-LM head taken off (`head: none`): no logits, no cross-entropy
    def head_seconds(*extra):
        r = cli("step", "bert-base", "--accelerator", "h100", "--global-batch", "8",
                "--format", "json", *extra)
        assert r.code == 0, r.err
        return [b["head"] for b in r.json()["time"]["breakdown"].values()]

    assert head_seconds("--set", "head=none") == [0.0, 0.0, 0.0]
    assert all(t > 0 for t in head_seconds())


def test_the_step_reports_memory_as_flopcalc_memory_counts_it_with_dropout():
    # the step's memory comes from its layout (plans.setup_of); `flopcalc memory` builds its
    # own: the two agree with dropout's masks on (and differ from the figure without them)
    kw = dict(seq=1024, tp=2, flash=True)
    step = flopcalc.step("gpt2", accelerator="h100", global_batch=8, dp=1, pp=1,
                         micro_batch=2, recompute="none", dropout="on", zero=0,
                         sequence_parallel=False, **kw).to_dict()
    on = flopcalc.memory("gpt2", batch=2, dropout=True, **kw).to_dict()["memory"]["total"]
    off = flopcalc.memory("gpt2", batch=2, dropout=False, **kw).to_dict()["memory"]["total"]
    assert step["memory"]["total"] == on > off


def test_an_int8_device_runs_attention_at_its_bf16_peak(tmp_path):
    # A100 SXM: int8 624 TOPS, bf16 312 TFLOP/s; attention's softmax matmuls stay in 16 bits
    # (an efficiency file with an int8 share, which the shipped A100 file has not)
    from flopcalc.predict.plans import machine_for
    from flopcalc.models.hardware import resolve

    eff = tmp_path / "a100-int8.yaml"
    eff.write_text((ROOT / "presets" / "efficiency" / "a100-sxm-80gb.yaml").read_text().replace(
        "matmul: {bf16: 86.9%, fp16: 86.9%}", "matmul: {bf16: 86.9%, int8: 86.9%}"))
    m = machine_for(resolve("a100-sxm-80gb", "int8", 1, timed=True, efficiency=str(eff))).machine
    assert (m.matmul_peak, m.attention_peak, m.matmul_bytes) == (624e12, 312e12, 1)
