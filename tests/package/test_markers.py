"""Every test says where its expected value comes from: tests/conftest.py refuses to collect a
test without one of the source markers, and every source marker is registered in pyproject.toml
(so `--strict-markers` accepts it and `pytest --markers` explains it)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from tests.conftest import ROOT, SOURCES

pytestmark = pytest.mark.behaviour


def collect(tmp_path, source: str) -> subprocess.CompletedProcess:
    """`pytest --collect-only` on a folder holding this suite's conftest and one test file."""
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_one.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_a_test_without_a_source_fails_collection(tmp_path):
    r = collect(tmp_path, "def test_sum():\n    assert 1 + 1 == 2\n")
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "test_one.py do not say where their expected values come from" in r.stderr
    assert "pytestmark = pytest.mark.NAME" in r.stderr


@pytest.mark.parametrize("source", [
    "import pytest\n\npytestmark = pytest.mark.hand\n\n\ndef test_sum():\n"
    "    assert 1 + 1 == 2  # by hand\n",
    "import pytest\n\n\n@pytest.mark.behaviour\ndef test_sum():\n    assert 1 + 1 == 2\n",
])
def test_a_test_with_a_source_collects(tmp_path, source):
    r = collect(tmp_path, source)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 test collected" in r.stdout


def test_every_source_is_registered():
    with open(ROOT / "pyproject.toml", "rb") as f:
        markers = tomllib.load(f)["tool"]["pytest"]["ini_options"]["markers"]
    assert {line.split(":")[0] for line in markers} == set(SOURCES)
