"""`flopcalc memory`: training state and activations, tensor by tensor, by hand and against the
published tables (ZeRO, Korthikanti et al.)."""
