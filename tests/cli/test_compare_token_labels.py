"""compare labels each model's training tokens with where they came from."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = [pytest.mark.published, pytest.mark.behaviour]


def test_labels_in_json_and_table(cli):
    # GPT-3: 300B published (Brown et al. 2020); gpt-oss-20b publishes none: 20 per parameter
    doc = run(cli, "compare", "gpt3", "gpt-oss-20b")
    m = {x["model"]: x for x in doc["models"]}
    assert m["gpt3"]["training_tokens_source"] == "published"
    assert m["gpt-oss-20b"]["training_tokens_source"] == "20 per param"
    assert m["gpt-oss-20b"]["training_tokens"] == 20 * 20_914_757_184
    out = " ".join(cli("compare", "gpt3", "gpt-oss-20b").out.split())
    assert "300,000,000,000 (300B) (published)" in out
    assert f"{20 * 20_914_757_184:,}" in out and "(20 per param)" in out


def test_given_tokens_are_labelled(cli):
    doc = run(cli, "compare", "gpt3", "gpt2", "--tokens", "1T")
    assert {x["training_tokens_source"] for x in doc["models"]} == {"--tokens"}
    assert "(--tokens)" in cli("compare", "gpt3", "gpt2", "--tokens", "1T").out
