"""How tables read (docs/output.md): no figure of more than 15 digits in a table (the exact one
stays in JSON and CSV), one unit per FLOP column of `sweep`, `plan` laid out as a table within
80 and 100 columns, `compare` saying where each training D came from, and at 80 and 100
columns no line past the width and no number cut across lines."""

from __future__ import annotations

import re

import pytest

from flopcalc.render.text import Numbers

pytestmark = pytest.mark.behaviour

PLAN = ["plan", "llama-3.1-405b", "--accelerator", "h100", "--count", "16384", "--seq", "8k",
        "--global-batch", "2048", "--flash", "--grad-fp32"]
# Commands whose tables hold figures far past 15 digits (FLOPs at 1M tokens, training totals,
# petabytes of activations), and the ones whose layout was hard to fit.
COMMANDS = [
    ["model", "gpt3", "--seq", "1M"],
    ["sweep", "gpt3", "--seqs", "1k..1M"],
    ["sweep", "llama-3.1-405b", "--seqs", "16..1M"],
    ["compare", "gpt3", "llama-3.1-70b", "mixtral-8x7b", "--seq", "8k"],
    ["conventions", "llama-3.1-405b", "--seq", "1M"],
    ["attention", "--n", "1M", "--d-k", "128", "--d-v", "128", "--heads", "128"],
    ["train", "gpt3", "--accelerator", "h100", "--count", "1024", "--mfu", "0.4", "--price",
     "2.5"],
    ["memory", "llama-3.1-405b", "--seq", "1M", "--batch", "1000", "--accelerator", "h100"],
    ["infer", "llama-3.1-405b", "--prompt", "1M", "--gen", "64k", "--batch", "1000",
     "--accelerator", "h200", "--count", "8"],
    ["serve", "gemma-3-27b", "--accelerator", "h100", "--tp", "2", "--max-model-len", "128k",
     "--shared-prefix", "4k"],
    ["step", "llama-3.1-70b", "--accelerator", "h100", "--count", "512", "--tp", "8", "--pp",
     "4", "--vp", "5", "--global-batch", "512", "--seq", "8k", "--flash"],
    PLAN,
]
NUMBER = re.compile(r"\d[\d,]*")  # a run of digits and thousands separators
TOKEN = re.compile(r"\d+(?:[,.]\d+)*")  # a whole figure: 1,048,576 or 0.004948


def table(cli, monkeypatch, args, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    r = cli(*args)
    assert r.code == 0, r.err
    return re.sub(r"searched in [\d.]+ s", "searched in ... s", r.out)  # a timing varies


def digits(text: str) -> int:
    return max((len(m.replace(",", "")) for m in NUMBER.findall(text)), default=0)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_no_figure_past_15_digits_and_nothing_cut(cli, monkeypatch, args):
    # The widest layout (every figure in full) holds every figure a narrower one may show:
    # the rounded form of a count is printed beside the exact one there.
    wide = table(cli, monkeypatch, args, 10_000)
    whole = set(TOKEN.findall(wide))
    for columns in (None, 80, 100):
        out = table(cli, monkeypatch, args, columns)
        assert digits(out) <= 15, (columns, out)
        if columns is not None:
            assert max(map(len, out.splitlines())) <= columns, out
            cut = set(TOKEN.findall(out)) - whole  # a piece of a number cut at a line's end
            assert not cut, (columns, cut, out)


def test_sixteen_digits_round_and_say_so(cli, monkeypatch):
    out = table(cli, monkeypatch, ["model", "gpt3", "--seq", "1M"], None)
    # 6ND = 6·N·D = 6 × 173,961,535,488 × 300e9 = 313,130,763,878,400,000,000,000 (24 digits):
    # rounded in the table, exact in JSON.
    assert "3.131e23" in out and "313,130,763,878,400" not in out
    assert "rounded to 4 significant digits" in " ".join(out.split())
    assert "174,604,259,328 (174.6B)" in out  # a parameter count keeps both forms
    doc = cli("model", "gpt3", "--seq", "1M", "-f", "json").json()
    assert doc["training"]["six_nd"] == 313_130_763_878_400_000_000_000


def test_the_15_digit_boundary():
    nums = Numbers()
    # Up to 15 digits: exact, with its rounded form; 10^15 has 16: rounded only.
    assert nums.count(123_456_789_012_345) == "123,456,789,012,345 (123.5T)"
    assert nums.count(10**15) == "1.000e15" and nums.rounded == {"1.000e15"}
    assert nums.bytes(2 * 10**18) == "2 EB / 1.735 EiB"  # 2e18 / 2^60 = 1.7347
    assert nums.whole(12_345_678_901_234_567) == "1.235e16"
    assert nums.whole(1_048_576) == "1,048,576"


def sweep_columns(out: str) -> tuple[list[str], list[list[str]]]:
    """The unit line of a sweep table's header and its data rows, split on runs of spaces."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("──"))
    rows = []
    for line in lines[rule + 1:]:
        if line.startswith("s* "):  # the crossover's row
            continue
        if not line.strip() or not line[0].isdigit():
            break
        rows.append(line.split())
    return lines[rule - 1].split(), rows


def test_sweep_has_one_unit_per_column(cli, monkeypatch):
    out = table(cli, monkeypatch, ["sweep", "gpt3", "--seqs", "1k..1M"], 100)
    units, rows = sweep_columns(out)
    assert units[1:4] == ["PFLOPs", "PFLOPs", "PFLOPs"]  # weights, attention, forward
    for row in rows:
        for cell in row[1:4]:
            assert re.fullmatch(r"[\d,]+(\.\d+)?", cell), (cell, row)  # no T, no e15
    # GPT-3's attention matrix at s = 1,048,576: 4·s²·d·L = 4 × 1,048,576² × 12,288 × 96
    # = 5.188e18 FLOPs = 5,188 PFLOPs; at s = 1,024 it is 2²⁰ times less: 0.004948 PFLOPs.
    assert rows[-1][:4] == ["1,048,576", "366.1", "5,188", "5,554"]
    assert rows[0][2] == "0.004948"


def test_sweep_units_follow_each_column(cli, monkeypatch):
    # DeepSeek-V3 to 128k: weights 2·N_active·s grow to ~9.6e15 (TFLOPs keep 4 digits: 9,601),
    # attention to ~8.6e16 (PFLOPs).
    out = table(cli, monkeypatch, ["sweep", "deepseek-v3", "--seqs", "1k..128k"], 80)
    units, rows = sweep_columns(out)
    assert units[1:4] == ["TFLOPs", "PFLOPs", "PFLOPs"]
    assert "TFLOPs = 1e12 FLOPs, PFLOPs = 1e15 FLOPs" in " ".join(out.split())


@pytest.mark.parametrize("columns", [80, 100])
def test_plan_is_a_table_within_the_width(cli, monkeypatch, columns):
    out = table(cli, monkeypatch, PLAN, columns)
    lines = out.splitlines()
    assert max(map(len, lines)) <= columns
    header = next(line for line in lines if line.startswith("#"))
    assert header.split()[:3] == ["#", "step", "tokens/s"] and header.split()[-1] == "layout"
    ranks = [line.split()[0] for line in lines if re.match(r"\d+ ", line)]
    assert ranks[:5] == ["1", "2", "3", "4", "5"]  # one row per plan, not records
    if columns == 100:  # each layout on one line
        assert sum(bool(re.match(r"\d+ +\d", line)) for line in lines) == 5
    assert "Where the time goes:" in out and "- #1: matmuls" in out


def test_compare_says_where_each_d_came_from(cli, monkeypatch):
    # GPT-3's 300B tokens are published (Brown et al. 2020); Mixtral's are not, so its D is
    # 20 per parameter: 20 × 46,702,792,704 = 934,055,854,080. The table says which rule
    # gives each D.
    out = table(cli, monkeypatch, ["compare", "gpt3", "mixtral-8x7b", "--seq", "8k"], 100)
    assert "300,000,000,000 (300B)" in out and "934,055,854,080 (934.1B)" in out
    words = " ".join(out.split())
    assert "training D: each model's published training tokens (published), else 20 per " \
           "parameter, the Chinchilla rule of thumb (20 per param)" in words


def test_compact_note_when_the_first_table_has_a_caption(cli, monkeypatch):
    # Four models do not fit 80 columns in full: rounded to fit, and the caption says so even
    # though the table has a caption of its own.
    out = table(cli, monkeypatch, ["compare", "gpt3", "llama-3.1-70b", "mixtral-8x7b",
                                   "deepseek-v3", "--seq", "8k"], 80)
    assert "rounded to fit the width" in " ".join(out.split())


def test_sweep_records_keep_a_unit_with_its_column(cli, monkeypatch):
    # At 60 columns the sweep is one record per length; a field is 'forward TFLOPs 362.5', never
    # cut between the column's name and its unit.
    out = table(cli, monkeypatch, ["sweep", "gpt3", "--seqs", "1k..8k"], 60)
    assert "forward TFLOPs 362.5" in " ".join(out.split())
    for line in out.split("How this was counted")[0].splitlines():
        assert not re.match(r"\s*[kMGTPE]?FLOPs \d", line), line
        assert not line.rstrip().endswith(("weights", "attention", "forward")), line
