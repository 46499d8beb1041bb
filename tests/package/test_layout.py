"""The package's imports point one way: kinds → models → counting → reports → render → api →
cli, with no cycle, imports inside functions included (docs/layout.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.behaviour

PACKAGE = Path(__file__).resolve().parents[2] / "flopcalc"
# Lower ranks never import higher ones.
RANK = {"errors": 0, "cachedir": 0, "writing": 0, "numbers": 0, "version": 0, "declare": 0,
        "tables": 0, "records": 0,
        "kinds": 1, "models": 2, "counting": 3, "engines": 3.2, "predict": 3.5, "reports": 4, "render": 5,
        "commands": 6,
        "api": 6, "cli": 7, "__init__": 8, "__main__": 8}


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
        "kinds", "models", "counting", "engines", "predict", "reports", "render", "cli"}


def test_the_graph_sees_deferred_imports():
    # `flopcalc/__init__.py` imports the API only on first use; the walk still sees it.
    assert "flopcalc.api" in GRAPH["flopcalc"]
    assert "flopcalc.models.hf" in GRAPH["flopcalc.models.registry"]


# ------------------------------------------------- no tensor name parsed in counting/

# What a part is (a matmul weight, a module's tensor, a GEMM's shape, the head, a sublayer's
# input) counting reads from `kinds.base.Part`'s fields, never from its name; names are for
# reports, and formatting them into new names (`f"layers.{p.name}"`) is fine. `.name` of
# things that are not parts is allowed where listed, by the exact source of the decision.
NOT_PARTS = {
    "vllm.py": {"x.name in layers"},  # a vLLM layer spec's unique name: the stage holds it
    "registry.py": {"engine.name in ENGINES", "ENGINES[engine.name]"},  # an engine's own name
    "plans.py": {'hw.name != "custom"'},  # the accelerator preset the user named
}
LOOKUPS = {"get", "pop", "setdefault", "index", "count"}


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "name"


def _reads_name(node: ast.AST) -> bool:
    return any(_is_name(n) for n in ast.walk(node))


def name_decisions(source: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """Where `source` decides by a `.name`: compares it (==, in, ...), calls a method on it
    (.endswith, .rsplit, ...), slices it, tests it, or looks something up by it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        hit = False
        if isinstance(node, ast.Compare):
            hit = any(_reads_name(e) for e in [node.left, *node.comparators])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            hit = _is_name(node.func.value) or (
                node.func.attr in LOOKUPS and bool(node.args) and _reads_name(node.args[0]))
        elif isinstance(node, ast.Subscript):
            hit = _is_name(node.value) or _reads_name(node.slice)
        elif isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tests = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            hit = any(_is_name(t) or (isinstance(t, ast.UnaryOp) and _is_name(t.operand))
                      for t in tests)
        if hit:
            text = ast.get_source_segment(source, node) or ""
            if text not in allowed:
                found.append(f"line {node.lineno}: {text}")
    return found


def test_counting_reads_no_part_name():
    wrong = [f"{path.name} {hit}" for package in ("counting", "engines", "predict")
             for path in sorted((PACKAGE / package).glob("*.py"))
             for hit in name_decisions(path.read_text(), frozenset(NOT_PARTS.get(path.name, ())))]
    assert not wrong, "decided by a part's name (declare a Part field instead):\n" + \
        "\n".join(wrong)


def test_the_name_check_sees_what_it_forbids():
    for bad in ('ok = p.name.endswith("weight")',
                'key = p.name.rsplit(".", 1)[0]',
                'w = params.get(f"{p.name}.weight")',
                'head = [p for p in parts if p.name in ("lm_head", "pooler")]',
                'keep = [p for p in parts if p.name not in idle]',
                'if p.name == "embed.tokens":\n    pass',
                'first = p.name[:6]'):
        assert name_decisions(bad), bad
    for fine in ('parts.append(Part(f"layers.{p.name}", 1, "bytes"))',
                 'q = replace(p, name=f"{stack}.{p.name}")',
                 'rows = [(p.name, p.value) for p in parts]'):
        assert not name_decisions(fine), fine


def test_part_checks_only_what_updated_keeps():
    """kinds.base._updated copies a Part's fields without running __init__: right while
    Part.__post_init__ checks only the role and the stage, which a copy keeps (and a copy that
    changes them is checked)."""
    import inspect
    from dataclasses import fields

    import pytest

    from flopcalc.kinds.base import COLUMN, Part, _updated

    body = inspect.getsource(Part.__post_init__)
    assert {f.name for f in fields(Part) if f"self.{f.name}" in body} == {"name", "role", "stage"}
    p = Part("a", 1, "weights", (2, 3), matmul=True)
    assert _updated(p, value=5) == Part("a", 5, "weights", (2, 3), matmul=True)
    assert _updated(p, role=COLUMN) == Part("a", 1, "weights", (2, 3), COLUMN, matmul=True)
    for bad in ({"role": "columns"}, {"stage": None}):
        with pytest.raises(ValueError, match="not one of"):
            _updated(p, **bad)
        with pytest.raises(ValueError, match="not one of"):
            Part("a", 1, "weights", **bad)
    assert set(Part.__slots__) == {f.name for f in fields(Part)}


def test_cli_choice_lists_are_the_counting_tables():
    """commands/options.py restates two choice lists so the CLI starts without the counting code; they
    must be the tables the counting code defines (`Convention`, `SCANS`)."""
    import typing

    from flopcalc.commands import options as commands
    from flopcalc.kinds import base

    assert commands.CONVENTIONS == base.CONVENTIONS == typing.get_args(base.Convention)
    assert commands.SCANS == base.SCANS


# ------------------------------------------------- package docstrings name what exists

def _listed(package: Path) -> list[str]:
    """The modules a package's docstring lists under "Modules:" (`- `name`: what it holds`)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    assert "Modules:" in doc, f"{package.name}'s docstring lists no Modules:"
    section = doc.split("Modules:", 1)[1]
    return [line.split("`")[1] for line in section.splitlines() if line.startswith("- `")]


DOCUMENTED = ("counting", "engines", "predict", "reports", "render")


def test_package_docstrings_list_exactly_their_modules():
    for name in DOCUMENTED:
        package = PACKAGE / name
        listed = _listed(package)
        present = sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
        present += sorted(p.name for p in package.iterdir()
                          if p.is_dir() and (p / "__init__.py").exists())
        assert sorted(listed) == sorted(present), (name, sorted(set(listed) ^ set(present)))
        assert len(listed) == len(set(listed)), name


def test_the_docstring_check_sees_a_stale_name(tmp_path):
    (tmp_path / "__init__.py").write_text('"""P.\n\nModules:\n\n- `gone`: was here.\n"""\n')
    assert _listed(tmp_path) == ["gone"]


# ------------------------------------------------- files are read in models/ alone

READS = (" open(", "(open(", ".read_text(", ".read_bytes()", "read_mapping(", "yaml.safe_load(")
# Below models/, no module reads a file: the counts, the engines' arithmetic and the
# predictions take what models/ resolved. The one exception is flopcalc's own cache of the kinds
# listing (kinds/registry.py: names only, each checked against the module it names).
NO_FILES = ("counting", "engines", "predict", "reports")
READS_ALLOWED = {"kinds/registry.py"}


def file_reads(source: str) -> list[str]:
    return [f"line {i}: {line.strip()}" for i, line in enumerate(source.splitlines(), 1)
            if not line.lstrip().startswith("#") and any(r in line for r in READS)]


def test_no_module_below_models_reads_a_file():
    wrong = [f"{path.relative_to(PACKAGE)} {hit}"
             for package in (*NO_FILES, "kinds")
             for path in sorted((PACKAGE / package).glob("*.py"))
             if str(path.relative_to(PACKAGE)) not in READS_ALLOWED
             for hit in file_reads(path.read_text())]
    assert not wrong, "\n".join(wrong)
    assert file_reads("x = Path(p).read_text()\nwith open(p) as f:") == [
        "line 1: x = Path(p).read_text()", "line 2: with open(p) as f:"]


# ------------------------------------------------- "kind" names a kind of layer part only

# Every attribute (a class field, `self.kind =`, a `kind` method) and parameter named `kind` in
# the package, with why it may keep the name. Anything else called `kind` is a new meaning
# (a mask's pattern, a norm's form, a cache layout, an expected type...): give it its own name.
KIND_ALLOWED = {
    # a kind of layer part, or the name of one
    "counting/polynomial.py _shape(kind)": "a Kind instance",
    "counting/storage.py Stored.kind": "the Kind whose expert reads a stored tensor follows",
    "kinds/multipliers.py scales(kind)": "a kind of sublayer's name: attention, mamba2, mlp",
    # the FLOP family of a Part: used across counting/ and predict/; to be renamed `family`
    # a number's syntax (count, length, bytes...): numbers.py and the option parsers in
    # commands/ use it; to be renamed with them
    "numbers.py _split_suffix(kind)": "a number syntax, rename pending",
    "numbers.py parse_decimal(kind)": "a number syntax, rename pending",
    "numbers.py parse_int(kind)": "a number syntax, rename pending",
    "numbers.py parse_limit(kind)": "a number syntax, rename pending",
    "reports/check.py parse_key_limit(kind)": "a budget limit's number syntax, rename pending",
    # a collective operation (allreduce, allgather, reducescatter, alltoall, p2p)
    "predict/collectives.py factor(kind)": "a collective, rename pending",
    "predict/collectives.py ring(kind)": "a collective, rename pending",
    "predict/collectives.py collective(kind)": "a collective, rename pending",
    "predict/collectives.py _collective(kind)": "a collective, rename pending",
    "predict/latency.py Collective.kind": "a collective, rename pending",
    # report fields: their names are JSON keys users read (a contract)
    "reports/infer.py KvCache.kind": "JSON kv_cache.kind (mha, gqa, mqa, latent)",
    "reports/memory.py LayerActivations.kind": "JSON: a layer's kind, described",
    "reports/model.py Row.kind": "JSON rows' kind (a part's family)",
    "reports/model.py LayerGroup.kind": "JSON: a layer's kind, described",
    "reports/serve_capacity.py CacheGroup.kind": "JSON capacity.groups[].kind (cache layout)",
}


def kind_names(source: str, where: str) -> list[str]:
    """`where` + each attribute or parameter named `kind` the source defines: a class field
    (`Class.kind`), a method (`Class.kind()`), a parameter (`function(kind)`), an assignment
    to `x.kind` (`function: .kind =`)."""
    found: list[str] = []

    def walk(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                found.extend(f"{where} {child.name}.kind" for st in child.body
                             if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                             and st.target.id == "kind")
                walk(child, scope + [child.name])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                name = ".".join(scope + [getattr(child, "name", "<lambda>")])
                if getattr(child, "name", "") == "kind":
                    found.append(f"{where} {name}()")
                a = child.args
                found.extend(f"{where} {name}(kind)" for arg in
                             (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                             if arg is not None and arg.arg == "kind")
                walk(child, scope + [getattr(child, "name", "<lambda>")])
            else:
                if isinstance(child, ast.Attribute) and child.attr == "kind" and \
                        isinstance(child.ctx, ast.Store):
                    found.append(f"{where} {'.'.join(scope) or '<module>'}: .kind =")
                walk(child, scope)

    walk(ast.parse(source), [])
    return found


def test_kind_names_a_kind_of_layer_part_only():
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in kind_names(path.read_text(), path.relative_to(PACKAGE).as_posix())]
    new = [hit for hit in found if hit not in KIND_ALLOWED]
    assert not new, ("'kind' means a kind of layer part; name these for what they hold:\n"
                     + "\n".join(new))
    assert not set(KIND_ALLOWED) - set(found), "allowed but gone: drop them from KIND_ALLOWED"


def test_the_kind_check_sees_fields_parameters_and_assignments():
    source = ("class Mask:\n    kind: str\n    def kind(self): ...\n"
              "def f(a, *, kind=None): ...\n"
              "def g(x):\n    x.kind = 1\n")
    assert kind_names(source, "m.py") == ["m.py Mask.kind", "m.py Mask.kind()",
                                          "m.py f(kind)", "m.py g: .kind ="]
