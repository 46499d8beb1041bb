"""Commands registered on flopcalc.cli.app; built in a later commit."""
