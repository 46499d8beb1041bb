"""A matmul's FLOPs carry the tensor-parallel role of the weight they multiply (the step-time
model shards each matmul by it): for every shipped preset, every weight-family FLOP part of a
forward, a recurrent forward and a decode step has the role its kind gives the parameter of
the same name."""

from __future__ import annotations


import pytest

from flopcalc.counting.workload import Workload
from flopcalc.kinds.base import WEIGHTS
from flopcalc.models.registry import load_model

from .conftest import ROOT

PRESETS = sorted(p.stem for p in (ROOT / "presets").glob("*.yaml"))


def flop_parts(kind, d, stack, slot):
    for scan in ("chunked", "recurrent"):
        w = Workload(seq=9, tgt_seq=9, batch=2, scan=scan)
        yield from kind.forward(d, w.span(stack, slot))
    if stack == "decoder" and slot != "cross_attn":
        yield from kind.decode(d, 2, 9, 11)


@pytest.mark.parametrize("name", PRESETS)
def test_flop_parts_carry_their_weights_role(name):
    spec = load_model(name).spec
    checked = 0
    for g in spec.groups():
        for slot, kind in g.layer.slots():
            roles = {p.name: p.role for p in kind.params(spec.d_model)}
            for part in flop_parts(kind, spec.d_model, g.layer.stack, slot):
                role = roles.get(f"{part.name}.weight", roles.get(part.name))
                if part.kind != WEIGHTS or not part.weight_shape or role is None:
                    continue
                assert part.role == role, (slot, part.name)
                checked += 1
    assert checked > 0
