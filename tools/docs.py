"""Rewrite every generated part of README.md and docs/: the sample outputs, each command's option
table, the list of layer kinds and the hardware tables.

    python tools/docs.py            # rewrite every generated region in place
    python tools/docs.py --check    # exit 1 naming each region that differs (what the tests run)

A generated region is the text between `<!-- generated: KEY -->` and `<!-- end generated -->`;
KEY says what fills it:

- `sample NAME`: a real run of `flopcalc ARGS` (SAMPLES below) at COLUMNS=100, stdout only;
- `options COMMAND`: the options of `flopcalc COMMAND`, read from the Click command the CLI
  builds (so the page cannot differ from `flopcalc COMMAND --help`);
- `kinds`: one line per kind of layer part, from the kinds' own class docstrings
  (`flopcalc/kinds/*.py`);
- `accelerators`, `networks`: the preset files under `presets/accelerators/` and
  `presets/networks/`.

Text outside the markers is written by hand and left alone.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python tools/docs.py` from a checkout
    sys.path.insert(0, str(ROOT))

REGION = re.compile(r"(<!-- generated: (?P<key>[^>]+?) -->\n)(?P<body>.*?)(<!-- end generated -->)",
                    re.S)
WIDTH = "100"  # the terminal width every sample is printed at


def _first_blocks(n: int) -> Callable[[str], str]:
    """Keep the first n blank-line-separated blocks of an output (a header and a table), and say
    that the rest was cut."""
    def keep(out: str) -> str:
        blocks = [b for b in re.split(r"\n\s*\n", out.strip("\n")) if b.strip()]
        return "\n\n".join(blocks[:n]) + ("\n\n..." if len(blocks) > n else "")
    return keep


# name -> (arguments of `flopcalc`, what of stdout to show). Shipped presets only, each run fast.
SAMPLES: dict[str, tuple[list[str], Optional[Callable[[str], str]]]] = {
    "model": (["model", "llama-3.1-8b", "--seq", "8192", "--brief"], None),
    "memory": (["memory", "llama-3.1-8b", "--seq", "8k", "--count", "8", "--zero", "1",
                "--accelerator", "h100"], _first_blocks(2)),
    "step": (["step", "llama-3.1-8b", "--accelerator", "h100", "--count", "8",
              "--global-batch", "64", "--zero", "1", "--recompute", "selective",
              "--micro-batch", "1", "--dropout", "off", "--brief"], None),
    "serve": (["serve", "llama-3.1-8b", "--accelerator", "h100", "--max-model-len", "32k",
               "--prompt", "2k", "--gen", "256", "--batch", "16", "--brief"], None),
}


def run_flopcalc(args: list[str]) -> str:
    """stdout of `flopcalc ARGS` in a fresh process at a fixed width, no colour, lines without
    the padding rich leaves at their ends."""
    env = dict(os.environ, COLUMNS=WIDTH, NO_COLOR="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "flopcalc", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"flopcalc {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return "\n".join(line.rstrip() for line in done.stdout.splitlines())


def sample(name: str) -> str:
    args, keep = SAMPLES[name]
    out = run_flopcalc(args)
    if keep is not None:
        out = keep(out)
    return "```console\n$ flopcalc " + " ".join(args) + "\n" + out.strip("\n") + "\n```\n"


# ------------------------------------------------------------------------------------ options

def click_command(name: str) -> Any:
    """The Click command `flopcalc NAME` runs, as the CLI builds it for a run of that command."""
    import typer

    from flopcalc.cli import app

    group = typer.main.get_command(app.build((name,)))
    return group.commands[name]


def command_names() -> list[str]:
    """Every command of `flopcalc`, as the whole CLI registers them."""
    import typer

    from flopcalc.cli import app

    return list(typer.main.get_command(app.app).commands)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(param: Any) -> str:
    if getattr(param, "required", False):
        return "required"
    value = param.default
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or (getattr(param, "multiple", False) and not value):
        return ""
    if isinstance(value, bool):
        if not getattr(param, "is_flag", False):
            return str(value).lower()
        on = param.opts[0]
        off = param.secondary_opts[0] if param.secondary_opts else None
        return on if value else (off or "off")
    return f"`{value}`"


def _value(param: Any) -> str:
    """How a value is written: the choices, else the metavar, else nothing for a flag."""
    if getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", None):
        return ""
    if getattr(param, "is_flag", False):
        return ""
    choices = getattr(param.type, "choices", None)
    if choices:
        return "|".join(str(getattr(c, "value", c)) for c in choices)
    if param.metavar:
        return param.metavar
    return param.type.name.upper()


# Click arguments carry no help of their own: what each one is.
ARGUMENTS = {
    "model": "the model: a preset name (`flopcalc list`), a YAML file, a Hugging Face "
             "config.json or its directory, or `-` for stdin",
    "models": "the models, each as MODEL of `flopcalc model`",
    "command": "the command whose JSON Schema is printed (`model` when none)",
}


def options(name: str) -> str:
    """The option table of one command: every parameter Click parses for it, with its flags
    (the `--no-x` form too), the value it takes, its default and its help, in the order
    `--help` lists them."""
    command = click_command(name)
    rows = ["| option | value | default | meaning |", "|---|---|---|---|"]
    for param in command.params:
        if param.param_type_name == "argument":
            value = param.human_readable_name
            flags = f"`{value}`" + (" (repeatable)" if param.nargs == -1 else "")
            rows.append(f"| {flags} | | {'required' if param.required else ''} "
                        f"| {ARGUMENTS.get(param.name, 'argument')} |")
            continue
        flags = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        if getattr(param, "multiple", False):
            flags += " (repeatable)"
        value = _value(param)
        rows.append(f"| {flags} | {_cell(f'`{value}`' if value else '')} | {_default(param)} "
                    f"| {_cell(param.help or '')} |")
    help_text = _cell((command.help or "").split("\n\n")[0])
    return (f"`flopcalc {name} --help`: {help_text}\n\n" + "\n".join(rows) + "\n")


# -------------------------------------------------------------------------------------- kinds

def kinds() -> str:
    """One row per kind of layer part: its class, module and the first paragraph of its
    docstring (a dataclass's generated signature is not a description, and is left out)."""
    from flopcalc.kinds.base import Kind

    rows = ["| kind | module | what it is |", "|---|---|---|"]
    for path in sorted((ROOT / "flopcalc" / "kinds").glob("*.py")):
        module = importlib.import_module(f"flopcalc.kinds.{path.stem}")
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and issubclass(cls, Kind) and cls is not Kind
                    and cls.__module__ == module.__name__):
                continue
            doc = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0]
            if doc.startswith(f"{cls.__name__}("):  # dataclass's own signature
                doc = ""
            rows.append(f"| `{cls.__name__}` | `flopcalc/kinds/{path.name}` | {_cell(doc)} |")
    return "\n".join(rows) + "\n"


# ----------------------------------------------------------------------------------- hardware

def _si(value: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= scale:
            return f"{value / scale:,.4g} {prefix}{unit}"
    return f"{value:,} {unit}"


def _short(source: str) -> str:
    """A source's first clause, up to a `;` or `. ` outside brackets (each file holds the whole
    citation)."""
    depth = 0
    for i, char in enumerate(source):
        depth += char in "([" and 1 or (char in ")]" and -1 or 0)
        if depth == 0 and (char == ";" or source.startswith(". ", i)):
            return source[:i].strip()
    return source.strip()


def _aliases(module: Any, name: str) -> list[str]:
    return sorted(k for k, v in getattr(module, "ALIASES", {}).items() if v == name)


def accelerators() -> str:
    from flopcalc.models import accelerators as acc

    rows = ["| name | memory | usable (driver) | bandwidth | bf16 dense peak | system | source |",
            "|---|---:|---:|---:|---:|---|---|"]
    for name in acc.accelerator_names():
        spec = acc.load_accelerator(name).spec
        usable = (f"{spec.usable_memory_bytes // 2**20:,} MiB" if spec.usable_memory_bytes
                  else "-")
        bf16 = spec.peak_flops.get("bf16")
        alias = ", ".join(f"`{a}`" for a in _aliases(acc, name))
        rows.append(
            f"| `{name}`{f' ({alias})' if alias else ''} | {_si(spec.memory_bytes, 'B')} "
            f"| {usable} | {_si(spec.memory_bandwidth, 'B/s')} "
            f"| {_si(bf16, 'FLOP/s') if bf16 else '-'} | {spec.system or '-'} "
            f"| {_cell(_short(spec.source))} |")
    return "\n".join(rows) + "\n"


def networks() -> str:
    from flopcalc.models import networks as net

    rows = ["| name | domain | topology | scale-up | scale-out | shares (up / out) | source |",
            "|---|---:|---|---:|---:|---|---|"]
    for name in net.names("networks"):
        spec = net.load_network(name).spec
        alias = ", ".join(f"`{a}`" for a in _aliases(net, name))
        rows.append(
            f"| `{name}`{f' ({alias})' if alias else ''} | {spec.domain_size:,} | {spec.topology} "
            f"| {_si(spec.scale_up_bandwidth, 'B/s')} | {_si(spec.scale_out_bandwidth, 'B/s')} "
            f"| {spec.scale_up_efficiency} / {spec.scale_out_efficiency} "
            f"| {_cell(_short(spec.source))} |")
    return "\n".join(rows) + "\n"


# ------------------------------------------------------------------------------------ regions

def generate(key: str) -> str:
    kind, _, arg = key.strip().partition(" ")
    if kind == "sample":
        return sample(arg)
    if kind == "options":
        return options(arg)
    makers = {"kinds": kinds, "accelerators": accelerators, "networks": networks}
    if kind in makers and not arg:
        return makers[kind]()
    raise SystemExit(f"unknown generated region {key!r}")


def files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def regions(text: str) -> list[tuple[str, str]]:
    """(key, body) of every generated region of a text."""
    return [(m.group("key"), m.group("body")) for m in REGION.finditer(text)]


def rendered(text: str) -> str:
    """The text with every generated region filled anew."""
    return REGION.sub(lambda m: m.group(1) + generate(m.group("key")) + m.group(4), text)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a region differs from what it would be")
    args = parser.parse_args(argv)
    stale = []
    for path in files():
        text = path.read_text()
        new = rendered(text)
        if new == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(new)
    for path in stale:
        print(f"{'differs' if args.check else 'rewrote'}: {path}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
