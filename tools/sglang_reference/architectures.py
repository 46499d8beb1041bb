"""Write flopcalc/engines/data/architectures.json: the Hugging Face architectures (config.json
`architectures[0]`) each SGLang and vLLM release flopcalc knows implements, read from that
release's own model registry, so `serve --engine sglang==X` / `vllm==X` can refuse a model the
release cannot load.

    pip download --no-deps --only-binary :all: -d W vllm==0.8.5.post1   # each release
    python tools/sglang_reference/architectures.py \\
        --sglang 0.4.9=$SGLANG_VENV/sglang-0.4.9 --sglang 0.4.9.post6=W/sglang-0.4.9.post6-...whl \\
        --sglang 0.5.5=... --sglang 0.5.5.post3=... --sglang 0.5.23=... \\
        --vllm 0.6.0=W/vllm-0.6.0.tar.gz --vllm 0.6.6.post1=W/vllm-0.6.6.post1-...whl ...

The shipped file holds SGLang 0.4.9, 0.4.9.post6, 0.5.5, 0.5.5.post3, 0.5.23 and vLLM 0.6.0,
0.6.6.post1, 0.8.0, 0.8.5.post1, 0.10.0, 0.10.1.1, 0.10.2, 0.11.0, 0.11.2, 0.33.0: the first
and last release of each line flopcalc knows (serve checks a line against its last). Each
source is an install folder (install.sh's `sglang-<version>`), a source tree, a wheel or a
source distribution; nothing in it is imported or run, only parsed:

- SGLang (`sglang/srt/models/registry.py`, `import_model_classes`): every module of
  `sglang/srt/models/` that is not a package is imported and its `EntryClass` (a class or a
  list of classes) registers each class under the class's `__name__`. Here the module-level
  `EntryClass = ...` is read from the syntax tree and each name resolved to the class it
  binds: a `class` statement in the module, a module-level `A = B` alias, or an import
  (`from m import A as B` registers `A`'s name).
- vLLM (`vllm/model_executor/models/registry.py`, 0.6: `models/__init__.py`): the keys of
  `_VLLM_MODELS` (0.6: `_MODELS`), the union of the per-task tables; a `**{...}`
  comprehension inside a table is evaluated on the tables read before it.

Python 3.9+ standard library only. Refresh on a new release: add its source, re-run.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "flopcalc", "engines", "data",
                                    "architectures.json"))


class Source:
    """The files of one release: a folder, a wheel (zip) or an sdist (tar.gz), addressed by
    their path below the `sglang/` or `vllm/` package folder."""

    def __init__(self, path: str, package: str):
        self.path, self.files = path, {}
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for n in names:
                    if n.endswith(".py"):
                        full = os.path.join(root, n)
                        self._add(os.path.relpath(full, path), lambda f=full: open(f, "rb").read())
        elif path.endswith((".whl", ".zip")):
            z = zipfile.ZipFile(path)
            for n in z.namelist():
                if n.endswith(".py"):
                    self._add(n, lambda n=n: z.read(n))
        else:
            t = tarfile.open(path)
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".py"):
                    self._add(m.name, lambda m=m: t.extractfile(m).read())
        self.package = package

    def _add(self, name: str, read) -> None:
        parts = name.replace(os.sep, "/").split("/")
        # below the package folder: "sglang-0.5.5/sglang/srt/..." -> "sglang/srt/..."
        for i, p in enumerate(parts):
            if p in ("sglang", "vllm"):
                self.files.setdefault("/".join(parts[i:]), read)
                return

    def read(self, name: str) -> str:
        return self.files[name]().decode("utf-8-sig")  # a BOM, as Python itself accepts


def _tree(src: Source, name: str) -> ast.Module:
    return ast.parse(src.read(name), filename=name)


def _module_file(src: Source, module: str) -> str | None:
    base = module.replace(".", "/")
    for cand in (base + ".py", base + "/__init__.py"):
        if cand in src.files:
            return cand
    return None


def _class_name(src: Source, module: str, name: str, depth: int = 0) -> str:
    """The `__name__` of the class that `name` binds at the top level of `module`."""
    if depth > 8:
        raise ValueError(f"{module}.{name}: alias chain too long")
    path = _module_file(src, module)
    if path is None:  # outside the release (a library's class): named as imported
        return name
    tree = _tree(src, path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return name
    for node in reversed(tree.body):  # the last binding at module level wins
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            if isinstance(node.value, ast.Name):
                return _class_name(src, module, node.value.id, depth + 1)
            if isinstance(node.value, ast.Attribute):
                return node.value.attr
            raise ValueError(f"{module}.{name} = {ast.dump(node.value)[:80]}: not a class")
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    target = node.module or ""
                    if node.level:  # relative import
                        pkg = module.split(".")[:-node.level]
                        target = ".".join(pkg + ([node.module] if node.module else []))
                    return _class_name(src, target, alias.name, depth + 1)
    for node in tree.body:  # a class defined under a top-level `if` / `try`
        for sub in ast.walk(node):
            if isinstance(sub, ast.ClassDef) and sub.name == name:
                return name
    raise ValueError(f"{module}: no class bound to {name!r}")


def sglang_architectures(src: Source) -> list[str]:
    archs: dict[str, str] = {}
    prefix = "sglang/srt/models/"
    for path in sorted(src.files):
        if not path.startswith(prefix) or "/" in path[len(prefix):]:
            continue  # pkgutil.iter_modules: this folder's modules, packages skipped
        stem = path[len(prefix):-3]
        if stem == "__init__":
            continue
        module = "sglang.srt.models." + stem
        entry = None
        for node in _tree(src, path).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and
                                                    t.id == "EntryClass" for t in node.targets):
                entry = node.value
        if entry is None:
            continue
        names = entry.elts if isinstance(entry, (ast.List, ast.Tuple)) else [entry]
        for n in names:
            if not isinstance(n, ast.Name):
                raise ValueError(f"{path}: EntryClass holds {ast.dump(n)[:80]}")
            cls = _class_name(src, module, n.id)
            if cls in archs:  # import_model_classes asserts this never happens
                raise ValueError(f"{cls} registered by {archs[cls]} and {module}")
            archs[cls] = module
    return sorted(archs)


def vllm_architectures(src: Source) -> list[str]:
    path = "vllm/model_executor/models/registry.py"
    if path not in src.files:
        path = "vllm/model_executor/models/__init__.py"  # 0.6: the tables lived here
    tables: dict[str, dict] = {}
    union = None
    for node in _tree(src, path).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not isinstance(target, ast.Name) or not isinstance(node.value, ast.Dict):
            continue
        table: dict = {}
        for k, v in zip(node.value.keys, node.value.values):
            if k is None:  # **name or **{comprehension over the tables before it}
                code = compile(ast.Expression(v), path, "eval")
                table.update(eval(code, {"__builtins__": {}, **tables}))
            else:  # "Arch": ("module", "ClassName")
                try:
                    table[ast.literal_eval(k)] = ast.literal_eval(v)
                except ValueError:
                    table[ast.literal_eval(k)] = None
        tables[target.id] = table
        if target.id in ("_VLLM_MODELS", "_MODELS"):
            union = table
    if union is None:
        raise ValueError(f"{path}: no _VLLM_MODELS / _MODELS table")
    return sorted(union)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sglang", action="append", default=[], metavar="VERSION=PATH")
    p.add_argument("--vllm", action="append", default=[], metavar="LINE=PATH")
    p.add_argument("--out", default=OUT)
    a = p.parse_args(argv)
    data = {"generated_by": "tools/sglang_reference/architectures.py: each release's model "
            "registry read from its own source (SGLang: the EntryClass of each module of "
            "sglang/srt/models/, as ModelRegistry's import_model_classes collects them; vLLM: "
            "the keys of vllm/model_executor/models/registry.py _VLLM_MODELS, 0.6: "
            "models/__init__.py _MODELS), parsed, not imported",
            "engines": {}}
    for engine, specs, read in (("sglang", a.sglang, sglang_architectures),
                                ("vllm", a.vllm, vllm_architectures)):
        releases = data["engines"].setdefault(engine, {})
        for spec in specs:
            version, _, path = spec.partition("=")
            src = Source(path, engine)
            archs = read(src)
            releases[version] = {"source": os.path.basename(os.path.normpath(path)),
                                 "architectures": archs}
            print(f"{engine} {version}: {len(archs)} architectures from {path}", file=sys.stderr)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=0, sort_keys=False)
        f.write("\n")
    os.replace(tmp, a.out)
    print(a.out)


if __name__ == "__main__":
    main()
