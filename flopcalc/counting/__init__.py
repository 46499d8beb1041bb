"""Exact counts: pure integer arithmetic over a resolved model (`models.spec`), no I/O, no time.

Modules:

- `workload`: the workload a forward pass is counted for.
- `layers`: one layer, slot by slot through the kinds' own answers.
- `model`: the whole model, group by group: parameters, forward and decode FLOPs.
- `polynomial`: forward FLOPs as polynomials in the sequence length (what `sweep` evaluates).
- `crossover`: the length where attention's s² FLOPs equal the weights'.
- `training`: training FLOPs (3 × forward, 4 × with full recomputation).
- `published`: the papers' and codebases' training-FLOP formulas.
- `utilisation`: MFU and HFU from a measured throughput, under each convention.
- `attention_op`: one attention operation counted scalar by scalar.
- `images`: the image tokens a vision tower puts into the sequence.
- `inference`: prefill and decode FLOPs of serving.
- `traffic`: the KV cache and recurrent states, and the bytes a step moves.
- `quant`: bytes of weights in a dtype or a scaled format.
- `storage`: bytes of every stored tensor under a checkpoint's storage plan.
- `memory`: training memory per device (ZeRO state, activations tensor by tensor).
- `memory_techniques`: what context parallelism, LoRA/QLoRA, fp8, offload and ZeRO-3's buffer
  change in it.
- `memory_layouts`: the same memory for many layouts at once (what `plan` searches).
- `recompute`: Megatron-Core's recomputation by module: what each frees and runs again.
"""
