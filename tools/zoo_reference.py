"""Record what transformers and PyTorch count for every case of the model-zoo sweep, so that the
fast suite holds flopcalc to PyTorch's figures without torch installed.

    python tools/zoo_reference.py [--only TYPE ...]

Writes `tests/data/zoo/TYPE.json`, one file per supported `model_type` (`tests/sweep/`), with
one entry per case of the type (a few types have a case in more than one family's module):

- `params`: for the default config and each variant, the config.json `save_pretrained` writes
  and the parameter count of the model built on the meta device;
- `flops`: for the shrunk copy of each, its config.json and, at each of the case's lengths and
  batch 1 and 2, FlopCounterMode's count of one training-mode forward (eval mode under no_grad
  for a case with `eval_mode`; eager attention, eager experts), less what the case says transformers computes beyond the model (`extra_flops`,
  e.g. Llama 4 running every expert on every token), written next to it;
- `cache`: for cases that ask, the bytes of the cache after a real `generate`.

Every figure in these files is transformers' or PyTorch's, never flopcalc's:
`tests/hf/test_recorded_model_types.py` compares flopcalc with them, and
`tests/pytorch/test_model_zoo.py` (with torch) compares flopcalc with live PyTorch, so the
recorded files cannot drift from what transformers 5.24 counts unnoticed. Needs torch and
transformers (`tests/requirements-torch.txt`); about 20 minutes on two cores for all types.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import sweep  # noqa: E402

OUT = ROOT / "tests" / "data" / "zoo"
# (batch, prompt, new tokens), as tests/pytorch/test_model_zoo.py
CACHE_RUNS = ((1, 3, 2), (2, 9, 4))


def record(case: sweep.Case) -> dict[str, Any]:
    labelled = [("default", dict(case.fix))] + [(f"variant{i}", {**case.fix, **v})
                                                for i, v in enumerate(case.variants)]
    doc: dict[str, Any] = {"params": [], "flops": [], "cache": []}
    for label, keys in labelled:
        config = sweep.config_of(case.model_type, keys, case.text_config)
        doc["params"].append({"label": label, "config": sweep.saved(config),
                              "params": sweep.hf_params(case, config)})
        shrunk = sweep.config_of(case.model_type, {**keys, **case.shrink}, case.text_config)
        points = []
        for seq in case.lengths:
            for batch in (1, 2):
                extra = case.extra_flops(shrunk, batch, seq) if case.extra_flops else 0
                points.append({"seq": seq, "batch": batch,
                               "torch": sweep.hf_flops(case, shrunk, batch, seq),
                               "beyond_the_model": extra})
        doc["flops"].append({"label": label, "config": sweep.saved(shrunk), "points": points})
    if case.cache:
        config = sweep.config_of(case.model_type, {**case.fix, **case.shrink}, case.text_config)
        doc["cache"].append({"config": sweep.saved(config), "runs": [
            {"batch": b, "prompt": p, "new": n,
             "bytes": sweep.hf_generated_cache(case, config, b, p, n)}
            for b, p, n in CACHE_RUNS]})
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="model types to record")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    by_type: dict[str, list[sweep.Case]] = {}
    for case in sweep.cases():
        by_type.setdefault(case.model_type, []).append(case)
    for model_type, cases in by_type.items():
        if args.only and model_type not in args.only:
            continue
        start = time.perf_counter()
        doc = {"model_type": model_type, "cases": [record(case) for case in cases]}
        path = OUT / f"{model_type}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        tmp.replace(path)
        print(f"{model_type}: {sum(len(c['params']) for c in doc['cases'])} configs, "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
