"""Independent PyTorch reference for flopcalc: exact parameter counts and forward FLOPs.

Models are built on the meta device, so a 405B-parameter model costs no memory and a forward
pass only propagates shapes.  Forward FLOPs are whatever
``torch.utils.flop_counter.FlopCounterMode`` records, which counts matrix products only
(mm, addmm, bmm, baddbmm, convolutions, the fused SDPA kernels it knows); norms, softmax,
activations, residual adds, RoPE, masking and embedding lookups count zero.  Causal masks
do not reduce the count: the full s x s score and value products are executed and counted.

torch and transformers are imported inside functions so that importing this module (for
example during pytest collection) never needs them.

An architecture is a plain dict:

    kind       "gpt2" (pre-LN, learned positions, tied head), "llama" (RMSNorm, RoPE,
               SwiGLU, untied head) or "encdec" (torch.nn.Transformer, shared tied vocab)
    layers     blocks per stack (encdec: encoder and decoder each)
    d_model, heads, kv_heads, head_dim, d_ff, vocab
    context    learned-position table size (gpt2), max_position_embeddings (llama),
               None (encdec: sinusoidal positions, any length)
    impl       optional, "custom" forces the hand-written GPT module for kind "gpt2"
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

Arch = dict[str, Any]


def _gpt(layers: int, d: int, heads: int, head_dim: int, context: int) -> Arch:
    return dict(kind="gpt2", layers=layers, d_model=d, heads=heads, kv_heads=heads,
                head_dim=head_dim, d_ff=4 * d, vocab=50257, context=context)


def _llama(layers: int, d: int, heads: int, d_ff: int) -> Arch:
    return dict(kind="llama", layers=layers, d_model=d, heads=heads, kv_heads=8, head_dim=128,
                d_ff=d_ff, vocab=128256, context=131072)


PRESETS: dict[str, Arch] = {
    "transformer-base": dict(kind="encdec", layers=6, d_model=512, heads=8, kv_heads=8,
                             head_dim=64, d_ff=2048, vocab=37000, context=None),
    "gpt2": _gpt(12, 768, 12, 64, 1024),
    "gpt2-medium": _gpt(24, 1024, 16, 64, 1024),
    "gpt2-large": _gpt(36, 1280, 20, 64, 1024),
    "gpt2-xl": _gpt(48, 1600, 25, 64, 1024),
    "gpt3-small": _gpt(12, 768, 12, 64, 2048),
    "gpt3-medium": _gpt(24, 1024, 16, 64, 2048),
    "gpt3-large": _gpt(24, 1536, 16, 96, 2048),
    "gpt3-xl": _gpt(24, 2048, 16, 128, 2048),
    "gpt3-2.7b": _gpt(32, 2560, 32, 80, 2048),
    "gpt3-6.7b": _gpt(32, 4096, 32, 128, 2048),
    "gpt3-13b": _gpt(40, 5120, 40, 128, 2048),
    "gpt3": _gpt(96, 12288, 96, 128, 2048),
    "llama-3.1-8b": _llama(32, 4096, 32, 14336),
    "llama-3.1-70b": _llama(80, 8192, 64, 28672),
    "llama-3.1-405b": _llama(126, 16384, 128, 53248),
}

# Published totals the presets must reproduce (the others have no single canonical figure).
EXPECTED_PARAMS: dict[str, int] = {
    "transformer-base": 63_082_496,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "gpt3": 174_604_259_328,
    "gpt3-13b": 12_853_386_240,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
}


def build(arch: Arch) -> torch.nn.Module:
    """The model described by ``arch``, on the meta device."""
    import torch

    kind = arch["kind"]
    with torch.device("meta"):
        if kind == "gpt2":
            # HF GPT-2 requires heads * head_dim == d_model; GPT-3 13B breaks that.
            narrow = arch["heads"] * arch["head_dim"] != arch["d_model"]
            model = _custom_gpt(arch) if narrow or arch.get("impl") == "custom" else _hf_gpt2(arch)
        elif kind == "llama":
            model = _hf_llama(arch)
        elif kind == "encdec":
            model = _encdec(arch)
        else:
            raise ValueError(f"unknown kind {kind!r}")
    # nn.Transformer in eval mode under no_grad takes its fused "fast path" on CPU
    # (aten._native_multi_head_attention, _transformer_encoder_layer_fwd), which
    # FlopCounterMode does not count; training mode with dropout 0.0 computes the same thing
    # through the counted ops.  Meta tensors never take that path; this keeps CPU off it too.
    return model.train() if kind == "encdec" else model.eval()


def count(arch: Arch, seq: int, batch: int = 1) -> dict[str, int]:
    """Parameters of ``arch`` and the FlopCounterMode FLOPs of one forward of batch x seq tokens."""
    import torch

    model = build(arch)
    params = num_params(model)
    context = arch.get("context")
    if context is not None and seq > context:
        # A learned-position table caps the length; positions carry no FLOPs, so count a
        # copy with a longer table and keep the parameters of the real one.
        model = build({**arch, "context": seq})
    ids = torch.zeros(batch, seq, dtype=torch.long, device="meta")
    inputs = (ids, ids) if arch["kind"] == "encdec" else (ids,)  # encdec: source = target length
    return {"params": params, "forward_flops": forward_flops(model, inputs)}


def load_hf_config(path: str | Path) -> PretrainedConfig:
    """A transformers config from a local config.json (or its directory), never the network."""
    from transformers import AutoConfig

    path = Path(path)
    raw = json.loads((path / "config.json" if path.is_dir() else path).read_text())
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


def count_hf_config(path: str | Path, seq: int, batch: int = 1) -> dict[str, int]:
    """Like :func:`count`, for the causal LM a published HF ``config.json`` describes."""
    import torch
    from transformers import AutoModelForCausalLM

    def make(config: PretrainedConfig) -> torch.nn.Module:
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()

    config = load_hf_config(path)
    model = make(config)
    params = num_params(model)
    if seq > config.max_position_embeddings:
        # Same trick as count(): GPT-2's n_positions is aliased as max_position_embeddings.
        config.max_position_embeddings = seq
        model = make(config)
    ids = torch.zeros(batch, seq, dtype=torch.long, device="meta")
    return {"params": params, "forward_flops": forward_flops(model, (ids,))}


def arch_from_hf(config: PretrainedConfig) -> Arch:
    """The dims of an HF decoder config as an ``arch`` dict (for :func:`formula_flops`)."""
    d, heads = config.hidden_size, config.num_attention_heads
    gpt2 = config.model_type == "gpt2"
    return dict(
        kind="gpt2" if gpt2 else "llama",  # only decides plain vs gated MLP for the formula
        layers=config.num_hidden_layers, d_model=d, heads=heads,
        kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=getattr(config, "head_dim", None) or d // heads,
        d_ff=(config.n_inner or 4 * d) if gpt2 else config.intermediate_size,
        vocab=config.vocab_size, context=config.max_position_embeddings,
    )


def formula_flops(arch: Arch, seq: int, batch: int = 1) -> int:
    """Closed-form matmul FLOPs (2 per multiply-add, full s x s attention) to check the counter."""
    b, s, d, v = batch, seq, arch["d_model"], arch["vocab"]
    dq, dkv = arch["heads"] * arch["head_dim"], arch["kv_heads"] * arch["head_dim"]
    dff = arch["d_ff"]
    attention = 2 * b * s * (d * dq + 2 * d * dkv + dq * d) + 4 * b * s * s * dq
    mlp = 2 * b * s * (3 if arch["kind"] == "llama" else 2) * d * dff
    head = 2 * b * s * d * v
    if arch["kind"] == "encdec":
        # Encoder: self-attention + MLP; decoder: self-attention + cross-attention + MLP
        # (source length = target length, so cross-attention costs what self-attention does).
        return arch["layers"] * (3 * attention + 2 * mlp) + head
    return arch["layers"] * (attention + mlp) + head


def num_params(model: torch.nn.Module) -> int:
    # parameters() yields a shared Parameter once, so tied embeddings count once.
    return sum(p.numel() for p in model.parameters())


def forward_flops(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> int:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    # On a real CPU tensor SDPA would pick aten._scaled_dot_product_flash_attention_for_cpu,
    # which FlopCounterMode does not count; the math backend runs (and counts) two bmm.
    # On meta the math path is taken anyway; forcing it keeps the count device-independent.
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
        model(*inputs)
    return counter.get_total_flops()


def _hf_gpt2(arch: Arch) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_embd=arch["d_model"], n_layer=arch["layers"], n_head=arch["heads"],
        n_inner=arch["d_ff"], n_positions=arch["context"], vocab_size=arch["vocab"],
        tie_word_embeddings=True, attn_implementation="eager",
    )
    return GPT2LMHeadModel(config)


def _hf_llama(arch: Arch) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=arch["d_model"], intermediate_size=arch["d_ff"],
        num_hidden_layers=arch["layers"], num_attention_heads=arch["heads"],
        num_key_value_heads=arch["kv_heads"], head_dim=arch["head_dim"],
        vocab_size=arch["vocab"], max_position_embeddings=arch["context"],
        tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(config)


def _custom_gpt(arch: Arch) -> torch.nn.Module:
    """GPT-2 block with a free attention width d_q = heads * head_dim (GPT-3 13B has d_q != d)."""
    import torch
    from torch import nn

    d, heads, head_dim = arch["d_model"], arch["heads"], arch["head_dim"]
    dq = heads * head_dim

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = nn.Linear(d, dq), nn.Linear(d, dq), nn.Linear(d, dq)
            self.out = nn.Linear(dq, d)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q, k, v = (proj(x).view(b, s, heads, head_dim).transpose(1, 2)
                       for proj in (self.q, self.k, self.v))
            # Explicit matmuls (eager attention), so no SDPA backend choice is involved.
            scores = q @ k.transpose(-1, -2) / head_dim**0.5
            causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)
            return self.out((weights @ v).transpose(1, 2).reshape(b, s, dq))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), Attention(), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, arch["d_ff"]), nn.GELU(approximate="tanh"),
                                     nn.Linear(arch["d_ff"], d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(arch["vocab"], d), nn.Embedding(arch["context"], d)
            self.blocks = nn.ModuleList(Block() for _ in range(arch["layers"]))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, arch["vocab"], bias=False)
            self.head.weight = self.wte.weight

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return GPT()


def _encdec(arch: Arch) -> torch.nn.Module:
    """Transformer-base: nn.Transformer with one embedding shared by source, target and LM head."""
    import torch
    from torch import nn

    d = arch["d_model"]

    class EncDec(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(arch["vocab"], d)
            self.transformer = nn.Transformer(
                d_model=d, nhead=arch["heads"], num_encoder_layers=arch["layers"],
                num_decoder_layers=arch["layers"], dim_feedforward=arch["d_ff"], dropout=0.0,
                activation="relu", batch_first=True,
            )
            # The original post-LN model has no final norms; nn.Transformer always adds them.
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
            self.head = nn.Linear(d, arch["vocab"], bias=False)
            self.head.weight = self.embed.weight

        def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
            # Sinusoidal positions and the sqrt(d) embedding scale are element-wise: no params,
            # no matmul FLOPs, so they are left out.
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
            return self.head(self.transformer(self.embed(src), self.embed(tgt), tgt_mask=mask,
                                              tgt_is_causal=True))

    return EncDec()
