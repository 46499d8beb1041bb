"""The project's own errors.

Loaders, parsers and validators raise these; only the CLI turns them into a message on stderr
and an exit code. Anything else escaping is a bug, and the CLI says so.
"""

from __future__ import annotations

from typing import Iterable


class FlopcalcError(Exception):
    """Bad input: the message names the problem and the fix. Exit code 2."""

    exit_code = 2


class BudgetExceeded(FlopcalcError):
    """A `check` limit was exceeded. Exit code 1 (the report itself has already been printed)."""

    exit_code = 1


def suggest(name: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """' did you mean 'a' or 'b'?' for names close to `name` (difflib's ratio >= `cutoff`),
    else ''. The cutoff keeps unrelated names out: 'experts_per_token' is not offered
    'training_tokens'."""
    import difflib

    # difflib's ratio depends on the order of its two strings (its matching blocks are found
    # from the second); a name is offered only when it is close read either way ('experts_per_
    # token' → 'extra_token_rows' is 0.61 one way, 0.55 the other)
    close = [c for c in difflib.get_close_matches(name, list(choices), n=3, cutoff=cutoff)
             if difflib.SequenceMatcher(None, name, c).ratio() >= cutoff]
    if not close:
        return ""
    return " did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
