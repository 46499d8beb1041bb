"""`python -m tests.golden [NAME ...]`: rewrite the golden files (all, or the presets and model
types named), for a change meant to move figures (see this package's docstring)."""

from tests.golden import main

main()
