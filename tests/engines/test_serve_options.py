"""`reports.serve.serve_report` from its option records: a record left at its defaults means
what the `serve` command means when the option is not given, so the Python records and the
command line cannot drift apart."""

from __future__ import annotations

import pytest

import flopcalc
from flopcalc.models.accelerators import resolve_hardware
from flopcalc.reports.serve import ServeOptions, serve_report
from flopcalc.reports.serve_latency import Machine

pytestmark = pytest.mark.invariant


def test_default_records_are_the_commands_defaults():
    model = "llama-3.1-8b"
    hw = resolve_hardware("h100-sxm", "bf16", 1, None, None)
    by_records = serve_report(flopcalc.load(model), ServeOptions(machine=Machine(hw)))
    by_command = flopcalc.serve(model, accelerator="h100-sxm")
    assert by_records.to_dict()["settings"] == by_command.to_dict()["settings"]
    assert by_records.to_dict()["capacity"] == by_command.to_dict()["capacity"]
