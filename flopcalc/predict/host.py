"""The host's time to issue a model's operators outside a CUDA graph: per operator and per
layer, shared by serving (engine_step) and training (steptime's launch floor). Constants only:
a training step imports it without the serving engines."""

from __future__ import annotations

# Host time to issue one operator outside a CUDA graph: Python, the PyTorch dispatcher, the
# kernel's launch, ~5-25 µs (J. Lin, "From PyTorch op to kernel launch" (2025), the
# dispatch chain's costs per layer); 30 µs at the high end for the engines' Python glue
# around a custom operator (attention metadata, quantisation scales).
EAGER_OP_S = (5e-6, 15e-6, 30e-6)
# Operators one layer's forward issues, per slot kind, counted from the engines' model code
# (vLLM's model_executor/models/llama.py and deepseek_v2.py; SGLang's and TensorRT-LLM's
# modules follow the same steps): attention: input norm, QKV projection, activation
# quantisation before each low-precision GEMM, rotary embedding, cache write, attention,
# output projection, all-reduce with the residual add; latent attention (MLA) adds the
# down- and up-projections of queries and keys/values, their norms and the rope split;
# an MLP: norm, gate/up, activation, down, all-reduce; a mixture of experts: norm, router
# GEMM, top-k and its weights, the tokens' permutation, two grouped GEMMs with their
# quantisation, the activation, the un-permutation and the shared expert's MLP. "A typical
# transformer block with ~50 elementary operations" in eager mode (Neutron Labs, "ML Hero"
# ch. 21, PyTorch eager vs compiled) brackets the dense layer's 24.
LAYER_OPS = {"latent": 35, "attention": 16, "moe": 40, "mlp": 8, "other": 16}
