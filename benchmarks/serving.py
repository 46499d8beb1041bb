"""Wall time of `serve` under load: DeepSeek-V3 on 8 H200 at a concurrency (target < 1 s) and
its Pareto search (target < 5 s), in-process (the import of flopcalc apart).

    python benchmarks/serving.py

A benchmark, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import time

import flopcalc

COMMON = dict(accelerator="h200", count=8, weights_dtype="fp8-block", compute_dtype="fp8",
              prompt=1024, gen=1024, max_model_len=4096)


def timed(label: str, **kw) -> None:
    start = time.perf_counter()
    flopcalc.serve("deepseek-v3", **COMMON, **kw)
    print(f"{label:40s} {time.perf_counter() - start:6.2f} s")


if __name__ == "__main__":
    flopcalc.serve("llama-3.1-8b", accelerator="h100", prompt=8, gen=8, concurrency="1",
                   max_model_len=64)  # warm the imports
    timed("serve --tp 8 --concurrency 64", tp=8, concurrency="64")
    timed("serve --tp 8 --concurrency max", tp=8, concurrency="max")
    timed("serve --pareto", pareto=True)
