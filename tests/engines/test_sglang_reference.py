"""`serve --engine sglang[==X]` against SGLang's own code: the token pools that SGLang 0.4.9's
and 0.5.5's `profile_max_num_token` / `handle_max_mamba_cache` / `init_memory_pool` and their
ServerArgs' memory defaults computed, and 0.5.23's settings hooks and pool configurators
(`_handle_max_mamba_cache` for the hybrid models), run on CPU by tools/sglang_reference
(recorded in tests/data/serve/sglang_reference.json). Every case exact: max_total_num_tokens,
the request pool, the state pool, the default mem_fraction_static and chunked_prefill_size;
where SGLang refused to start, flopcalc refuses for the same reason."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from flopcalc.api import load
from flopcalc.engines import sglang as S
from flopcalc.errors import FlopcalcError
from flopcalc.reports.serve_sglang import sglang_capacity

pytestmark = [pytest.mark.recorded, pytest.mark.engine]

DATA = Path(__file__).resolve().parents[1] / "data" / "serve"
RECORDED = json.loads((DATA / "sglang_reference.json").read_text())["releases"]
CASES = [(version, row["case"], row["sglang"]) for version, rows in RECORDED.items()
         for row in rows]
# SGLang's refusal (its message's start, as recorded) → words flopcalc's message must hold
REFUSALS = [("Not enough GPU memory for hybrid", "Not enough GPU memory for hybrid"),
            ("mamba_track_interval % view.page_size", "which the page must divide"),
            ("memory", "Not enough memory"),
            ("has no", "no pool for recurrent")]


def capacity(version: str, case: dict):
    spec = load(str(DATA / "configs" / f"{case['model']}.json")).spec
    hw = SimpleNamespace(memory_bytes=case["gpu_mem_mib"] * S.MiB, usable_memory_bytes=None)
    f = case.get("mem_fraction_static")
    return sglang_capacity(
        spec, hw, tp=case["tp"], pp=1, weights_bytes=case["weights_bytes"], kv_memory=None,
        mem_fraction_static=Fraction(str(f)) if f is not None else None,
        page_size=case.get("page_size"), chunked_prefill_size=None,
        max_running_requests=case.get("max_running_requests"),
        context_length=case.get("context_length"),
        kv_cache_dtype=case.get("kv_cache_dtype", "auto"),
        max_total_tokens=case.get("max_total_tokens"), release=S.release(version),
        model_path=case["model"],  # the path SGLang is given (0.5.23 reads llama-2 in it)
        # the stand-in device reports all of its memory free before the weights
        free_before=case["gpu_mem_mib"] * S.MiB)


def test_every_kind_of_model_is_recorded() -> None:
    models = {case["model"] for _, case, _ in CASES}
    assert {"llama-2-7b", "llama-3.1-8b", "deepseek-v3", "qwen3-next-80b-a3b",
            "nemotron-h-8b"} <= models  # MHA, GQA, MLA, hybrid GDN, hybrid Mamba-2
    assert set(RECORDED) == set(S.SGLANG_RELEASES)
    # 0.5.23's own state pool sizing, run for each hybrid family with a config here
    hybrid = {case["model"] for version, case, sglang in CASES
              if version == "0.5.23" and "max_mamba_cache_size" in sglang}
    assert hybrid == {"qwen3-next-80b-a3b", "nemotron-h-8b", "granite-4.0-h-tiny"}


@pytest.mark.parametrize("version, case, sglang", CASES,
                         ids=[f"{v}-{c['model']}-tp{c['tp']}-{i}"
                              for i, (v, c, _) in enumerate(CASES)])
def test_token_pool_equals_sglangs_own(version: str, case: dict, sglang: dict) -> None:
    if "max_total_num_tokens" not in sglang:  # SGLang refused: flopcalc refuses too
        with pytest.raises(FlopcalcError) as e:
            capacity(version, case)
        words = next(w for key, w in REFUSALS if key in sglang["error"])
        assert words in str(e.value)
        return
    got = capacity(version, case)
    assert got.mem_fraction_static == sglang["mem_fraction_static"]
    assert got.chunked_prefill_size == sglang["defaults"]["chunked_prefill_size"]
    assert got.cuda_graph_max_bs == sglang["defaults"]["cuda_graph_max_bs"]
    assert got.max_total_num_tokens == sglang["max_total_num_tokens"]
    assert got.max_running_requests == sglang["max_num_reqs"]
    assert got.max_mamba_cache_size == sglang.get("max_mamba_cache_size")
    assert got.mamba_cache_per_req == sglang.get("mamba_cache_per_req", 0)
