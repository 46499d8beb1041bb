"""What a new user's first hour and an audit turned up: tables that never split a number, CSVs
that join, terminals without colour or Unicode, input typed the way people type it, hostile
files, closed pipes, and the review's bugs (docs/output.md, docs/errors.md)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, run_process

pytestmark = pytest.mark.behaviour

TABLE_COMMANDS = [
    ["model", "gpt3", "--seq", "32768"],
    ["model", "deepseek-v3", "--seq", "4k"],
    ["model", "gemma-3-27b", "--seq", "32k", "--attention", "causal"],
    ["model", "t5-base", "--seq", "512", "--tgt-seq", "128", "--elementwise"],
    ["list"],
    ["sweep", "gpt3", "--seqs", "1k..1M"],
    ["compare", "gpt3", "llama-3.1-70b", "--seq", "8k"],
    ["compare", "gpt3", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "--seq", "8k"],
    ["conventions", "llama-3.1-8b", "--seq", "8k"],
    ["attention", "--n", "8k", "--d-k", "128", "--d-v", "128", "--heads", "32"],
    ["infer", "deepseek-v3", "--prompt", "32k", "--gen", "1k", "--accelerator", "h200",
     "--count", "8"],
    ["train", "gpt3", "--accelerator", "h100", "--count", "1024", "--mfu", "0.4", "--price",
     "2.5"],
    ["memory", "llama-3.1-70b", "--count", "64", "--tp", "8", "--zero", "3", "--accelerator",
     "h100"],
    ["accelerators"],
]
SPLIT = re.compile(r"[\d,]\s*\n\s*[\d,]*\d{1,3}(,\d{3})+")


@pytest.mark.parametrize("width", ["60", "80", "120"])
@pytest.mark.parametrize("args", TABLE_COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_tables_fit_and_never_split_a_number(cli, monkeypatch, width, args):
    monkeypatch.setenv("COLUMNS", width)
    r = cli(*args)
    assert r.code == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= int(width), r.out
    assert not SPLIT.search(r.out)


def test_the_issues_compare_at_80_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("compare", "gpt3", "llama-3.1-70b", "--seq", "8k").out
    # 6ND of GPT-3 on 300B tokens has 24 digits: rounded, and said so; never cut across lines.
    assert "3.131e23" in out and "rounded to" in " ".join(out.split())
    assert "313,130,763,878,400,000,000,00\n" not in out


def test_piped_without_columns_keeps_every_number_exact(cli, monkeypatch):
    # Tables round figures of 16 digits or more (docs/output.md); CSV keeps them exact.
    monkeypatch.delenv("COLUMNS", raising=False)
    out = cli("compare", "gpt3", "llama-3.1-70b", "--seq", "8k").out
    assert "3.131e23" in out and "174,604,259,328 (174.6B)" in out
    csv_out = cli("compare", "gpt3", "llama-3.1-70b", "--seq", "8k", "-f", "csv").out
    assert "313130763878400000000000" in csv_out


@pytest.mark.parametrize("args", [
    ["model", "gpt2"], ["sweep", "gpt2", "--seqs", "1k,2k"], ["infer", "gpt2", "--prompt", "64",
                                                             "--gen", "8"],
    ["train", "gpt2", "--accelerator", "h100", "--mfu", "0.4"],
    ["memory", "gpt2"], ["compare", "gpt2", "gpt3"], ["conventions", "gpt2"],
    ["check", "gpt2", "--max", "params.total=1T"], ["list"]],
    ids=lambda a: a[0])
def test_every_csv_starts_with_the_model_and_joins(cli, args):
    r = cli(*args, "-f", "csv")
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert r.out.split(",", 1)[0] == "model"
    assert rows and all(row["model"] for row in rows)
    if "section" in rows[0]:
        assert all(row["section"] for row in rows)
    cells = [v for row in rows for v in row.values()]
    assert "True" not in cells and "False" not in cells


def test_two_model_csvs_concatenate(cli):
    a = cli("model", "gpt2", "--seq", "512", "-f", "csv").out.splitlines()
    b = cli("model", "gpt2", "--seq", "1024", "-f", "csv").out.splitlines()
    assert a[0] == b[0]
    rows = list(csv.DictReader(io.StringIO("\n".join(a + b[1:]))))
    forward = {row["seq"]: row["value"] for row in rows
               if (row["section"], row["name"]) == ("flops", "forward")}
    assert set(forward) == {"512", "1024"}


def test_ascii_terminals_get_ascii():
    r = run_process("model", "gpt2", "--seq", "64", PYTHONIOENCODING="ascii")
    assert r.returncode == 0, r.stderr
    r.stdout.encode("ascii")
    assert "s^2" in r.stdout and "internal error" not in r.stderr


def pty_output(*args: str, **env: str) -> str:
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "flopcalc", *args], stdout=follower,
                            stderr=subprocess.DEVNULL, env={**os.environ, "TERM": "xterm",
                                                             "COLUMNS": "100", **env})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_without_no_color():
    assert "\x1b[" in pty_output("model", "gpt2")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[" not in pty_output("model", "gpt2", NO_COLOR="1", **env)
    assert "\x1b[" not in run_process("model", "gpt2").stdout


def test_a_closed_pipe_is_not_an_error():
    command = f"{sys.executable} -m flopcalc model gpt3 | head -1"
    r = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize("args, lines", [
    (["model", "llama-3.1-8b", "--brief"], 10),
    (["infer", "llama-3.1-8b", "--prompt", "8k", "--gen", "1k", "--accelerator", "h100",
      "--brief"], 12),
    (["train", "llama-3.1-8b", "--accelerator", "h100", "--count", "64", "--mfu", "0.4",
      "--brief"], 10),
])
def test_brief(cli, args, lines):
    r = cli(*args)
    assert r.code == 0 and len(r.out.splitlines()) <= lines


# --------------------------------------------------------------------------- typed input

@pytest.mark.parametrize("name", ["Llama-3.1-8B", "LLAMA-3.1-8B", "GPT2"])
def test_preset_names_ignore_case(cli, name):
    assert cli("model", name, "-f", "json").json()["model"]["name"] in ("llama-3.1-8b", "gpt2")


def test_a_directory_with_a_config_json_loads(cli, tmp_path):
    source = ROOT / "tests" / "data" / "hf" / "qwen3-8b.json"
    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    (folder / "config.json").write_text(source.read_text())
    doc = cli("model", str(folder), "-f", "json").json()
    assert doc["params"]["total"] == 8_190_735_360
    assert doc["model"]["title"] == "Qwen3ForCausalLM (Hugging Face qwen3 config)"


def test_stdin_is_a_model_file():
    text = (ROOT / "presets" / "gpt2.yaml").read_text()
    r = subprocess.run([sys.executable, "-m", "flopcalc", "model", "-", "-f", "json"],
                       input=text, capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["params"]["total"] == 124_439_808
    config = (ROOT / "tests" / "data" / "hf" / "llama-3.1-8b.json").read_text()
    r = subprocess.run([sys.executable, "-m", "flopcalc", "model", "-", "-f", "json"],
                       input=config, capture_output=True, text=True)
    assert json.loads(r.stdout)["params"]["total"] == 8_030_261_248


def test_suggestions_only_for_close_names(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text((ROOT / "presets" / "gpt2.yaml").read_text() + "experts_per_token: 2\n")
    r = cli("model", str(path))
    assert r.code == 2 and "did you mean" not in r.err and "valid keys" in r.err


def test_debug_after_the_command(cli):
    from flopcalc.errors import FlopcalcError

    with pytest.raises(FlopcalcError):
        cli("model", "gtp3", "--debug")


def test_shell_completion_is_offered(cli):
    out = cli("--help").out
    assert "--install-completion" in out and "--show-completion" in out


@pytest.mark.parametrize("option, text, value", [
    ("--peak", "1P", 10**15), ("--peak", "2E", 2 * 10**18),
    ("--bandwidth", "3.35TB", 3_350_000_000_000), ("--bandwidth", "2TiB", 2 * 2**40)])
def test_count_and_byte_suffixes(cli, option, text, value):
    other = {"--peak": ["--bandwidth", "1e12"], "--bandwidth": ["--peak", "1e15"]}[option]
    doc = cli("infer", "gpt2", "--prompt", "8", "--gen", "2", option, text, *other, "-f",
              "json").json()
    key = {"--peak": "peak_flops", "--bandwidth": "bandwidth"}[option]
    assert doc["accelerator"][key] == value


def test_length_limits_read_k_as_1024(cli):
    # GPT-3's crossover is 73,728 = 72k: the limit holds exactly, with a margin of 0.
    r = cli("check", "gpt3", "--min", "crossover.seq=72k", "-f", "json")
    assert r.code == 0
    (row,) = r.json()["rows"]
    assert row["limit"] == 73_728 and row["margin"] == 0
    assert cli("check", "gpt3", "--min", "crossover.seq=73K").code == 1


def test_min_limits_and_budgets_on_other_commands(cli, tmp_path):
    budget = tmp_path / "budget.yaml"
    budget.write_text("""checks:
  - model: llama-3.1-8b
    command: infer
    prompt: 124k
    gen: 4k
    max: {kv_cache.bytes: 16GiB}
  - model: gpt3
    command: train
    tokens: 300B
    accelerator: h100
    count: 1024
    mfu: 40%
    max: {days.exact: 9.3}
    min: {days.six_nd: 8.9}
  - model: llama-3.1-70b
    command: memory
    count: 64
    tp: 8
    zero: 3
    recompute: selective
    sequence_parallel: true
    flash: true
    accelerator: h100
    min: {max_micro_batch: 1}
""")
    r = cli("check", "--budget", str(budget), "-f", "json")
    assert r.code == 0, r.out + r.err
    rows = r.json()["rows"]
    assert [(row["command"], row["bound"], row["status"]) for row in rows] == [
        ("infer", "max", "PASS"), ("train", "max", "PASS"), ("train", "min", "PASS"),
        ("memory", "min", "PASS")]
    assert rows[0]["value"] == 17_179_869_184 == rows[0]["limit"]


def test_check_help_documents_the_budget_file(cli):
    out = cli("check", "--help").out
    assert "checks:" in out and "command: infer" in out and "README" not in out


# ------------------------------------------------------------------------------- hostile

BILLION_LAUGHS = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize("name, content, needle", [
    ("laughs.yaml", BILLION_LAUGHS, "aliases expand to more than 100,000 values"),
    ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 64"),
    ("digits.json", '{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}",
     "thousands of digits"),
    ("digits.yaml", "d_model: " + "9" * 5000 + "\n", "thousands of digits"),
    ("cycle.yaml", "a: &a [*a]\n", ""),
])
def test_hostile_files_are_refused_quickly(cli, tmp_path, name, content, needle):
    assert len(BILLION_LAUGHS) < 700
    path = tmp_path / name
    path.write_text(content)
    start = time.perf_counter()
    r = cli("model", str(path))
    assert time.perf_counter() - start < 1.0
    assert r.code == 2 and r.err.count("\n") == 1 and needle in r.err, r.err
    assert "internal error" not in r.err


@pytest.mark.parametrize("args", [["model", "~0"], ["model", "~nobody-here/x.yaml"],
                                  ["infer", "gpt2", "--prompt", "1", "--gen", "1",
                                   "--accelerator", "~no-such-user-flopcalc"]])
def test_tilde_paths_are_files_not_crashes(cli, args):
    r = cli(*args)
    assert r.code == 2 and "no such" in r.err and "internal error" not in r.err


def test_a_file_named_like_a_preset_does_not_shadow_it(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").write_text("n_layers: 1\nd_model: 8\nn_heads: 1\nd_ff: 8\n"
                                   "positions: rotary\nvocab_size: 8\n")
    assert cli("model", "gpt2", "-f", "json").json()["params"]["total"] == 124_439_808
    assert cli("model", "./gpt2", "-f", "json").json()["params"]["total"] < 1000


SEED = re.compile(r"seed(?!_oss)")  # ByteDance's Seed-OSS is a model type, not a seed document


def test_nothing_a_user_reads_says_seed(cli):
    for page in (ROOT / "README.md", *(ROOT / "docs").rglob("*.md")):
        assert not SEED.search(page.read_text().lower()), page
    for args in (["attention", "--n", "8", "--d-k", "4", "--d-v", "4"],
                 ["model", str(ROOT / "examples" / "ideal-block-d4096.yaml")]):
        r = cli(*args)
        assert not SEED.search((r.out + r.err).lower())
    for path in (ROOT / "presets").rglob("*.yaml"):
        assert not SEED.search(path.read_text().lower()), path


# ------------------------------------------------------------- a new user's hour, second pass

@pytest.mark.parametrize("width", [60, 80, 100])
@pytest.mark.parametrize("args", [
    ["check", "llama-3.1-8b", "--command", "memory", "--max", "memory.total=8GiB",
     "--max", "params.total=10B"],
    ["model", "gpt2", "--brief"],
    ["infer", "gemma-3-27b", "--prompt", "128k", "--gen", "1", "--accelerator", "h100",
     "--brief"],
    ["train", "gpt2", "--accelerator", "h100", "--mfu", "0.4", "--brief"],
])
def test_plain_lines_fit_the_width_and_break_between_words(cli, monkeypatch, width, args):
    """--brief and check lines are wrapped to the width tables use, between words: no number
    is cut and no unit leaves its number. Piped without $COLUMNS, a check stays one line per
    limit for grep."""
    monkeypatch.setenv("COLUMNS", str(width))
    r = cli(*args)
    monkeypatch.delenv("COLUMNS")
    unwrapped = cli(*args)
    assert max(map(len, r.out.splitlines())) <= width
    assert r.out.split() == unwrapped.out.split()  # the same words, only the breaks differ
    for line in r.out.splitlines():
        assert not line.rstrip().endswith(("GB", "GiB")) or " " in line.strip()
        assert not re.match(r"\s*(GB|GiB|MB|FLOPs|s)\b", line), line  # a unit alone
    if args[0] == "check":
        assert len(unwrapped.out.splitlines()) == 3  # two limits and the count


def test_byte_limits_print_as_bytes(cli):
    r = cli("check", "llama-3.1-8b", "--command", "memory", "--max", "memory.total=8GiB",
            "--max", "params.total=10B")
    first, second = r.out.splitlines()[:2]
    assert "(max 8,589,934,592 (8.59 GB / 8 GiB)," in first  # 8 GiB, not "8.59B"
    assert "(max 10,000,000,000 (10B)," in second  # a count keeps the count form
    doc = cli("check", "llama-3.1-8b", "--command", "memory", "--max", "memory.total=8GiB",
              "-f", "json").json()
    assert doc["rows"][0]["unit"] == "bytes"


def test_wording(cli):
    r = cli("memory", "gpt2")
    assert "(1 device)" in r.out and "1 devices" not in r.out
    assert "1 micro-batch in flight" in " ".join(r.out.split())
    assert "micro-batch(es)" not in r.out
    r = cli("memory", "gpt2", "--pp", "2", "--dp", "1")
    assert "2 micro-batches in flight" in " ".join(r.out.split())
    r = cli("stepp")
    assert r.code == 2 and r.err.lower().count("did you mean") == 1
    r = cli("check", "--help")
    assert "lengths     (" not in r.out and "      Limits" not in r.out
    header = cli("train", "gpt2", "--accelerator", "h100", "--mfu", "0.4", "--brief").out
    assert "bf16 peak" in header.splitlines()[0] and "attention causal" in header.splitlines()[0]
    infer = cli("infer", "gpt2", "--prompt", "8", "--gen", "1", "--brief").out
    assert "over 1 step\n" in infer
