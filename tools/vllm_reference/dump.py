"""Dump vLLM 0.33.0's own planning results for the 39 cases of check.py as JSON golden data
for flopcalc (`tests/data/serve/vllm_0_33.json`, read by `tests/engines/test_vllm_planning.py`).

    tools/vllm_reference/install.sh                                     # once: the CPU venv
    tools/vllm_reference/venv/bin/python tools/vllm_reference/dump.py   # writes the JSON

Every case is computed by vLLM itself (reference.py via check.real) and must equal the
pure-integer kvformula.py (check.formula), else the dump stops with an AssertionError. Refresh
on a vLLM bump: update the pin in install.sh, the cited line numbers, and re-run.
"""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.chdir(HERE)
import check  # noqa: E402  (reference.py installs the stand-in H200 platform)

OUT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "tests", "data", "serve",
                                    "vllm_0_33.json"))

rows = []
for model, L, tp, avail, o in check.CASES:
    r = check.real(model, L, tp, avail, o)
    f = check.formula(model, L, tp, avail, o)
    assert r == f, (model, L, tp, o)
    row = {"model": model, "max_model_len": L, "tp": tp, "kv_memory": avail, "options": o}
    if "error" in r:
        row["error"] = {"needed_gib": r["error"][0], "available_gib": r["error"][1],
                        "estimated_max_len": r["error"][2]}
    else:
        row.update(block_size=r["block_size"], groups=[list(g) for g in r["groups"]],
                   bytes_per_block=r["bytes_per_block"], num_blocks=r["num_blocks"],
                   blocks_per_request=r["blocks_per_request"],
                   max_concurrency=r["concurrency"], tokens=r["tokens"], log=r["log"])
    rows.append(row)
with open(OUT, "w") as out:
    json.dump({"vllm": "0.33.0", "source": "vLLM 0.33.0's own planning code on CPU "
           "(tools/vllm_reference/dump.py: reference.py via check.py), all 39 cases equal to "
           "kvformula.py", "cases": rows}, out, indent=1)
    out.write("\n")
