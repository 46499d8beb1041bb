"""Hugging Face import (flopcalc/models/hf/): config.json rules, cache ids, quantisation configs,
and flopcalc against figures PyTorch and transformers recorded (no torch needed here)."""
