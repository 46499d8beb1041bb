"""`python -m flopcalc`: the same as the `flopcalc` command."""

import sys

from .cli import main

sys.exit(main())
