"""π0.5's flow-matching action expert (Physical Intelligence 2025, "π0.5: a Vision-Language-Action
Model with Open-World Generalization"; transformers 5.25 `models/pi05/modeling_pi05.py`,
PI05ForConditionalGeneration), and π0's (Black et al. 2024, "π0: A Vision-Language-Action Flow
Model for General Robot Control"; transformers 5.24 `models/pi0/modeling_pi0.py`), a model-level
kind run after the vision-language model.

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

π0 (`style` pi0) differs: its expert is a whole GemmaModel (`AutoModel` of `dit_config`: plain
RMSNorm gains, and a token table of the backbone's vocabulary that it holds and never reads),
one more token per sequence (the robot state, `state_proj` S → e), and the timestep mixed into
every action token (`action_time_mlp_in` 2e → e over [action; time], `action_time_mlp_out`
e → e, per token): per sequence 2·S·e, 2·C·A·e, 2·C·2e·e, 2·C·e·e and 2·C·e·A, and its layers
over C + 1 tokens attending to P + C + 1 keys.

Decoding does not apply: the expert keeps no cache of its own (it appends its keys to the
prefix's and the sampler crops them) and generates no tokens, so `infer` and `serve` refuse it.
Training memory holds its weights, gradients and optimizer states with the model's; the
activations it saves for backward are not modelled (its notes say so).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from ..declare import Min
from ..errors import FlopcalcError
from ..records import dataclass
from .base import (ATTENTION, EMBEDDING, LAST, LAYERS, ROW, VOCAB, Kind, Part, Span, gemm,
                   linear, scaled)
from .registry import Entry

NOT_MODELLED = ("π0's and π0.5's action expert generates actions, not tokens: flopcalc counts its "
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
    style: Literal["pi05", "pi0"] = "pi05"  # π0: plain norms, a state token, a held table
    max_state_dim: Annotated[int, Min(1)] = 32  # π0's state width
    vocab_size: Annotated[int, Min(0)] = 0  # π0: rows of the expert's unread token table


@dataclass(frozen=True)
class ActionExpert(Kind):
    """π0.5's action expert (see the module): `layers` Gemma layers of width `width` with
    adaptive norms (π0's, `style` pi0: plain norms, a state token of `state_dim` values and an
    unread table of `table_rows`), `heads` and `kv_heads` heads of `head_dim`, a gated MLP `d_ff`
    wide, over `chunk` action tokens of `actions` values, attending to the prefix's keys too."""

    width: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    chunk: int
    actions: int
    bias: bool = False
    style: str = "pi05"
    state_dim: int = 32
    table_rows: int = 0
    slot = "action_expert"
    before_head = True  # counting.model runs it on the backbone's output sequence

    def _layer_params(self) -> list[Part]:
        e, dh, b = self.width, self.head_dim, self.bias
        return (linear("attn.q", e, self.heads * dh, b)
                + linear("attn.k", e, self.kv_heads * dh, b)
                + linear("attn.v", e, self.kv_heads * dh, b)
                + linear("attn.o", self.heads * dh, e, b, ROW)
                + linear("mlp.gate", e, self.d_ff, False) + linear("mlp.up", e, self.d_ff, False)
                + linear("mlp.down", self.d_ff, e, False, ROW) + self._norm("input_norm")
                + self._norm("post_attention_norm"))

    def _norm(self, name: str) -> list[Part]:
        """π0.5's adaptive norm (a Linear e → 3e with bias) or π0's RMSNorm gain."""
        e = self.width
        if self.style == "pi0":
            return [Part(f"{name}.weight", e, LAYERS, (e,), module=name)]
        return linear(f"{name}.dense", e, 3 * e, True)

    def params(self, d: int, active: bool = False) -> list[Part]:
        e, a = self.width, self.actions
        parts = (scaled(self._layer_params(), self.layers, "layers") + self._norm("norm")
                 + linear("action_in_proj", a, e, True))
        if self.style == "pi0":
            parts += (linear("state_proj", self.state_dim, e, True)
                      + linear("action_time_mlp_in", 2 * e, e, True)
                      + linear("action_time_mlp_out", e, e, True))
        else:
            parts += linear("time_mlp_in", e, e, True) + linear("time_mlp_out", e, e, True)
        parts += linear("action_out_proj", e, a, True)
        out = [Part(p.name, p.value, LAYERS, p.shape, p.role, LAST, matmul=p.matmul,
                    module=p.module) for p in parts]
        if self.table_rows:  # π0's GemmaModel holds a token table it never reads
            out.append(Part("embed_tokens", self.table_rows * e, EMBEDDING,
                            (self.table_rows, e), VOCAB, LAST, lookup=True))
        return out

    def forward(self, d: int, x: Span) -> list[Part]:
        """One denoising step per sequence over the prefix of `x.n` tokens (the module)."""
        b, c, e, dh = x.batch, self.chunk, self.width, self.head_dim
        n = c + 1 if self.style == "pi0" else c  # π0: the state token before the actions
        tokens, keys, actions = b * n, x.n + n, b * c
        h, g = self.heads, self.kv_heads
        layer = [gemm("attn.q", tokens, e, h * dh), gemm("attn.k", tokens, e, g * dh),
                 gemm("attn.v", tokens, e, g * dh),
                 # (n×d_h)·(d_h×(P+n)) per head, then (n×(P+n))·((P+n)×d_h)
                 Part("attn.scores", 2 * b * h * n * keys * dh, ATTENTION),
                 Part("attn.context", 2 * b * h * n * keys * dh, ATTENTION),
                 gemm("attn.o", tokens, h * dh, e, ROW),
                 gemm("mlp.gate", tokens, e, self.d_ff), gemm("mlp.up", tokens, e, self.d_ff),
                 gemm("mlp.down", tokens, self.d_ff, e, ROW)]
        if self.style == "pi0":
            return scaled(layer, self.layers, "layers") + [
                gemm("state_proj", b, self.state_dim, e),
                gemm("action_in_proj", actions, self.actions, e),
                gemm("action_time_mlp_in", actions, 2 * e, e),  # (C×2e)·(2e×e)
                gemm("action_time_mlp_out", actions, e, e),
                gemm("action_out_proj", actions, e, self.actions)]
        # the adaptive norms read the one timestep embedding: (1×e)·(e×3e)
        layer.append(gemm("norms.dense", 2 * b, e, 3 * e))
        return (scaled(layer, self.layers, "layers") + [
            gemm("norm.dense", b, e, 3 * e),
            gemm("action_in_proj", actions, self.actions, e),
            gemm("time_mlp", 2 * b, e, e),  # time_mlp_in and time_mlp_out, (1×e)·(e×e) each
            gemm("action_out_proj", actions, e, self.actions)])

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        raise FlopcalcError(NOT_MODELLED)

    def activations(self, d: int, k: Any) -> list:
        raise FlopcalcError(NOT_MODELLED)

    def describe(self) -> str:
        return f"action expert ({self.layers} layers of {self.width}, {self.chunk} actions)"

    def notes(self) -> list[str]:
        state = " and the state token" if self.style == "pi0" else ""
        return [f"action expert: one flow-matching denoising step of {self.chunk} action tokens"
                f"{state} per sequence, {self.layers} layers of {self.width} attending to the "
                "prefix (the sequence) and the actions; sampling runs it num_inference_steps "
                "times over one prefix; its element-wise work and the activations it saves for backward "
                "(memory) are not counted; the prefix attends "
                "bidirectionally, which the `causal` figure counts as causal pairs (below what "
                "runs: use the full count)"]


def build(cfg: Any) -> Optional[ActionExpert]:
    b = cfg.action_expert
    if b is None:
        return None
    return ActionExpert(b.hidden_size, b.num_hidden_layers, b.num_attention_heads,
                        b.num_key_value_heads, b.head_dim, b.intermediate_size, b.chunk_size,
                        b.max_action_dim, b.attention_bias, b.style, b.max_state_dim,
                        b.vocab_size)


REGISTER = Entry(blocks=(("action_expert", ActionExpertBlock),), frontend=build)
