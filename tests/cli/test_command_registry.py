"""The command registry is the one place commands and options are declared: one meaning per
option name, every command's name in one list, and a command defined outside flopcalc (the toy
below, with its report and renderer in this file) reaches the command line, the Python API,
`check` and `schema`-free JSON output with nothing else changed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

import flopcalc
from flopcalc.commands import COMMANDS, NAMES, Command, Option, Render, checkable
from flopcalc.commands.options import OPTIONS
from flopcalc.errors import FlopcalcError
from flopcalc.reports.common import Report



pytestmark = [pytest.mark.behaviour, pytest.mark.hand]

MEANING = ("type", "help", "choices", "metavar", "aliases")


def conflicts(commands) -> list[str]:
    """Every option of `commands` whose meaning differs from its one declaration, or whose
    default differs without a reason."""
    found = []
    for command in commands:
        for option in command.options:
            declared = OPTIONS.get(option.name)
            if declared is None:
                found.append(f"{command.name} --{option.name}: not declared in options.OPTIONS")
                continue
            for attr in MEANING:
                if getattr(option, attr) != getattr(declared, attr):
                    found.append(f"{command.name} {option.flag}: another {attr}")
            differs = (option.default != declared.default or option.required)
            if differs and not option.why:
                found.append(f"{command.name} {option.flag}: another default, no reason")
    return found


def test_no_option_name_has_two_meanings():
    assert not conflicts(COMMANDS[name] for name in NAMES)


def test_the_meaning_check_sees_a_second_meaning():
    wrong = Command("toy", "A toy.", (
        Option("seq", "text", "Lengths.", "1k..1M"),  # the old sweep's --seq: another type
        OPTIONS["batch"].but(default=2, why="a toy's batch"),  # fine: another default, said why
        Option("count", OPTIONS["count"].type, OPTIONS["count"].help, 1,
               metavar="N")))  # no reason
    assert conflicts([wrong]) == ["toy --seq: another type", "toy --seq: another help",
                                  "toy --seq: another metavar",
                                  "toy --seq: another default, no reason",
                                  "toy --count: another default, no reason"]


def test_no_alias_is_another_options_name():
    names = set(OPTIONS)
    for option in OPTIONS.values():
        assert not set(option.aliases) & names, option.name


def test_an_alias_is_the_same_option_everywhere(cli):
    # vLLM's --kv-cache-dtype, and --kv-dtype as flopcalc named it first: one option
    a = cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--kv-dtype", "fp8", "-f", "json")
    b = cli("serve", "llama-3.1-8b", "--accelerator", "h100", "--kv-cache-dtype", "fp8", "-f",
            "json")
    assert a.code == b.code == 0 and a.json() == b.json()
    assert flopcalc.infer("gpt2", prompt=64, kv_dtype="fp8").to_dict() == \
        flopcalc.infer("gpt2", prompt=64, kv_cache_dtype="fp8").to_dict()
    with pytest.raises(FlopcalcError, match="'kv_dtype' and 'kv_cache_dtype' are one option"):
        flopcalc.infer("gpt2", prompt=64, kv_dtype="fp8", kv_cache_dtype="bf16")


def test_command_names_live_in_the_registry_alone(cli):
    from flopcalc.cli import app

    built = app.build()
    assert [c.name for c in built.registered_commands] == list(NAMES)
    assert set(flopcalc.api.__all__) == {n for n in NAMES if COMMANDS[n].run} | {"load", "check"}
    schema = cli("schema", "nope")
    assert schema.code == 2 and all(n in schema.err for n in NAMES if COMMANDS[n].report)


def test_dropout_recompute_and_gen_mean_one_thing(cli):
    # --dropout is on/off wherever it appears (a flag on memory once); --gen defaults to 256
    # requests wherever it appears (infer required it once)
    on = cli("memory", "gpt2", "--dropout", "on", "-f", "json").json()
    off = cli("memory", "gpt2", "--dropout", "off", "-f", "json").json()
    assert on["memory"]["total"] > off["memory"]["total"]
    assert cli("memory", "gpt2", "-f", "json").json() == off
    assert flopcalc.memory("gpt2", dropout=True).to_dict() == on  # Python's true is on
    infer = flopcalc.infer("gpt2", prompt=64)
    assert infer.settings.gen == 256 == COMMANDS["serve"].option("gen").default
    for name in ("memory", "mfu", "step", "conventions", "train"):
        assert COMMANDS[name].option("recompute").choices == ("none", "selective", "full",
                                                              "op")


# ------------------------------------------------------------------------ a toy command

@dataclass
class ToyReport(Report):
    """A report is a `Report` dataclass: its fields are its JSON."""

    command: str
    model: str
    layers: int
    params: int
    warnings: list = field(default_factory=list)


def toy_csv(report: ToyReport) -> str:
    return f"model,params\n{report.model},{report.params}\n"


def toy_tables(report: ToyReport, numbers) -> list:
    return [f"{report.model}: {report.params:,} parameters in {report.layers} layers"]


def _toy(model, *, set):  # noqa: A002
    from flopcalc.commands.common import load

    loaded = load(model, set)
    return ToyReport("toy", loaded.name, loaded.spec.n_layers(),
                     flopcalc.model(model, set=set).params.total)


TOY = Command("toy", "Parameters and layers: a toy command.", (OPTIONS["set"],), _toy,
              render=Render(__name__, "toy_csv", "toy_tables"))


@pytest.fixture
def toy():
    COMMANDS.register(TOY)
    yield TOY
    COMMANDS.unregister("toy")


def test_a_toy_command_reaches_the_cli_the_api_and_check(toy, cli):
    # GPT-2 small: 124,439,808 parameters (tied head), 12 layers
    doc = cli("toy", "gpt2", "-f", "json").json()
    assert doc == {"command": "toy", "model": "gpt2", "layers": 12, "params": 124_439_808,
                   "warnings": []}
    assert cli("toy", "gpt2", "-f", "csv").out == "model,params\ngpt2,124439808\n"
    assert cli("toy", "gpt2", "--set", "n_layers=6", "-f", "json").json()["layers"] == 6
    assert "toy" in checkable()
    gate = flopcalc.check("gpt2", command="toy", max={"params": "125M"})
    assert gate.passed
    assert not flopcalc.check("gpt2", command="toy", min={"params": "125M"}).passed
    r = cli("check", "gpt2", "--command", "toy", "--max", "layers=11")
    assert r.code == 1, r.err
    assert json.loads(cli("toy", "gpt2", "-f", "json").out)["layers"] == 12


def test_a_command_name_is_registered_once():
    with pytest.raises(ValueError, match="exists"):
        COMMANDS.register(Command("model", "again"))
