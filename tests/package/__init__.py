"""The package's own structure: imports point one way (README "Layout")."""
