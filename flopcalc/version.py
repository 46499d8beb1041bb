"""The version of flopcalc (one place: the package, the cache fingerprint and --version read it)."""

__version__ = "0.2.0"
