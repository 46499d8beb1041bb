"""π0.5's flow-matching action expert (Physical Intelligence 2025, "π0.5: a Vision-Language-Action
Model with Open-World Generalization"; transformers 5.25 `models/pi05/modeling_pi05.py`,
PI05ForConditionalGeneration), a model-level kind run after the vision-language model.

What transformers builds beside the PaliGemma backbone (`PI05Model.vlm`, counted as the model's
stack and its SigLIP tower):

- `PI05ActionExpertModel` (`dit`): L Gemma-shaped layers of width e, each attention (q, k, v,
  o of h query and g key/value heads of d_h; biases with `attention_bias`) and a gated MLP f wide
  without biases, its two norms *adaptive* (`PI05AdaptiveRMSNorm`: no gain, a Linear e → 3e with
  bias predicting scale, shift and residual gate from the timestep embedding), and a final
  adaptive norm; no token table (the checkpoints' `embed_tokens` is dropped on load);
- `embed_action_time`: `action_in_proj` A → e, `time_mlp_in` and `time_mlp_out` e → e (biased;
  the sinusoidal timestep features are a buffer);
- `action_out_proj` e → A (biased).

A forward is the training forward (`PI05ForConditionalGeneration.forward`, one flow-matching
step): the backbone runs once over the prefix (images and prompt: the model's sequence), then
the expert runs once over the C = `chunk_size` noisy action tokens. Its layer i attends from
the C actions to the prefix keys and values backbone layer i computed and its own C (the prefix
block and the action block each bidirectional, the actions seeing the prefix): P + C keys for
P prefix tokens, under either attention convention. Matmuls per sequence, as FlopCounterMode
counts the eager forward: the time MLP 2·2·e² and every adaptive norm's 2·e·3e on one
timestep embedding, the action projections 2·C·A·e in and out, and per layer
(C×e)·(e×(h+2g)·d_h) → 2·C·e·(h+2g)·d_h, scores and values 2·2·h·C·(P+C)·d_h, o 2·C·h·d_h·e,
the MLP 3·2·C·e·f. Sampling (`sample_actions`) runs the prefix once and the expert
`num_inference_steps` times: that many forwards of this kind over one prefix.

Decoding does not apply: the expert keeps no cache of its own (it appends its keys to the
prefix's and the sampler crops them) and generates no tokens, so `infer` and `serve` refuse it.
Training memory holds its weights, gradients and optimizer states with the model's; the
activations it saves for backward are not modelled (its notes say so).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from ..declare import Min
from ..errors import FlopcalcError
from ..records import dataclass
from .base import (ATTENTION, COLUMN, LAST, LAYERS, ROW, WEIGHTS, Kind, Part, Span, gemm,
                   linear, prefixed, scaled)
from .registry import Entry

NOT_MODELLED = ("π0.5's action expert generates actions, not tokens: flopcalc counts its "
                "parameters and a training forward (model, sweep, compare, train), not a decode "
                "step, which infer and serve need")


@dataclass(frozen=True)
class ActionExpertBlock:
    """`action_expert:` in a model file (transformers PI05Config's `dit_config` names, and its
    own `chunk_size` and `max_action_dim`)."""

    hidden_size: Annotated[int, Min(1)]
    num_hidden_layers: Annotated[int, Min(1)]
    num_attention_heads: Annotated[int, Min(1)]
    num_key_value_heads: Annotated[int, Min(1)]
    head_dim: Annotated[int, Min(1)]
    intermediate_size: Annotated[int, Min(1)]
    chunk_size: Annotated[int, Min(1)] = 50
    max_action_dim: Annotated[int, Min(1)] = 32
    attention_bias: bool = False


@dataclass(frozen=True)
class ActionExpert(Kind):
    """π0.5's action expert (see the module): `layers` Gemma layers of width `width` with
    adaptive norms, `heads` and `kv_heads` heads of `head_dim`, a gated MLP `d_ff` wide, over
    `chunk` action tokens of `actions` values, attending to the prefix's keys too."""

    width: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    chunk: int
    actions: int
    bias: bool = False
    slot = "action_expert"
    before_head = True  # counting.model runs it on the backbone's output sequence

    def _layer_params(self) -> list[Part]:
        e, dh, b = self.width, self.head_dim, self.bias
        return (linear("attn.q", e, self.heads * dh, b) + linear("attn.k", e, self.kv_heads * dh, b)
                + linear("attn.v", e, self.kv_heads * dh, b)
                + linear("attn.o", self.heads * dh, e, b, ROW)
                + linear("mlp.gate", e, self.d_ff, False) + linear("mlp.up", e, self.d_ff, False)
                + linear("mlp.down", self.d_ff, e, False, ROW)
                + linear("input_norm.dense", e, 3 * e, True)
                + linear("post_attention_norm.dense", e, 3 * e, True))

    def params(self, d: int, active: bool = False) -> list[Part]:
        e, a = self.width, self.actions
        parts = (scaled(self._layer_params(), self.layers, "layers")
                 + linear("norm.dense", e, 3 * e, True)
                 + linear("action_in_proj", a, e, True) + linear("time_mlp_in", e, e, True)
                 + linear("time_mlp_out", e, e, True) + linear("action_out_proj", e, a, True))
        return [Part(p.name, p.value, LAYERS, p.shape, p.role, LAST, matmul=p.matmul,
                     module=p.module) for p in parts]

    def forward(self, d: int, x: Span) -> list[Part]:
        """One denoising step per sequence over the prefix of `x.n` tokens (the module)."""
        b, c, e, dh = x.batch, self.chunk, self.width, self.head_dim
        tokens, keys = b * c, x.n + c
        h, g = self.heads, self.kv_heads
        layer = [gemm("attn.q", tokens, e, h * dh), gemm("attn.k", tokens, e, g * dh),
                 gemm("attn.v", tokens, e, g * dh),
                 # (C×d_h)·(d_h×(P+C)) per head, then (C×(P+C))·((P+C)×d_h)
                 Part("attn.scores", 2 * b * h * c * keys * dh, ATTENTION),
                 Part("attn.context", 2 * b * h * c * keys * dh, ATTENTION),
                 gemm("attn.o", tokens, h * dh, e, ROW),
                 gemm("mlp.gate", tokens, e, self.d_ff), gemm("mlp.up", tokens, e, self.d_ff),
                 gemm("mlp.down", tokens, self.d_ff, e, ROW),
                 # the adaptive norms read the one timestep embedding: (1×e)·(e×3e)
                 gemm("norms.dense", 2 * b, e, 3 * e)]
        return (scaled(layer, self.layers, "layers") + [
            gemm("norm.dense", b, e, 3 * e),
            gemm("action_in_proj", tokens, self.actions, e),
            gemm("time_mlp", 2 * b, e, e),  # time_mlp_in and time_mlp_out, (1×e)·(e×e) each
            gemm("action_out_proj", tokens, e, self.actions)])

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        raise FlopcalcError(NOT_MODELLED)

    def activations(self, d: int, k: Any) -> list:
        raise FlopcalcError(NOT_MODELLED)

    def describe(self) -> str:
        return f"action expert ({self.layers} layers of {self.width}, {self.chunk} actions)"

    def notes(self) -> list[str]:
        return [f"action expert: one flow-matching denoising step of {self.chunk} action tokens "
                f"per sequence, {self.layers} layers of {self.width} attending to the prefix "
                "(the sequence) and the actions; sampling runs it num_inference_steps times over "
                "one prefix; its element-wise work and the activations it saves for backward "
                "(memory) are not counted; the prefix attends "
                "bidirectionally, which the `causal` figure counts as causal pairs (below what "
                "runs: use the full count)"]


def build(cfg: Any) -> Optional[ActionExpert]:
    b = cfg.action_expert
    if b is None:
        return None
    return ActionExpert(b.hidden_size, b.num_hidden_layers, b.num_attention_heads,
                        b.num_key_value_heads, b.head_dim, b.intermediate_size, b.chunk_size,
                        b.max_action_dim, b.attention_bias)


REGISTER = Entry(blocks=(("action_expert", ActionExpertBlock),), frontend=build)
