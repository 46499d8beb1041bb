"""flopcalc: exact parameter and FLOP counts for transformer models.

The command line is `flopcalc` (`flopcalc.cli`); the same reports from Python:

    import flopcalc
    r = flopcalc.model("llama-3.1-8b", seq=4096, attention="causal")
    r.flops.forward, r.to_dict()

A function per command that builds a report (`model`, `infer`, `serve`, `step`, ...: the
registry in `flopcalc.commands`), `check` (a budget gate on any of them) and `load` are in
`flopcalc.api` (imported on first use, so `import flopcalc` stays cheap); every bad input raises
`FlopcalcError`.
"""

from typing import Any

from .errors import FlopcalcError
from .version import __version__



def __getattr__(name: str) -> Any:
    """The API's functions (`flopcalc.model`, ...), and `__all__`, on first use."""
    from .commands import NAMES

    if name == "__all__":
        from . import api

        return ["__version__", "FlopcalcError", *api.__all__]
    if name in NAMES or name in ("load", "check"):
        from . import api

        if hasattr(api, name):
            return getattr(api, name)
    raise AttributeError(f"module 'flopcalc' has no attribute {name!r}")
