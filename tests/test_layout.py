"""The package's imports point one way: kinds → models → counting → reports → render → api →
cli, with no cycle, imports inside functions included (README "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "flopcalc"
# Lower ranks never import higher ones.
RANK = {"errors": 0, "numbers": 0, "version": 0, "declare": 0, "tables": 0, "kinds": 1, "models": 2,
        "counting": 3, "reports": 4, "render": 5, "commands": 6, "api": 6, "cli": 7, "__init__": 8,
        "__main__": 8}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """flopcalc modules `path` imports anywhere in it (top level, functions, TYPE_CHECKING)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("flopcalc"):
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    found.add(candidate if MODULES.get(candidate) else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("flopcalc")}
    return {m for m in found if m in MODULES and m != name}


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports(path) for name, path in MODULES.items()}


def rank(module: str) -> int:
    parts = module.split(".")
    return RANK["__init__"] if len(parts) == 1 else RANK[parts[1]]


def test_no_import_cycle():
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path + [nxt]))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_imports_point_down_the_flow():
    wrong = [f"{a} imports {b}" for a, targets in GRAPH.items() for b in targets
             if rank(b) > rank(a)]
    assert not wrong, wrong


def test_the_layout_has_the_packages_the_readme_names():
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} >= {
        "kinds", "models", "counting", "reports", "render", "cli"}


def test_the_graph_sees_deferred_imports():
    # `flopcalc/__init__.py` imports the API only on first use; the walk still sees it.
    assert "flopcalc.api" in GRAPH["flopcalc"]
    assert "flopcalc.models.hf" in GRAPH["flopcalc.models.registry"]
