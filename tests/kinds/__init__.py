"""Layer kinds (flopcalc/kinds/), one file per kind: a model small enough that every parameter,
FLOP and cached byte is worked by hand in the comments."""
