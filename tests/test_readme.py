"""The README's examples run: every `$ flopcalc ...` line in a console block exits as stated
(0 unless the line ends in `# exit N`), so the README cannot drift from the CLI."""

from __future__ import annotations

import re
import shlex

import pytest

from .conftest import ROOT

README = (ROOT / "README.md").read_text()
EXAMPLES = re.findall(r"^\$ flopcalc (.+)$", README, flags=re.M)


def test_readme_has_examples():
    assert len(EXAMPLES) >= 5


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
