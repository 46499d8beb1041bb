"""flopcalc: exact parameter and FLOP counts for transformer models.

The public API: `load_model` (preset name or path → config), `build_report` (config and settings
→ the report every output format renders), and the pure counting functions in
`flopcalc.counting`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
