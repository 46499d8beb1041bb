"""Counting: pure integer arithmetic over a resolved model, no I/O.

`parts` (named counts and the workload), `masks` (pairs and keys per kind of attention mask),
`attention` and `mlp` (one sublayer each, MoE and MLA included), `layers` (one layer and its
norms), `elementwise` (opt-in element-wise costs), `model` (the whole model, group by group),
`crossover`, `training`, `serving` (prefill and decode), `traffic` (KV cache and bytes moved),
`roofline` (time bounds), `published` (the papers' formulas), `attention_op` (one attention
operation counted scalar by scalar) and `memory` (training memory).
"""
