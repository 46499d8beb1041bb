"""Shared test helpers: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flopcalc.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """cli('model', 'gpt2', '--format', 'json') → Result(code, stdout, stderr)."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


# Where a test's expected value comes from (pyproject.toml's markers say what each means).
SOURCES = ("hand", "torch", "published", "recorded", "engine", "golden", "invariant", "behaviour")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that does not say where its expected value comes from fails collection, selected
    by -m or not: an expected value taken from the code under test is the mistake this guards."""
    unsourced = [item.nodeid for item in items
                 if not any(item.get_closest_marker(name) for name in SOURCES)]
    if unsourced:
        files = sorted({nodeid.split("::")[0] for nodeid in unsourced})
        raise pytest.UsageError(
            f"{len(unsourced)} test(s) in {', '.join(files)} do not say where their expected "
            f"values come from: give each file a module-level `pytestmark = pytest.mark.NAME` "
            f"(or a list, or mark the tests one by one), NAME one of {', '.join(SOURCES)} "
            f"(pyproject.toml's markers say what each means)")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    """Tests never read or write the user's config cache."""
    import os

    os.environ["FLOPCALC_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield


def run(cli, *args: Any) -> Any:
    """The JSON report of a command that must succeed: run(cli, "model", path, "--seq", 5)."""
    r = cli(*map(str, args), "-f", "json")
    assert r.code == 0, r.err
    return r.json()


def run_process(*args: Any, env: dict[str, str] | None = None,
                **extra: str) -> subprocess.CompletedProcess:
    """`python -m flopcalc ARGS` in a fresh interpreter, as a shell user runs it (start-up,
    streams, encodings, exit code): `env` replaces the environment, `extra` adds to it."""
    environment = {**(os.environ if env is None else env), **extra}
    return subprocess.run([sys.executable, "-m", "flopcalc", *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=environment)
