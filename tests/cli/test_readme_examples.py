"""The README's and the docs' examples run: every `$ flopcalc ...` line of README.md and
docs/**/*.md exits as stated (0 unless the line ends in `# exit N`), so no page can drift from
the CLI."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.behaviour

README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = [pytest.param(line, id=f"{page.relative_to(ROOT)}: {line}")
            for page in PAGES
            for line in re.findall(r"^\$ flopcalc (.+)$", page.read_text(), flags=re.M)]
# the sweep's table of supported types lives on the page about Hugging Face import
SWEEP_PAGE = ROOT / "docs" / "huggingface.md"


def test_readme_has_examples():
    assert len(re.findall(r"^\$ flopcalc (.+)$", README, flags=re.M)) >= 5
    assert len(EXAMPLES) >= 100  # the README's and every page's


@pytest.mark.parametrize("line", EXAMPLES)
def test_readme_example_runs(cli, line, monkeypatch):
    monkeypatch.chdir(ROOT)
    command, _, comment = line.partition("#")
    expected = int(comment.split("exit")[1]) if "exit" in comment else 0
    result = cli(*shlex.split(command))
    assert result.code == expected, result.err
    assert "Traceback" not in result.err


def test_readme_setup_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    for command in re.findall(r"^```sh\n(.+)\n```", README, flags=re.M)[:2]:
        assert command in ci


# Types flopcalc reads that transformers 5.24 has no class for, so the sweep cannot build them:
# Kimi K2's checkpoints (remote code: DeepSeek-V3's classes under model_type kimi_k2).
REMOTE_CODE_TYPES = {"kimi_k2"}
# Types transformers 5.25 added: checked against 5.25 in
# tests/pytorch/test_transformers_5_25_types.py, test_transformers_5_25_more.py and
# test_transformers_5_25_pi05.py, not in the 5.24 sweep.
TRANSFORMERS_5_25_TYPES = {"param2moe", "minicpm5_moe", "llava_onevision1_5", "ovis2_5", "ergo",
                           "kolibri1_1", "pi05"}


def test_readme_sweep_table_is_every_supported_type_and_all_equal():
    """The docs' table of supported types (docs/huggingface.md) is the sweep's output
    (tools/sweep.py --write-docs): one row per sweep case, every supported type but the
    remote-code ones, and no figure differing."""
    from flopcalc.models import hf
    from tests import sweep

    readme = SWEEP_PAGE.read_text()
    body = readme.split("<!-- sweep table: start -->")[1].split("<!-- sweep table: end -->")[0]
    rows = [line for line in body.strip().splitlines()[2:] if line.startswith("| `")]
    types = [line.split("`")[1] for line in rows]
    assert types == [c.model_type for c in sweep.cases(seeded=False)]
    assert set(types) == set(hf.supported()) - REMOTE_CODE_TYPES - TRANSFORMERS_5_25_TYPES
    assert not any("DIFFERS" in line for line in rows)
