"""`flopcalc check --command C` gates the figures of every command in the command table, with
--max and --min, exit 0 / 1 / 2; budget files and `flopcalc.check` the same. Every limit below
comes from a hand-worked figure or a published one, never from the report under test."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import flopcalc
from flopcalc.commands import CHECKABLE, COMMANDS

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

H100_PEAK = 989_500 * 10**9  # bf16 dense FLOP/s, NVIDIA's H100 SXM datasheet
# Llama 3.1 8B: 8,030,261,248 parameters (Meta's model card); untied 128,256 x 4,096 embedding
# and head: N = 8,030,261,248 - 2·128,256·4,096 = 6,979,588,096 non-embedding parameters.
LLAMA_8B, LLAMA_8B_N = 8_030_261_248, 6_979_588_096
# GPT-3: 174,604,259,328 parameters; N = total - 50,257·12,288 (tokens) - 2,048·12,288
# (positions) = 173,961,535,488; 6·N·D at D = 300B:
GPT3_6ND = 6 * 173_961_535_488 * 300 * 10**9  # 313,130,763,878,400,000,000,000
# A step of 64 x 8,192 tokens on 8 H100 cannot beat 6·N FLOPs per token at the peak:
# 6 · 6,979,588,096 · 524,288 / (8 · 989.5e12) = 2.7736 s, so every step time is above 2.77 s.
STEP_FLOOR = "2.77"
STEP = ["llama-3.1-8b", "--command", "step", "--accelerator", "h100", "--count", "8",
        "--global-batch", "64"]


def _share(x: Fraction, nudge: Fraction) -> str:
    return f"{float(x + nudge):.12f}"


# The six_nd row of `mfu`: 6·N·(tokens/s) / (devices · peak), N non-embedding (Kaplan et al.).
SIX_ND_MFU = Fraction(6 * LLAMA_8B_N * 60_000, 8 * H100_PEAK)  # 0.31741431...
# GPT-3 trained on 300B tokens by 1,024 H100 at 40% MFU, 6ND: days = C / (1024·peak·0.4) / 86400
GPT3_DAYS = Fraction(GPT3_6ND, 1024 * H100_PEAK * 4 // 10) / 86_400  # 8.94203...

# (command, MODEL and options, limits that hold, limits that each fail alone)
CASES = [
    ("model", ["llama-3.1-8b"],  # the model card's count
     [("max", f"params.total={LLAMA_8B}"), ("min", f"params.total={LLAMA_8B}")],
     [("max", f"params.total={LLAMA_8B - 1}"), ("min", f"params.total={LLAMA_8B + 1}")]),
    # One head, n = m = 8, d_k = d_v = 4: 2·n²·(d_k + d_v) + 4·n² - n·(d_v + 1)
    # = 1,024 + 256 - 40 = 1,240 scalar operations.
    ("attention", ["--command", "attention", "--n", "8", "--d-k", "4", "--d-v", "4"],
     [("max", "exact_total=1240"), ("min", "exact_total=1240")],
     [("max", "exact_total=1239"), ("min", "exact_total=1241")]),
    # GPT-3 at 2,048: 96 layers · 4·s²·d = 96 · 4 · 2,048² · 12,288 = 19,791,209,299,968.
    ("sweep", ["gpt3", "--command", "sweep", "--seqs", "1k,2k"],
     [("max", "rows.2048.attention=19791209299968"), ("min", "crossover.seq=72k")],
     [("max", "rows.2048.attention=19791209299967"), ("min", "crossover.seq=73k")]),
    ("compare", ["gpt3", "gpt2", "--command", "compare"],  # the papers' counts (SPEC §2)
     [("max", "models.gpt3.params_total=174604259328"),
      ("min", "models.gpt2.params_total=124439808")],
     [("max", "models.gpt3.params_total=174604259327"),
      ("min", "models.gpt2.params_total=124439809")]),
    ("conventions", ["gpt3", "--command", "conventions", "--tokens", "300B"],
     [("max", f"conventions.six_nd.total={GPT3_6ND}"),
      ("min", "conventions.six_nd.delta_pct=-100")],
     [("max", f"conventions.six_nd.total={GPT3_6ND - 1}"),
      ("min", "conventions.six_nd.delta_pct=0")]),  # 6ND counts less than the exact total
    # K and V of 32 layers x 8 heads x 128 in bf16: 2·32·8·128·2 = 131,072 bytes per token;
    # 124k + 4k = 131,072 tokens cached: 16 GiB exactly.
    ("infer", ["llama-3.1-8b", "--command", "infer", "--prompt", "124k", "--gen", "4k"],
     [("max", "kv_cache.bytes=16GiB"), ("min", "kv_cache.bytes=16GiB")],
     [("max", "kv_cache.bytes=17179869183"), ("min", "kv_cache.bytes=17179869185")]),
    ("train", ["gpt3", "--command", "train", "--tokens", "300B", "--accelerator", "h100",
               "--count", "1024", "--mfu", "40%"],
     [("max", f"days.six_nd={float(GPT3_DAYS) + 1e-9}"),
      ("min", f"days.six_nd={float(GPT3_DAYS) - 1e-9}")],
     [("max", f"days.six_nd={float(GPT3_DAYS) - 1e-9}"),
      ("min", f"days.six_nd={float(GPT3_DAYS) + 1e-9}")]),
    # Mixed precision AdamW: fp32 master, m and v, 12 bytes per parameter.
    ("memory", ["llama-3.1-8b", "--command", "memory"],
     [("max", f"memory.optimizer={12 * LLAMA_8B}"), ("min", f"memory.optimizer={12 * LLAMA_8B}")],
     [("max", f"memory.optimizer={12 * LLAMA_8B - 1}")]),
    # bf16 weights, 2 bytes per parameter, whole on each of the 8 data-parallel devices; the
    # step time above the FLOP floor, and MFU at most 100%.
    ("step", STEP + ["--dropout", "on"],
     [("max", f"memory.weights={2 * LLAMA_8B}"), ("min", f"time.step_seconds={STEP_FLOOR}"),
      ("max", "mfu=100%")],
     [("max", f"time.step_seconds={STEP_FLOOR}"), ("min", "mfu=100%"),
      ("min", f"memory.weights={2 * LLAMA_8B + 1}")]),
    # vLLM 0.33 logged "GPU KV cache size: 327,680 tokens, Maximum concurrency for 8,192 tokens
    # per request: 40.00x" for 40 GiB (tests/data/serve/vllm_0_33.json); by hand
    # 40 GiB / 131,072 bytes per token = 327,680 tokens = 40 requests of 8,192.
    ("serve", ["llama-3.1-8b", "--command", "serve", "--max-model-len", "8k",
               "--kv-memory", "40GiB"],
     [("min", "capacity.max_concurrency=40"), ("max", "capacity.tokens=327680")],
     [("min", "capacity.max_concurrency=41"), ("max", "capacity.tokens=327679")]),
    ("mfu", ["llama-3.1-8b", "--command", "mfu", "--accelerator", "h100", "--count", "8",
             "--tokens-per-second", "60000"],
     [("min", f"rows.six_nd.utilisation={_share(SIX_ND_MFU, Fraction(-1, 10**9))}"),
      ("max", f"rows.six_nd.utilisation={_share(SIX_ND_MFU, Fraction(1, 10**9))}"),
      # the exact count adds the head and attention to 6N: MFU is above the 6ND row
      ("min", f"mfu={_share(SIX_ND_MFU, Fraction(-1, 10**9))}")],
     [("max", f"rows.six_nd.utilisation={_share(SIX_ND_MFU, Fraction(-1, 10**9))}"),
      ("min", f"rows.six_nd.utilisation={_share(SIX_ND_MFU, Fraction(1, 10**9))}")]),
    # The best plan fits the H100's 81,559 MiB (nvidia-smi) and is slower than the FLOP floor.
    ("plan", ["llama-3.1-8b", "--command", "plan", "--accelerator", "h100", "--count", "8",
              "--global-batch", "64"],
     [("max", "plans.1.memory_bytes=81559MiB"), ("min", f"plans.1.step_seconds={STEP_FLOOR}"),
      ("max", "plans.1.mfu=1")],
     [("max", f"plans.1.step_seconds={STEP_FLOOR}"), ("max", "plans.1.memory_bytes=1GB")]),
]


def test_every_command_of_the_table_has_a_gate_here():
    """A command added to the registry with a report of figures is checkable at once; this
    list must then grow too. The others (show, schema, check and the listings) are not."""
    assert set(CHECKABLE) == {case[0] for case in CASES}
    assert set(COMMANDS) - set(CHECKABLE) == {"list", "show", "schema", "check", "accelerators"}


def _limits(pairs):
    return [a for bound, text in pairs for a in (f"--{bound}", text)]


@pytest.mark.parametrize("command, args, holds, fails", CASES, ids=[c[0] for c in CASES])
def test_gate_passes_and_fails(cli, command, args, holds, fails):
    r = cli("check", *args, *_limits(holds), "-f", "json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["passed"] and [row["command"] for row in doc["rows"]] == [command] * len(holds)
    for bound, text in fails:
        key, _, limit = text.partition("=")
        r = cli("check", *args, *_limits(holds), f"--{bound}", text)
        assert r.code == 1, (text, r.out, r.err)
        (line,) = [x for x in r.out.splitlines() if x.startswith("FAIL")]
        assert f" {key}" in line and f"({bound} " in line, line


def test_fail_line_names_key_value_and_limit_exactly(cli):
    r = cli("check", "llama-3.1-8b", "--command", "serve", "--max-model-len", "8k",
            "--kv-memory", "40GiB", "--min", "capacity.max_concurrency=41")
    assert r.code == 1
    assert r.out.startswith("FAIL llama-3.1-8b capacity.max_concurrency = 40.0 (min 41, "
                            "margin -1, -2.4%; serve ")
    assert "budget exceeded: 1 of 1 limits do not hold" in r.err


# ------------------------------------------------------------------------------ intervals


def test_an_interval_is_compared_at_its_conservative_end(cli):
    """--max compares the high end, --min the low end, unless the key names an end: a limit
    between low and high fails both ways, and says which end it compared."""
    doc = cli("step", *STEP[:1], *STEP[3:], "-f", "json").json()
    ends = doc["time"]["step_seconds"]
    assert ends["low"] < ends["estimate"] < ends["high"]
    middle = repr((ends["low"] + ends["high"]) / 2)
    r = cli("check", *STEP, "--max", f"time.step_seconds={middle}", "--min",
            f"time.step_seconds={middle}", "-f", "json")
    assert r.code == 1
    rows = r.json()["rows"]
    assert [(x["key"], x["compared"], x["status"]) for x in rows] == [
        ("time.step_seconds", "time.step_seconds.high", "FAIL"),
        ("time.step_seconds", "time.step_seconds.low", "FAIL")]
    assert [x["value"] for x in rows] == [ends["high"], ends["low"]]
    named = cli("check", *STEP, "--max", f"time.step_seconds.estimate={ends['high']}")
    assert named.code == 0 and "time.step_seconds.estimate = " in named.out
    text = cli("check", *STEP, "--max", f"time.step_seconds={middle}").out
    assert text.startswith("FAIL llama-3.1-8b time.step_seconds.high = ")


def test_shares_read_percent_and_other_keys_refuse_it(cli):
    a = cli("check", *STEP, "--min", "mfu=25%", "-f", "json").json()["rows"][0]
    b = cli("check", *STEP, "--min", "mfu=0.25", "-f", "json").json()["rows"][0]
    assert a["limit"] == b["limit"] == 0.25 and a["unit"] == "share"
    r = cli("check", "gpt2", "--max", "params.total=40%")
    assert r.code == 2 and r.err.count("\n") == 1 and "% limit is for a share" in r.err


# ------------------------------------------------------------------------------ bad usage


def test_a_wrong_key_lists_that_commands_keys(cli):
    r = cli("check", "llama-3.1-8b", "--command", "serve", "--max-model-len", "8k",
            "--kv-memory", "40GiB", "--max", "nothing_like_it=1")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "not a numeric key of the serve report" in r.err
    assert "capacity.max_concurrency" in r.err and "flopcalc schema serve" in r.err
    assert "params.total" not in r.err  # the model report's keys are not the serve report's
    r = cli("check", *STEP, "--max", "time.step_second=1")
    assert r.code == 2 and "did you mean 'time.step_seconds'" in r.err
    r = cli("check", "gpt3", "gpt2", "--command", "compare", "--max", "nope=1")
    assert r.code == 2 and "models.<model>.params_total" in r.err


def test_an_option_of_another_command_names_the_commands_it_belongs_to(cli):
    r = cli("check", "gpt2", "--tp", "2", "--max", "params.total=1")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--tp is not an option of check or of model" in r.err and "step" in r.err
    r = cli("check", "gpt2", "--mx", "params.total=1")
    assert r.code == 2 and "did you mean '--max'" in r.err
    r = cli("check", *STEP[:3], "--accelerator", "h100", "--max", "mfu=1")  # --global-batch
    assert r.code == 2 and "--global-batch" in r.err


# ------------------------------------------------------------------------------ budget files

BUDGET = f"""checks:
  - model: llama-3.1-8b
    command: serve
    max_model_len: 8k
    kv_memory: 40GiB
    min: {{capacity.max_concurrency: 40}}
  - model: llama-3.1-8b
    command: step
    accelerator: h100
    count: 8
    global_batch: 64
    dropout: "on"
    min: {{time.step_seconds: {STEP_FLOOR}}}
    max: {{memory.weights: {2 * LLAMA_8B}, mfu: 100%}}
  - models: [gpt3, gpt2]
    command: compare
    max: {{models.gpt2.params_total: 124439808}}
  - command: attention
    n: 8
    d_k: 4
    d_v: 4
    min: {{exact_total: 1240}}
"""


def test_budget_with_serve_and_step_entries(cli, tmp_path):
    path = tmp_path / "budget.yaml"
    path.write_text(BUDGET)
    r = cli("check", "--budget", str(path), "-f", "json")
    assert r.code == 0, r.err
    rows = r.json()["rows"]
    assert [(x["command"], x["compared"]) for x in rows] == [
        ("serve", "capacity.max_concurrency"), ("step", "memory.weights"), ("step", "mfu.high"),
        ("step", "time.step_seconds.low"), ("compare", "models.gpt2.params_total"),
        ("attention", "exact_total")]
    path.write_text(BUDGET.replace("capacity.max_concurrency: 40", "capacity.max_concurrency: 41"))
    assert cli("check", "--budget", str(path)).code == 1


@pytest.mark.parametrize("entry, needle", [
    ("  - model: gpt2\n    command: stepp\n    max: {a: 1}\n", "did you mean 'step'"),
    ("  - model: gpt2\n    command: [step]\n    max: {a: 1}\n", "cannot be checked"),
    ("  - model: gpt2\n    command: check\n    max: {a: 1}\n", "cannot be checked"),
    ("  - model: gpt2\n    command: compare\n    max: {a: 1}\n", "compare takes models"),
    ("  - models: gpt2\n    command: compare\n    max: {a: 1}\n", "compare takes models"),
    ("  - model: gpt2\n    command: serve\n    tp: [1]\n    max: {a: 1}\n",
     "Invalid value for '--tp'"),
    ("  - model: gpt2\n    command: step\n    dropout: maybe\n    global_batch: 1\n"
     "    max: {a: 1}\n", "Invalid value for '--dropout'"),
    ("  - model: gpt2\n    command: serve\n    prompt_len: 8\n    max: {a: 1}\n",
     "unknown key 'prompt_len' for command serve"),
    ("  - command: attention\n    model: gpt2\n    n: 8\n    d_k: 4\n    d_v: 4\n"
     "    max: {a: 1}\n", "unknown key 'model' for command attention"),
    ("  - model: gpt2\n    command: serve\n    max_model_len: 1k\n    kv_memory: 1GiB\n"
     "    max: {capacity.x: 1}\n",
     "not a numeric key of the serve report"),
    ("  - model: gpt2\n    command: serve\n    max_model_len: 1k\n    kv_memory: 1GiB\n"
     "    min: {capacity.max_concurrency: 5%}\n", "% limit is for a share"),
])
def test_bad_budget_entries_are_one_line_exit_2(cli, tmp_path, entry, needle):
    path = tmp_path / "budget.yaml"
    path.write_text("checks:\n" + entry)
    r = cli("check", "--budget", str(path))
    assert r.code == 2 and r.err.count("\n") == 1 and needle in r.err, r.err
    assert "checks.0" in r.err and "internal error" not in r.err


# ------------------------------------------------------------------------------ Python


def test_python_api_gives_the_cli_report(cli, tmp_path):
    report = flopcalc.check("llama-3.1-8b", command="serve", max_model_len="8k",
                            kv_memory="40GiB", min={"capacity.max_concurrency": 40},
                            max={"capacity.tokens": "327,680"})
    assert report.passed
    args = ["llama-3.1-8b", "--command", "serve", "--max-model-len", "8k", "--kv-memory",
            "40GiB", "--max", "capacity.tokens=327,680", "--min", "capacity.max_concurrency=40"]
    assert report.to_dict() == cli("check", *args, "-f", "json").json()
    failed = flopcalc.check(["gpt3", "gpt2"], command="compare",
                            max={"models.gpt3.params_total": "170B"})
    assert not failed.passed and failed.rows[0].value == 174_604_259_328
    path = tmp_path / "budget.yaml"
    path.write_text(BUDGET)
    assert flopcalc.check(budget=path).to_dict() == json.loads(
        cli("check", "--budget", str(path), "-f", "json").out)
    with pytest.raises(flopcalc.FlopcalcError, match="did you mean 'serve'"):
        flopcalc.check("gpt2", command="serv", max={"a": 1})
    with pytest.raises(flopcalc.FlopcalcError, match="unknown option 'tp'"):
        flopcalc.check("gpt2", tp=2, max={"params.total": 1})
    with pytest.raises(flopcalc.FlopcalcError, match="not both"):
        flopcalc.check("gpt2", budget=path)
