"""Predictions: times, throughputs and the searches over them, each an estimate with its model
stated and its constants cited (an interval where the inputs are unknown), built on the exact
counts of `counting` and the engines' arithmetic of `engines`; no I/O.

Modules:

- `collectives`: the time of one collective on a two-level network (NCCL's alpha-beta model).
- `communication`: the collectives of one training step per parallel axis, and their bytes.
- `steptime`: the time of one training step on a parallel layout.
- `plans`: whether a layout fits, its step time over the unknowns, and the search (`plan`).
- `roofline`: lower bounds on time, max(FLOPs / peak, bytes / bandwidth).
- `latency`: what one serving step costs a device and how long it takes (TTFT, TPOT).
- `engine_step`: one engine step under continuous batching with chunked prefill.
- `host`: the host's time to issue operators outside a CUDA graph (serving and training).
- `scheduler`: the scheduler that turns steps into what users see, simulated or in closed form.
- `energy`: joules per output token from the boards' power under load.
"""
