"""Active parameters as model cards count them: without the input embedding, beside
`params.active` (which keeps its meaning), in tables, --brief, JSON and compare."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.published, pytest.mark.behaviour]

# gpt-oss (OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card", Table 1: 5.13B and 3.61B
# active), by hand from the presets' dimensions: d 2,880, 64 query heads and 8 KV heads of 64
# (q 4,096, k/v 512 wide), biases on q, k, v, o, a sink per head, two RMSNorms per layer;
# 4 routed experts per token, each a gated MLP 2,880 → 2,880 with biases, behind a router of
# E experts with a bias; final norm 2,880; untied head 2,880 × 201,088 = 579,133,440.
ATTN = (2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64
EXPERT = 3 * (2880 * 2880) + 2 * 2880 + 2880
HEAD = 2880 * 201_088


def layer(experts: int) -> int:
    return ATTN + 2 * 2880 + (2880 * experts + experts) + 4 * EXPERT


@pytest.mark.parametrize("model, layers, experts, card", [
    ("gpt-oss-120b", 36, 128, "5.133B"), ("gpt-oss-20b", 24, 32, "3.608B")])
def test_gpt_oss_as_the_card(cli, model, layers, experts, card):
    assert ATTN == 26_550_144 and EXPERT == 24_891_840 and HEAD == 579_133_440
    assert layer(128) == 126_492_032 and layer(32) == 126_215_456
    want = layers * layer(experts) + 2880 + HEAD
    doc = run(cli, "model", model)
    p = doc["params"]
    assert p["active_without_embedding"] == want
    assert p["active"] == want + HEAD  # the input embedding (untied: as big as the head)
    out = cli("model", model).out
    assert "without input embedding (as some cards)" in out and f"{want:,}" in out
    brief = cli("model", model, "--brief").out
    assert f"without the input embedding {want:,} ({card}" in brief


def test_gpt_oss_120b_is_the_card_to_three_digits(cli):
    doc = run(cli, "model", "gpt-oss-120b")
    assert round(doc["params"]["active_without_embedding"] / 1e9, 2) == 5.13


def test_tied_embedding_stays_it_is_the_head(cli):
    # GPT-2's token table is also its LM head, a matmul: only the 1,024 × 768 position table
    # is read row by row.
    p = run(cli, "model", "gpt2")["params"]
    assert p["active_without_embedding"] == 124_439_808 - 1024 * 768


def test_compare_shows_it(cli):
    doc = run(cli, "compare", "gpt-oss-20b", "gpt2")
    m = {x["model"]: x for x in doc["models"]}
    assert m["gpt-oss-20b"]["params_active_without_embedding"] == 24 * layer(32) + 2880 + HEAD
    out = cli("compare", "gpt-oss-20b", "gpt2").out
    assert "active w/o embedding" in out
