"""`render/` mirrors `reports/`: a report that is drawn has the render module of its own name,
which imports that report's types (docs/layout.md). The modules that are not
mirrored are listed here by name, so a new one is a decision, not a drift."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.behaviour

PACKAGE = Path(__file__).resolve().parents[2] / "flopcalc"

# Formatting every renderer shares: no report of their own.
SHARED = {"output", "text", "data", "escape", "plot"}
# Reports' building blocks that other reports' renderers draw (or that are not drawn at all).
UNDRAWN = {"common", "schema", "images", "packing", "published_mfu"}


def _stems(package: str) -> set[str]:
    return {p.stem for p in (PACKAGE / package).glob("*.py") if p.stem != "__init__"}


def _reports_imported(path: Path) -> set[str]:
    """The `reports` modules a render module imports (TYPE_CHECKING blocks included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module and \
                node.module.startswith("reports."):
            found.add(node.module.split(".")[1])
    return found


def test_render_and_reports_are_one_to_one():
    reports, render = _stems("reports"), _stems("render")
    assert SHARED <= render and UNDRAWN <= reports, "a listed module is gone: update the lists"
    assert sorted(reports - UNDRAWN) == sorted(render - SHARED), \
        sorted((reports - UNDRAWN) ^ (render - SHARED))


def test_each_render_module_draws_its_own_report():
    for name in sorted(_stems("render") - SHARED):
        imported = _reports_imported(PACKAGE / "render" / f"{name}.py")
        assert name in imported, f"render/{name}.py draws nothing of reports/{name}.py"
