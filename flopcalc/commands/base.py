"""What a command is: its options (`Option`), what it takes as MODEL, how it builds its report and
how that report is shown (`Command`). Pure declarations: the command line (`flopcalc.cli`), the
Python API (`flopcalc.api`), `check` and budget files, and the docs are generated from them.

The three records are named tuples, not dataclasses: every run builds them at start-up, and a
named tuple's class costs a fifth of a frozen dataclass's to create (one generated method, not
six); they are immutable and compared field by field all the same.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, NamedTuple, Optional

from ..errors import FlopcalcError
from ..numbers import parse_amount, parse_int, parse_share

TYPES = ("length", "count", "bytes", "gen", "share", "amount", "choice", "number", "flag",
         "text", "texts", "count_or")


class Option(NamedTuple):
    """One option: its Python name (`tgt_seq` is `--tgt-seq`), the type of value it takes, its
    default and help. Types: `length` (k = 1024), `count` (K = 1,000), `bytes`, `gen` (a
    length, or 0), `share` (0.4 or 40%), `amount` (a positive number, not necessarily whole),
    `choice` (one of `choices`), `number` (an integer choice), `flag`, `text`, `texts`
    (repeatable), `count_or` (a count or one of `choices`).

    `aliases` are other names of the same option (an engine's own flag, an older name), on the
    command line and in Python. A command may give an option another default or make it
    required (`Option.but`), never another meaning: `why` says why the default differs."""

    name: str
    type: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    metavar: str = ""
    required: bool = False
    aliases: tuple[str, ...] = ()
    why: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def flags(self) -> tuple[str, ...]:
        """The option's flag, then its aliases' flags."""
        return (self.flag, *("--" + a.replace("_", "-") for a in self.aliases))

    def but(self, *, default: Any = None, required: bool = False, why: str) -> "Option":
        """This option with another default (or required) in one command, and the reason."""
        return self._replace(default=default, required=required, why=why)

    def parse(self, value: Any) -> Any:
        """The value as the command uses it; FlopcalcError names the option and the problem."""
        if value is None:
            if self.required:
                raise FlopcalcError(f"Missing option '{self.flag}'")
            return self.default
        try:
            return self._parse(value)
        except FlopcalcError as exc:
            message = str(exc).removeprefix(f"{self.flag}: ")
            raise FlopcalcError(f"Invalid value for '{self.flag}': {message}") from None

    def _parse(self, value: Any) -> Any:
        kind = self.type
        if kind in ("length", "count", "bytes", "gen"):
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FlopcalcError(f"{value!r} is not a number")
            value = repr(value) if isinstance(value, float) else value  # YAML's 100.5
            if kind == "gen":
                return 0 if str(value).strip() == "0" else parse_int(value, "length", self.flag)
            return parse_int(value, kind, self.flag)  # type: ignore[arg-type]
        if kind in ("share", "amount"):
            if isinstance(value, Fraction):
                return value
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FlopcalcError(f"{value!r} is not a number")
            return (parse_share if kind == "share" else parse_amount)(str(value), self.flag)
        if kind in ("choice", "number"):
            if type(value) is bool and self.choices == ("on", "off"):
                value = "on" if value else "off"  # Python's and YAML's true/false
            text = str(value) if kind == "number" and type(value) is int else value
            if not isinstance(text, str) or text.lower() not in self.choices:
                raise FlopcalcError(f"{value!r} is not one of "
                                    + ", ".join(f"'{c}'" for c in self.choices))
            return int(text) if kind == "number" else text.lower()
        if kind == "count_or":  # a count, or one of `choices` (--concurrency N or max)
            if isinstance(value, str) and value.strip().lower() in self.choices:
                return value.strip().lower()
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise FlopcalcError(f"{value!r} is not a number or "
                                    + " or ".join(f"'{c}'" for c in self.choices))
            try:
                return parse_int(value, "count", self.flag)
            except FlopcalcError:
                raise FlopcalcError(f"{str(value).strip()!r} is not a positive whole number or "
                                    + " or ".join(f"'{c}'" for c in self.choices)) from None
        if kind == "flag":
            if type(value) is not bool:
                raise FlopcalcError(f"{value!r} is not true or false")
            return value
        if kind == "text":
            if not isinstance(value, str):
                raise FlopcalcError(f"{value!r} is not text")
            return value
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise FlopcalcError(f"{value!r} is not a list of texts")
        return list(value)


class Render(NamedTuple):
    """How a command's report is shown: the module of `flopcalc.render` (or, for a command
    defined outside flopcalc, a dotted module path) and its functions (CSV, tables, brief lines,
    the --plot picture of `flopcalc.render.plot`), imported only when a run shows one."""

    module: str
    csv: str
    tables: Optional[str] = None
    brief: Optional[str] = None
    plot: Optional[str] = None


class Command(NamedTuple):
    """A command: its options, what it takes as MODEL (`one`, `many` for compare, `none`),
    `run(model, **values)`, which builds its report from parsed values, the report class
    (`report`: module of `flopcalc.reports` and class, for `flopcalc schema`) and how it is
    shown (`render`). `checkable`: `flopcalc check --command NAME` gates its figures. A command
    whose command line is not made from its options (`show`, `schema`, `check`) names its own
    Typer function in `cli` (module of `flopcalc.cli` and function)."""

    name: str
    help: str
    options: tuple[Option, ...] = ()
    run: Optional[Callable[..., Any]] = None
    models: str = "one"
    presentation: tuple[str, ...] = ("format",)  # CLI-only: format, brief, plot
    plotted: str = ""  # what --plot draws
    internal: tuple[str, ...] = ()  # keywords of `run` that are not options (curve)
    report: Optional[tuple[str, str]] = None
    render: Optional[Render] = None
    checkable: bool = True
    cli: Optional[tuple[str, str]] = None

    def option(self, name: str) -> Option:
        return next(o for o in self.options if o.name == name)

    def values(self, given: dict[str, Any]) -> dict[str, Any]:
        """Every option's parsed value: given ones parsed (by their name or an alias), the
        others their defaults; an unknown name is an error naming the valid ones."""
        names = {a: o.name for o in self.options for a in (o.name, *o.aliases)}
        unknown = sorted(set(given) - set(names))
        if unknown:
            from ..errors import suggest

            known = {o.name for o in self.options}
            hint = suggest(unknown[0], names) or f" valid: {', '.join(sorted(known))}"
            raise FlopcalcError(f"{self.name}: unknown option '{unknown[0]}';{hint}")
        canonical: dict[str, Any] = {}
        given_as: dict[str, str] = {}  # the key each option was given under
        for key, value in given.items():
            name = names[key]
            if value is None:
                continue
            if name in canonical:
                raise FlopcalcError(f"{self.name}: '{given_as[name]}' and '{key}' are one option; "
                                    "give one of them")
            canonical[name], given_as[name] = value, key
        return {o.name: o.parse(canonical.get(o.name)) for o in self.options}

    def __call__(self, *model: Any, **given: Any) -> Any:
        """The report for MODEL (or MODELs) and these options."""
        if self.run is None:
            raise FlopcalcError(f"{self.name} has no report to build from Python")
        extra = {k: given.pop(k) for k in self.internal if k in given}
        values = {**self.values(given), **extra}
        want = 0 if self.models == "none" else 1
        if len(model) != want:
            what = "no MODEL" if not want else "MODEL (a list of them for compare)"
            raise FlopcalcError(f"{self.name} takes {what} before its options")
        from ..models.registry import collected_notes

        with collected_notes() as notes:
            report = self.run(*model, **values)
        if notes and isinstance(getattr(report, "warnings", None), list):
            report.warnings[:0] = list(dict.fromkeys(notes))  # each once
        return report
