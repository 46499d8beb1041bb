"""One typed report per command, built from the counts; every output format renders it
(`render` has a module of the same name for each report it draws).

Modules:

- `common`: what every report shares: the schema version, the model's description, warnings.
- `schema`: the JSON Schemas of the commands' JSON output, from the report classes.
- `images`: what `--images` adds to the `model`, `infer` and `train` reports.
- `packing`: `--packed`'s sample lengths, read and checked, for `model`, `train`, `mfu`
  and `step`.
- `model`: parameters, forward FLOPs, training and the crossover of one model.
- `sweep`: the forward pass over many sequence lengths.
- `compare`: the key figures of several models side by side.
- `conventions`: training FLOPs under the published conventions.
- `attention`: one attention operation counted term by term.
- `infer`: serving a decoder-only model: prefill, decode, the KV cache, the roofline.
- `train`: training FLOPs turned into wall-clock time and cost.
- `memory`: training memory per device, and whether it fits.
- `mfu`: utilisation from a measured throughput, under each convention.
- `published_mfu`: the MFU published training runs measured.
- `step`: one training step's time on a parallel layout, as an interval.
- `plan`: the parallel layouts that fit, ranked by step time.
- `serve`: the `serve` report and its assembly from the parts below.
- `serve_capacity`: vLLM's engine for the model, the memory for the cache, blocks and
  concurrency.
- `serve_weights`: the weights' bytes as stored, and what a device of each stage holds.
- `serve_prefix`: a shared prefix held once (prefix caching).
- `serve_speculative`: speculative decoding by MTP modules or a draft model.
- `serve_latency`: TTFT and TPOT on an idle engine.
- `serve_load`: throughput and latency under load, disaggregation, the Pareto front.
- `serve_sglang`: SGLang's token pool.
- `listing`: `list` (the presets) and `show`, and `accelerators`.
- `check`: figures of a command's report held against limits.
"""
