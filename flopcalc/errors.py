"""The project's own errors.

Loaders, parsers and validators raise these; only the CLI turns them into a message on stderr
and an exit code. Anything else escaping is a bug, and the CLI says so.
"""

from __future__ import annotations


class FlopcalcError(Exception):
    """Bad input: the message names the problem and the fix. Exit code 2."""

    exit_code = 2


class BudgetExceeded(FlopcalcError):
    """A `check` limit was exceeded. Exit code 1 (the report itself has already been printed)."""

    exit_code = 1
