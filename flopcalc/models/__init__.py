"""Everything flopcalc reads from a file, and the shapes it resolves to: the model schema
(`schema`), the resolved per-layer model (`spec`), Hugging Face import (`hf`), preset lookup and
loading (`registry`), `--set` overrides, the validation cache, and accelerators."""
