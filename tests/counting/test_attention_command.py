"""`flopcalc attention`: the notes' exact count of one attention operation, against its closed
form and its leading order, for every size (hypothesis), and through the CLI."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flopcalc.counting import attention_op as cv
from flopcalc.reports.attention import build_attention_report

pytestmark = [pytest.mark.hand, pytest.mark.invariant, pytest.mark.behaviour]

SIZES = st.integers(min_value=1, max_value=10**9)
EXAMPLES = 2000


def closed_form_general(n: int, m: int, d_k: int, d_v: int) -> int:
    """The seed's simplification redone for m queries: 2mn(d_k+d_v) + 4mn − m(d_v+1)."""
    return 2 * m * n * (d_k + d_v) + 4 * m * n - m * (d_v + 1)


# (n, m, d_k, d_v, heads) → exact_total, worked out by hand from the notes' terms.
CASES = [
    # 1 key, 1 query, widths 1: QKᵀ 1, scale 1, mask 1, softmax 3·1 − 1 = 2, AV 1 → 6.
    ((1, 1, 1, 1, 1), 6),
    # m = n = 4, d = 2: 2·16·4 + 4·16 − 4·3 = 128 + 64 − 12 = 180.
    ((4, 4, 2, 2, 1), 180),
    # m = 3 queries over n = 4 keys, d_k 2, d_v 5: 168 + 48 − 18 = 198.
    ((4, 3, 2, 5, 1), 198),
    # A GPT-2 head at s = 1024 (d_h 64), x 12 heads: 12·(2·1024²·128 + 4·1024² − 1024·65).
    ((1024, 1024, 64, 64, 12), 12 * (268_435_456 + 4_194_304 - 66_560)),
    # Cross-attention: 120 target queries over 100 source keys, d_k = d_v = 64, 8 heads.
    ((100, 120, 64, 64, 8), 8 * (2 * 120 * 100 * 128 + 4 * 120 * 100 - 120 * 65)),
    # Llama 3.1 8B at 8k, 32 heads of 128.
    ((8192, 8192, 128, 128, 32), 1_108_067_745_792),
]


@pytest.mark.parametrize("args, expected", CASES)
def test_exact_total_equals_the_closed_forms(cli, args, expected):
    n, m, d_k, d_v, heads = args
    doc = cli("attention", "--n", n, "--m", m, "--d-k", d_k, "--d-v", d_v, "--heads", heads,
              "-f", "json").json()
    assert doc["exact_total"] == expected == heads * closed_form_general(n, m, d_k, d_v)
    assert sum(t["total"] for t in doc["terms"]) == expected
    assert doc["leading_order"] == heads * 2 * m * n * (d_k + d_v)
    if m == n:
        assert doc["closed_form"] == expected  # the notes' boxed formula, x H
    else:
        assert doc["closed_form"] is None


@settings(max_examples=EXAMPLES)
@given(n=SIZES, m=SIZES, d_k=SIZES, d_v=SIZES, heads=st.integers(1, 256))
def test_exact_minus_leading_order_is_4mn_minus_m_dv_plus_1(n, m, d_k, d_v, heads):
    rep = build_attention_report(n, m, d_k, d_v, heads)
    assert rep.exact_total - rep.leading_order == heads * (4 * m * n - m * (d_v + 1))
    assert rep.difference == rep.exact_total - rep.leading_order
    assert rep.exact_total == heads * closed_form_general(n, m, d_k, d_v)


@settings(max_examples=EXAMPLES)
@given(n=SIZES, d_k=SIZES, d_v=SIZES)
def test_square_case_is_the_notes_closed_form(n, d_k, d_v):
    exact = sum(t.per_head for t in cv.attention_terms(n, n, d_k, d_v))
    assert exact == 2 * n * n * (d_k + d_v) + 4 * n * n - n * (d_v + 1)
    assert exact == cv.attention_closed_form(n, d_k, d_v)
    rep = build_attention_report(n, None, d_k, d_v)
    assert rep.settings.m == n and rep.closed_form == rep.exact_total == exact


def test_leading_order_is_flopcalcs_attention_matrix_count(cli):
    # One layer of GPT-2 at s = 1000: the model's scores + av equal 12 heads' 2·s²·(d_h + d_h).
    comps = cli("model", "gpt2", "--seq", "1000", "-f", "json").json()["flops"]["components"]
    per_layer = (comps["decoder.attn.scores"] + comps["decoder.attn.av"]) // 12
    doc = cli("attention", "--n", "1000", "--d-k", "64", "--d-v", "64", "--heads", "12",
              "-f", "json").json()
    assert doc["leading_order"] == per_layer


def test_json_terms_and_settings(cli):
    r = cli("attention", "--n", "8k", "--d-k", "128", "--d-v", "128", "-f", "json")
    assert r.code == 0 and r.err == ""
    doc = r.json()
    assert doc["schema_version"] == 2
    assert doc["settings"] == {"n": 8192, "m": 8192, "d_k": 128, "d_v": 128, "heads": 1}
    terms = {t["name"]: t for t in doc["terms"]}
    n = 8192
    assert {k: t["per_head"] for k, t in terms.items()} == {
        "qk": n * n * 255, "scale": n * n, "mask": n * n, "softmax": n * (3 * n - 1),
        "av": n * 128 * (2 * n - 1)}
    assert doc["exact_total"] == 34_627_117_056 and doc["leading_order"] == 34_359_738_368
    assert any("max" in line and "not counted" in line for line in doc["convention"])
    assert "Notes on Transformer Blocks, Tensor Dimensions and Attention FLOPs" in doc["source"]
    assert "seed" not in r.out


def test_csv_has_header_terms_and_totals(cli):
    r = cli("attention", "--n", "100", "--m", "50", "--d-k", "64", "--d-v", "32", "--heads",
            "4", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert r.code == 0 and list(rows[0]) == ["section", "name", "formula", "per_head", "total"]
    by_name = {row["name"]: row for row in rows}
    assert [row["name"] for row in rows if row["section"] == "term"] == [
        "qk", "scale", "mask", "softmax", "av"]
    assert int(by_name["exact_total"]["total"]) == 4 * closed_form_general(100, 50, 64, 32)
    assert int(by_name["difference"]["per_head"]) == 4 * 50 * 100 - 50 * 33
    assert "closed_form" not in by_name  # m ≠ n


def test_table_states_the_convention_and_fits_80_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("attention", "--n", "8k", "--d-k", "128", "--d-v", "128", "--heads", "32")
    assert r.code == 0 and max(len(line) for line in r.out.splitlines()) <= 80
    words = " ".join(r.out.split())
    for text in ("1,108,067,745,792 (1.108T)", "m·(3·n − 1)", "Notes on Transformer Blocks",
                 "row-max subtraction for numerical stability is not counted",
                 "every scalar multiply, add, divide and exp counts 1 FLOP"):
        assert text in words, text


@pytest.mark.parametrize("args, message", [
    (["--n", "0", "--d-k", "64", "--d-v", "64"], "'--n': '0' must be a positive whole number"),
    (["--n", "10", "--d-k", "1.5", "--d-v", "64"], "'--d-k': '1.5' is not a whole number"),
    (["--n", "10", "--d-k", "64", "--d-v", "x"], "'--d-v': 'x' is not a number"),
    (["--n", "10", "--m", "-3", "--d-k", "64", "--d-v", "64"], "--m"),
    (["--n", "10", "--d-k", "64", "--d-v", "64", "--heads", "0"], "--heads"),
])
def test_bad_input_is_one_line_exit_2(cli, args, message):
    r = cli("attention", *args, "-f", "json")
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and message in r.err and "Traceback" not in r.err


def test_missing_option_is_clicks_usage_error(cli):
    r = cli("attention", "--n", "10", "--d-v", "64")
    assert r.code == 2 and r.out == "" and "Missing option '--d-k'" in r.err
