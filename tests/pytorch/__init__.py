"""Cross-checks that run PyTorch and transformers (`-m torch`; skipped without them). The folder
is not named `torch` so that it can never shadow the torch package on sys.path."""
