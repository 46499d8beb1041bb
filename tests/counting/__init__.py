"""Exact counts (flopcalc/counting/): whole-model parameters and FLOPs, conventions, crossovers,
sweeps, element-wise work, model-file features; worked by hand or against published formulas."""
