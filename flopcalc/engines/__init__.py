"""Serving engines' own arithmetic, transcribed from their source and checked against it: what
each allocates at start-up and how it pages the cache. Pure arithmetic on ints and Fractions;
the engines themselves are not needed (the tests run them where they install).

Modules:

- `registry`: the engines `serve --engine` knows: each one's overheads under load, its own
  capacity arithmetic and options (a new engine is an entry here).
- `vllm`: vLLM's paged KV-cache blocks, cache groups and maximum concurrency.
- `sglang`: SGLang's token pool (`max_total_num_tokens`).
- `architectures`: the Hugging Face architectures each SGLang and vLLM release implements
  (`data/architectures.json`, generated from their registries): serve refuses the rest.
- `loading`: weights as vLLM allocates them per device (MXFP4 experts padded for its MoE
  backend).
- `lora`: the LoRA adapter slots vLLM reserves on each device.
- `profiling`: the peak of vLLM's profiling run per release (its forward, its sampler
  warm-up), which the memory for the cache is estimated without.
- `overheads`: what else each vLLM release subtracts for the cache: CUDA's device total,
  PyTorch's cuBLAS workspace, the non-torch memory its snapshot counts.
- `graphs`: what vLLM 0.33 also subtracts: the model runner's persistent buffers and the
  CUDA-graph estimate (an interval).
"""
