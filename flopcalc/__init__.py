"""flopcalc: exact parameter and FLOP counts for transformer models.

The command line is `flopcalc` (`flopcalc.cli`); the same reports from Python:

    import flopcalc
    r = flopcalc.model("llama-3.1-8b", seq=4096, attention="causal")
    r.flops.forward, r.to_dict()

`model`, `sweep`, `compare`, `conventions`, `attention`, `infer`, `train`, `memory`, `mfu`,
`step`, `plan`, `serve`, `check` (a budget gate on any of them) and `load` are in
`flopcalc.api` (imported on first use, so `import flopcalc` stays cheap); every bad input raises
`FlopcalcError`.
"""

from typing import Any

from .errors import FlopcalcError
from .version import __version__

API = ("model", "sweep", "compare", "conventions", "attention", "infer", "train", "memory",
       "mfu", "step", "plan", "serve", "load", "check")
__all__ = ["__version__", "FlopcalcError", *API]


def __getattr__(name: str) -> Any:
    if name in API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'flopcalc' has no attribute {name!r}")
