"""flopcalc against PyTorch's figures for every model type of the zoo, without torch: the
configs and counts `tools/zoo_reference.py` recorded from transformers 5.24 and FlopCounterMode
(`tests/data/zoo/`). The same comparisons as `tests/pytorch/test_model_zoo.py`, which makes them
live; here they run in the fast suite (and under mutation testing) for every kind the zoo has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import sweep

pytestmark = pytest.mark.recorded

ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"


def _entries(section: str) -> list[tuple[str, dict]]:
    out = []
    for path in sorted(ZOO.glob("*.json")):
        doc = json.loads(path.read_text())
        for i, case in enumerate(doc["cases"]):
            for j, entry in enumerate(case[section]):
                out.append((f"{doc['model_type']}-{i}-{entry.get('label', j)}", entry))
    return out


PARAMS = _entries("params")
FLOPS = _entries("flops")
CACHE = _entries("cache")


def test_every_type_of_the_sweep_is_recorded():
    # a case added to tests/sweep/ without `python tools/zoo_reference.py --only TYPE`
    recorded = {p.stem: len(json.loads(p.read_text())["cases"]) for p in ZOO.glob("*.json")}
    # the written variants and the seeded ones (drawn from transformers' configs, so counted
    # here without drawing them: tests/sweep/draws.py)
    cases: dict[str, int] = {}
    configs = 0
    for case in sweep.cases(seeded=False):
        configs += 1 + len(case.variants) + sweep.seeded_count(case, case.model_type not in cases)
        cases[case.model_type] = cases.get(case.model_type, 0) + 1
    assert recorded == cases
    assert len(PARAMS) == len(FLOPS) == configs


@pytest.mark.parametrize("entry", [e for _, e in PARAMS], ids=[i for i, _ in PARAMS])
def test_params(entry):
    assert sweep.flopcalc_report(entry["config"], seq=8).params.total == entry["params"]


@pytest.mark.parametrize("entry", [e for _, e in FLOPS], ids=[i for i, _ in FLOPS])
def test_forward_flops(entry):
    for point in entry["points"]:
        report = sweep.flopcalc_report(entry["config"], seq=point["seq"], batch=point["batch"])
        assert report.flops.forward == point["torch"] - point["beyond_the_model"], point


@pytest.mark.parametrize("entry", [e for _, e in CACHE], ids=[i for i, _ in CACHE])
def test_cache_bytes_after_generate(entry):
    # fp32 model: K/V, conv and recurrent states all 4 bytes; HF holds prompt + new − 1 tokens.
    for run in entry["runs"]:
        doc = sweep.flopcalc_report(entry["config"], seq=0, batch=run["batch"], command="infer",
                                    prompt=run["prompt"], gen=run["new"] - 1, kv_dtype="fp32",
                                    state_dtype="fp32")
        assert doc.kv_cache.bytes == run["bytes"], run
