"""Independent PyTorch/transformers reference for mixture-of-experts and MLA models.

What it gives, for any HF ``config.json`` of model_type mixtral, qwen2_moe, qwen3_moe, olmoe,
deepseek_v3 or gpt_oss (no network, never flopcalc):

* :func:`param_count` of the transformers module (full-size configs are built on the meta device),
  with :func:`param_breakdown` by kind and the active count ``total - sum_moe_layers (E - k) * expert``;
* :func:`forward_flops`: what ``torch.utils.flop_counter.FlopCounterMode`` counts for one forward of
  batch x seq random tokens on a *real* CPU model (routing is data dependent, so the meta device can't
  be used), with a per-layer breakdown and the routing that happened;
* :func:`formula_flops`: the closed form the counter must equal (2 FLOPs per multiply-add);
* :class:`AbsorbedMLA` / :func:`mla_decode_check`: DeepSeek multi-head latent attention for one decode
  step in the weight-absorbed form serving engines use, checked numerically against HF.

Counting conventions that matter:

* Models are built with ``attn_implementation="eager"`` *and* ``experts_implementation="eager"``
  (``from_config``/``from_pretrained`` keyword, or ``config.experts_implementation`` /
  ``model.set_experts_implementation``).  transformers 5 defaults to ``"grouped_mm"``
  (``PreTrainedModel.get_correct_experts_implementation``), which calls ``torch.nn.functional.grouped_mm``
  / ``torch._grouped_mm``; FlopCounterMode has no formula for it, so routed experts count 0.
  ``"batched_mm"`` (bmm over gathered per-token weights) counts the same as eager.
* Eager experts loop over the experts that received tokens and run ``linear(x_e, W_gate_up)`` and
  ``linear(h_e, W_down)`` on the n_e rows routed to expert e.  ``torch.topk`` returns k distinct
  experts per token, so sum_e n_e = T*k and the routed cost is exactly ``2*T*k*(d*2I + I*d)`` whatever
  the distribution (checked per layer by :func:`forward_flops`).
* Routers are one (T x d) @ (d x E) product (plus bias for gpt-oss, not a FLOP); Qwen2-MoE's shared
  expert gate is a (T x d) @ (d x 1) product.  Softmax/sigmoid/top-k/group masks count 0.
* Eager attention computes the full s x s scores and values even for sliding-window layers
  (the window is a mask), so gpt-oss sliding layers cost what full layers cost here.

torch and transformers are imported inside functions only.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v3", "gpt_oss")


# --------------------------------------------------------------------------- configs and models

def load_config(source: str | Path | dict[str, Any]) -> PretrainedConfig:
    """A transformers config from a dict or a local config.json (or its directory); no network."""
    from transformers import AutoConfig

    if isinstance(source, dict):
        raw = copy.deepcopy(source)
    else:
        path = Path(source)
        raw = json.loads((path / "config.json" if path.is_dir() else path).read_text())
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


def build(config: PretrainedConfig | dict, device: str = "cpu", experts: str | None = "eager",
          dtype: torch.dtype | None = None, seed: int = 0) -> torch.nn.Module:
    """The causal LM for ``config`` with eager attention and the given experts implementation.

    ``experts=None`` keeps the transformers default (grouped_mm).  On a real device every weight is
    redrawn from a generator seeded with ``seed`` (matrices N(0, 1/fan_in), biases/sinks N(0, 0.1^2),
    norms 1, DeepSeek's e_score_correction_bias N(0, 0.1^2)) so results don't depend on HF's init.
    """
    import torch
    from transformers import AutoModelForCausalLM

    config = load_config(config) if isinstance(config, dict) else copy.deepcopy(config)
    kwargs = {"attn_implementation": "eager"}  # from_config also writes these onto the config
    if experts is not None:
        kwargs["experts_implementation"] = experts
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, **kwargs)
    if dtype is not None:
        model = model.to(dtype)
    if device != "meta":
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.ndim >= 2:
                    fan_in = p.shape[-2] if "experts" in name and model.config.model_type == "gpt_oss" \
                        else p.shape[-1]
                    p.copy_(torch.randn(p.shape, generator=gen) * fan_in**-0.5)
                elif "norm" in name:
                    p.fill_(1.0)
                else:  # biases, attention sinks
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            for name, b in model.named_buffers():
                if name.endswith("e_score_correction_bias"):
                    b.copy_(torch.randn(b.shape, generator=gen) * 0.1)
    return model.eval()


def param_count(model: torch.nn.Module) -> int:
    """Parameters (shared ones once).  Buffers such as DeepSeek's e_score_correction_bias excluded."""
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- layer structure

def _moe_dims(config: PretrainedConfig) -> dict[str, int]:
    """Experts E, top-k, expert width I, shared-expert width (0 if none) of the config's MoE layers."""
    t = config.model_type
    if t == "deepseek_v3":
        return dict(E=config.n_routed_experts, k=config.num_experts_per_tok, I=config.moe_intermediate_size,
                    shared=config.moe_intermediate_size * config.n_shared_experts)
    if t in ("mixtral", "gpt_oss"):
        return dict(E=config.num_local_experts, k=config.num_experts_per_tok, I=config.intermediate_size,
                    shared=0)
    if t == "qwen2_moe":
        return dict(E=config.num_experts, k=config.num_experts_per_tok, I=config.moe_intermediate_size,
                    shared=config.shared_expert_intermediate_size)
    if t in ("qwen3_moe", "olmoe"):
        moe_i = config.moe_intermediate_size if t == "qwen3_moe" else config.intermediate_size
        return dict(E=config.num_experts, k=config.num_experts_per_tok, I=moe_i, shared=0)
    raise ValueError(f"not an MoE model_type: {t!r}")


def moe_layers(config: PretrainedConfig) -> list[int]:
    """Indices of the decoder layers whose MLP is an MoE block (the rule of each modeling file)."""
    n, t = config.num_hidden_layers, config.model_type
    if t == "deepseek_v3":  # DeepseekV3DecoderLayer: layer_idx >= first_k_dense_replace
        return [i for i in range(n) if i >= config.first_k_dense_replace]
    if t in ("qwen2_moe", "qwen3_moe"):  # layer not in mlp_only_layers and (i + 1) % step == 0
        return [i for i in range(n) if i not in config.mlp_only_layers
                and config.num_experts > 0 and (i + 1) % config.decoder_sparse_step == 0]
    return list(range(n))  # mixtral, olmoe, gpt_oss: every layer


def expert_params(config: PretrainedConfig) -> int:
    """Parameters of one routed expert (gate+up+down, plus gpt-oss's two biases)."""
    m, d = _moe_dims(config), config.hidden_size
    bias = 2 * m["I"] + d if config.model_type == "gpt_oss" else 0
    return 3 * d * m["I"] + bias


def param_breakdown(model: torch.nn.Module) -> dict[str, int]:
    """Parameters by kind; the values add up to :func:`param_count`."""
    kinds: dict[str, int] = {}
    for name, p in model.named_parameters():
        if "embed_tokens" in name:
            kind = "embedding"
        elif name.startswith("lm_head"):
            kind = "lm_head"
        elif ".layers." not in name:
            kind = "final_norm"
        elif ".self_attn." in name:
            kind = "attention"
        elif "layernorm" in name:
            kind = "layer_norms"
        elif ".mlp.experts." in name:
            kind = "routed_experts"
        elif ".mlp.gate." in name or ".mlp.router." in name:
            kind = "router"
        elif ".mlp.shared_expert" in name:  # shared_expert(s).*, shared_expert_gate
            kind = "shared_experts"
        else:
            kind = "dense_mlp"
        kinds[kind] = kinds.get(kind, 0) + p.numel()
    return kinds


def active_params(config: PretrainedConfig, total: int) -> int:
    """total - sum over MoE layers of (E - k) routed experts (embedding and lm_head included)."""
    m = _moe_dims(config)
    return total - len(moe_layers(config)) * (m["E"] - m["k"]) * expert_params(config)


def published_summary(source: str | Path | dict) -> dict[str, Any]:
    """Meta-device params of a (full-size) config: total, by kind, per expert, active."""
    config = load_config(source)
    model = build(config, device="meta")
    total = param_count(model)
    m = _moe_dims(config)
    return {"model_type": config.model_type, "params": total, "by_kind": param_breakdown(model),
            "moe_layers": len(moe_layers(config)), "layers": config.num_hidden_layers,
            "experts": m["E"], "top_k": m["k"], "params_per_expert": expert_params(config),
            "active_params": active_params(config, total),
            "e_score_correction_bias_buffer": sum(b.numel() for n, b in model.named_buffers()
                                                  if n.endswith("e_score_correction_bias"))}


def deepseek_mtp_params(config: PretrainedConfig) -> int:
    """Unique parameters of one DeepSeek MTP module as transformers builds it for generate(use_mtp=True).

    MtpModel (modeling_layers.py) builds MtpLayer(config.get_mtp_config(), DecoderLayer, RMSNorm, 0):
    enorm, hnorm (RMSNorm d), eh_proj Linear(2d -> d, no bias), one decoder layer (get_mtp_config sets
    first_k_dense_replace = 0, so it is an MoE layer) and post_norm (= DeepSeek's shared_head.norm).
    The embedding and output head are the main model's and are not counted here.
    """
    import torch
    from transformers.modeling_layers import MtpLayer
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3DecoderLayer, DeepseekV3RMSNorm

    with torch.device("meta"):
        layer = MtpLayer(config.get_mtp_config(), DeepseekV3DecoderLayer, DeepseekV3RMSNorm, 0)
    return sum(p.numel() for p in layer.parameters())


# --------------------------------------------------------------------------- FLOPs

def _count(model: torch.nn.Module, ids: torch.Tensor) -> tuple[int, dict[str, int]]:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids, use_cache=False)
    per_module = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    return counter.get_total_flops(), per_module


def forward_flops(config: PretrainedConfig | dict, seq: int, batch: int = 1, experts: str | None = "eager",
                  seed: int = 0) -> dict[str, Any]:
    """FlopCounterMode FLOPs of one forward of batch x seq random tokens on a real CPU model.

    Returns ``total``, ``implementation`` (the experts implementation actually used), ``layers`` (per
    decoder layer: attention, router, routed_experts, shared_experts, dense_mlp as counted), ``lm_head``,
    and ``routing`` (per MoE layer: tokens per expert, and whether every token got k distinct experts).
    """
    import torch

    config = load_config(config) if isinstance(config, dict) else config
    model = build(config, experts=experts, seed=seed)
    routing: dict[int, torch.Tensor] = {}

    def hook(index: int):
        def save(_module, _inputs, outputs):
            routing[index] = outputs[2].detach().reshape(batch * seq, -1)  # (logits, weights, indices)
        return save

    for name, module in model.named_modules():
        parts = name.split(".")
        if len(parts) == 5 and parts[3] == "mlp" and parts[4] in ("gate", "router") \
                and type(module).__name__.endswith("Router"):
            module.register_forward_hook(hook(int(parts[2])))

    ids = torch.randint(0, config.vocab_size, (batch, seq), generator=torch.Generator().manual_seed(seed + 1))
    total, per_module = _count(model, ids)
    prefix = type(model).__name__ + ".model.layers."

    def get(key: str) -> int:
        return per_module.get(prefix + key, 0)

    layers = []
    for i in range(config.num_hidden_layers):
        router = get(f"{i}.mlp.gate") + get(f"{i}.mlp.router")
        routed = get(f"{i}.mlp.experts")
        shared = sum(get(f"{i}.mlp.{n}") for n in ("shared_expert", "shared_experts", "shared_expert_gate"))
        mlp = get(f"{i}.mlp")
        layers.append({"attention": get(f"{i}.self_attn"), "router": router, "routed_experts": routed,
                       "shared_experts": shared, "dense_mlp": mlp - router - routed - shared})
    dims = _moe_dims(config)
    route_info = {}
    for i, idx in sorted(routing.items()):
        route_info[i] = {"tokens_per_expert": torch.bincount(idx.flatten(), minlength=dims["E"]).tolist(),
                         "k_distinct": all(len(set(row.tolist())) == dims["k"] for row in idx)}
    return {"total": total, "implementation": model.config._experts_implementation, "layers": layers,
            "lm_head": per_module.get(type(model).__name__ + ".lm_head", 0), "routing": route_info}


def formula_flops(config: PretrainedConfig | dict, seq: int, batch: int = 1) -> dict[str, Any]:
    """Closed-form matmul FLOPs of one eager forward (full s x s attention, no causal saving).

    MoE layer = router 2*T*d*E + routed 2*T*k*3*d*I + shared 2*T*3*d*I_s (+ gate 2*T*d for qwen2_moe).
    Attention (GQA) = 2*T*(d*h*hd + 2*d*kv*hd + h*hd*d) + 2*b*h*s*s*hd * 2.
    Attention (MLA) = q path + 2*T*d*(r_kv + rope) + 2*T*r_kv*h*(nope + v) + 2*T*h*v*d
                      + 2*b*h*s*s*(nope + rope) + 2*b*h*s*s*v.
    """
    config = load_config(config) if isinstance(config, dict) else config
    b, s, d = batch, seq, config.hidden_size
    T, h = b * s, config.num_attention_heads
    if config.model_type == "deepseek_v3":
        nope, rope, v = config.qk_nope_head_dim, config.qk_rope_head_dim, config.v_head_dim
        r, q_lora = config.kv_lora_rank, config.q_lora_rank
        q_path = 2 * T * d * h * (nope + rope) if q_lora is None else \
            2 * T * d * q_lora + 2 * T * q_lora * h * (nope + rope)
        attention = (q_path + 2 * T * d * (r + rope) + 2 * T * r * h * (nope + v) + 2 * T * h * v * d
                     + 2 * b * h * s * s * (nope + rope) + 2 * b * h * s * s * v)
        dense_i = config.intermediate_size
    else:
        hd = getattr(config, "head_dim", None) or d // h
        kv = config.num_key_value_heads
        attention = 2 * T * (d * h * hd + 2 * d * kv * hd + h * hd * d) + 4 * b * h * s * s * hd
        dense_i = config.intermediate_size
    m = _moe_dims(config)
    moe_set = set(moe_layers(config))
    layers = []
    for i in range(config.num_hidden_layers):
        if i in moe_set:
            router, routed = 2 * T * d * m["E"], 2 * T * m["k"] * 3 * d * m["I"]
            shared = 6 * T * d * m["shared"] + (2 * T * d if config.model_type == "qwen2_moe" else 0)
            layers.append({"attention": attention, "router": router, "routed_experts": routed,
                           "shared_experts": shared, "dense_mlp": 0})
        else:
            layers.append({"attention": attention, "router": 0, "routed_experts": 0, "shared_experts": 0,
                           "dense_mlp": 6 * T * d * dense_i})
    lm_head = 2 * T * d * config.vocab_size
    return {"total": sum(sum(x.values()) for x in layers) + lm_head, "layers": layers, "lm_head": lm_head}


# --------------------------------------------------------------------------- absorbed MLA (decode)

def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    import torch
    # Like DeepseekV3RMSNorm: normalise in float32, scale in the input dtype.
    x32 = x.to(torch.float32)
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _rope(x: torch.Tensor, pos: torch.Tensor, theta: float, interleave: bool) -> torch.Tensor:
    """Default RoPE on the last dim of x (..., n, dr) at positions pos (n,), as DeepSeek lays it out."""
    import torch

    dr = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, dr, 2, dtype=torch.float32) / dr))
    ang = pos.to(torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)  # (n, dr/2)
    if interleave:  # pairs (x0, x1), (x2, x3)...; output de-interleaved, as HF does for q and k alike
        x1, x2 = x[..., 0::2], x[..., 1::2]
    else:           # rotate_half layout
        x1, x2 = x[..., : dr // 2], x[..., dr // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def _matmul_module():
    from torch import nn

    class MatMul(nn.Module):
        """a @ b as its own module, so FlopCounterMode reports each term separately."""

        def forward(self, a, b):
            return a @ b

    return MatMul()


def AbsorbedMLA(attn: torch.nn.Module):  # noqa: N802 - a factory for a module class built lazily
    """The weight-absorbed decode form of an HF ``DeepseekV3Attention`` (same weights, copied).

    Cache per token: the normalised latent c_kv (kv_lora_rank) and the roped shared key k_rope
    (qk_rope_head_dim).  One decode step for x (b, 1, d) at position p with c = cache length + 1 keys:

      q path      q = q_b(norm(q_a(x))) or q_proj(x)          2*b*d*q_lora + 2*b*q_lora*h*(nope+rope)
      kv_a        [c_kv, k_rope] = kv_a_proj_with_mqa(x)      2*b*d*(r_kv + rope)
      absorb      q_lat[h] = q_nope[h] @ W_UK[h]              2*b*h*nope*r_kv
      scores      q_lat @ C^T + q_rope @ K_rope^T             2*b*h*c*(r_kv + rope)
      values      o_lat = softmax(scores) @ C                 2*b*h*c*r_kv
      up_v        o[h] = o_lat[h] @ W_UV[h]^T                 2*b*h*r_kv*v
      o_proj      o_proj(o)                                   2*b*h*v*d
    where kv_b_proj.weight viewed (h, nope + v, r_kv) is split into W_UK (h, nope, r_kv), W_UV (h, v, r_kv).
    """
    import torch
    from torch import nn

    class _AbsorbedMLA(nn.Module):
        def __init__(self, attn: nn.Module) -> None:
            super().__init__()
            cfg = attn.config
            self.h, self.v = attn.num_heads, attn.v_head_dim
            self.nope, self.rope = attn.qk_nope_head_dim, attn.qk_rope_head_dim
            self.r, self.scaling = attn.kv_lora_rank, attn.scaling
            self.kv_eps = attn.kv_a_layernorm.variance_epsilon  # DeepseekV3RMSNorm default 1e-6
            self.theta, self.interleave = cfg.rope_parameters["rope_theta"], bool(cfg.rope_interleave)
            assert cfg.rope_parameters.get("rope_type", "default") == "default", "default RoPE only"
            self.q_path = nn.Module()
            if attn.q_lora_rank is None:
                self.q_path.q_proj = copy.deepcopy(attn.q_proj)
            else:
                self.q_path.q_a_proj = copy.deepcopy(attn.q_a_proj)
                self.q_path.q_a_norm = copy.deepcopy(attn.q_a_layernorm.weight)
                self.q_eps = attn.q_a_layernorm.variance_epsilon
                self.q_path.q_b_proj = copy.deepcopy(attn.q_b_proj)
            self.kv_a = copy.deepcopy(attn.kv_a_proj_with_mqa)
            self.kv_a_norm = nn.Parameter(attn.kv_a_layernorm.weight.detach().clone())
            w = attn.kv_b_proj.weight.detach().view(self.h, self.nope + self.v, self.r)
            self.w_uk = nn.Parameter(w[:, : self.nope].clone())            # (h, nope, r)
            self.w_uv_t = nn.Parameter(w[:, self.nope:].transpose(1, 2).clone())  # (h, r, v)
            self.o_proj = copy.deepcopy(attn.o_proj)
            self.absorb, self.scores, self.values, self.up_v = (_matmul_module() for _ in range(4))

        def _q(self, x):
            qp = self.q_path
            if hasattr(qp, "q_proj"):
                return qp.q_proj(x)
            return qp.q_b_proj(_rms(qp.q_a_proj(x), qp.q_a_norm, self.q_eps))

        def latent(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Cache entries (c_kv (b, n, r), k_rope (b, n, rope)) for tokens x (b, n, d) at pos (n,)."""
            c_kv, k_rope = self.kv_a(x).split([self.r, self.rope], dim=-1)
            return _rms(c_kv, self.kv_a_norm, self.kv_eps), _rope(k_rope, pos, self.theta, self.interleave)

        def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor], pos: int):
            """One decode step: x (b, 1, d); cache from :meth:`latent` of the previous tokens."""
            b = x.shape[0]
            p = torch.tensor([pos])
            q = self._q(x).view(b, 1, self.h, self.nope + self.rope).transpose(1, 2)      # (b, h, 1, .)
            q_nope, q_rope = q.split([self.nope, self.rope], dim=-1)
            q_rope = _rope(q_rope, p, self.theta, self.interleave)
            c_new, kr_new = self.latent(x, p)
            c_kv = torch.cat([cache[0], c_new], dim=1)                                     # (b, c, r)
            k_rope = torch.cat([cache[1], kr_new], dim=1)                                  # (b, c, rope)
            q_lat = self.absorb(q_nope, self.w_uk)                                         # (b, h, 1, r)
            q_cat = torch.cat([q_lat, q_rope], dim=-1)                                     # (b, h, 1, r+rope)
            k_cat = torch.cat([c_kv, k_rope], dim=-1).unsqueeze(1)                         # (b, 1, c, r+rope)
            scores = self.scores(q_cat, k_cat.transpose(-1, -2)) * self.scaling            # (b, h, 1, c)
            attn = torch.softmax(scores.float(), dim=-1).to(x.dtype)
            o_lat = self.values(attn, c_kv.unsqueeze(1))                                   # (b, h, 1, r)
            o = self.up_v(o_lat, self.w_uv_t)                                              # (b, h, 1, v)
            out = self.o_proj(o.transpose(1, 2).reshape(b, 1, self.h * self.v))
            return out, (c_kv, k_rope)

    return _AbsorbedMLA(attn)


def absorbed_mla_terms(config: PretrainedConfig, context: int, batch: int = 1) -> dict[str, int]:
    """The decode-step FLOPs of :func:`AbsorbedMLA`, term by term (context = keys incl. the new one)."""
    b, c, d, h = batch, context, config.hidden_size, config.num_attention_heads
    nope, rope, v, r, ql = (config.qk_nope_head_dim, config.qk_rope_head_dim, config.v_head_dim,
                            config.kv_lora_rank, config.q_lora_rank)
    q = 2 * b * d * h * (nope + rope) if ql is None else 2 * b * d * ql + 2 * b * ql * h * (nope + rope)
    return {"q_path": q, "kv_a": 2 * b * d * (r + rope), "absorb": 2 * b * h * nope * r,
            "scores": 2 * b * h * c * (r + rope), "values": 2 * b * h * c * r, "up_v": 2 * b * h * r * v,
            "o_proj": 2 * b * h * v * d}


def hf_mla_decode_terms(config: PretrainedConfig, context: int, batch: int = 1) -> dict[str, int]:
    """HF DeepseekV3Attention's own decode step: the cache holds latents, so kv_b_proj re-expands all c."""
    b, c, d, h = batch, context, config.hidden_size, config.num_attention_heads
    nope, rope, v, r, ql = (config.qk_nope_head_dim, config.qk_rope_head_dim, config.v_head_dim,
                            config.kv_lora_rank, config.q_lora_rank)
    q = 2 * b * d * h * (nope + rope) if ql is None else 2 * b * d * ql + 2 * b * ql * h * (nope + rope)
    return {"q_path": q, "kv_a": 2 * b * d * (r + rope), "kv_b (all c keys)": 2 * b * c * r * h * (nope + v),
            "scores": 2 * b * h * c * (nope + rope), "values": 2 * b * h * c * v, "o_proj": 2 * b * h * v * d}


def mla_decode_check(config: PretrainedConfig | dict, context: int, batch: int = 1,
                     seed: int = 0) -> dict[str, Any]:
    """Prefill context-1 tokens through HF DeepseekV3Attention (float64, DynamicCache), decode one more,
    and compare with :func:`AbsorbedMLA` fed its own latent cache of the same prefix.

    Returns max |difference| of the decode outputs (and of the caches), and FlopCounterMode counts of
    both decode steps per term next to the formulas.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import DynamicCache
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds

    config = load_config(config) if isinstance(config, dict) else copy.deepcopy(config)
    config._attn_implementation = "eager"
    gen = torch.Generator().manual_seed(seed)
    attn = ds.DeepseekV3Attention(config, layer_idx=0).to(torch.float64).eval()
    with torch.no_grad():
        for name, p in attn.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64)
                    * (p.shape[-1] ** -0.5 if p.ndim == 2 else 0.1) + (1.0 if "norm" in name else 0.0))
    rotary = ds.DeepseekV3RotaryEmbedding(config)
    absorbed = AbsorbedMLA(attn)
    n = context - 1
    x = torch.randn(batch, context, config.hidden_size, generator=gen, dtype=torch.float64)
    pos = torch.arange(context)

    with torch.no_grad():
        cache = DynamicCache(config=config)
        mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)[None, None]
        cos, sin = rotary(x, pos[None, :n])
        attn(x[:, :n], (cos, sin), mask, cache=cache)
        cos, sin = rotary(x, pos[None, n:])
        hf_counter = FlopCounterMode(display=False)
        with hf_counter:
            hf_out, _ = attn(x[:, n:], (cos, sin), None, cache=cache)
        latent = absorbed.latent(x[:, :n], pos[:n])
        ab_counter = FlopCounterMode(display=False)
        with ab_counter:
            ab_out, ab_cache = absorbed(x[:, n:], latent, n)
    hf_c_kv = cache.layers[0].keys.squeeze(1)
    hf_k_rope = cache.layers[0].values.squeeze(1)

    def per_term(counter, prefix):
        flops = {k[len(prefix):]: sum(v.values()) for k, v in counter.get_flop_counts().items()
                 if k.startswith(prefix) and k.count(".") == prefix.count(".")}
        return flops

    ab_counted = per_term(ab_counter, "_AbsorbedMLA.")
    ab_counted["q_path"] = sum(v for k, v in per_term(ab_counter, "_AbsorbedMLA.q_path.").items())
    hf_mods = per_term(hf_counter, "DeepseekV3Attention.")
    hf_total = hf_counter.get_total_flops()
    return {
        "context": context, "batch": batch,
        "max_abs_diff_output": float((hf_out - ab_out).abs().max()),
        "max_abs_output": float(hf_out.abs().max()),
        "max_abs_diff_cache": max(float((hf_c_kv - ab_cache[0]).abs().max()),
                                  float((hf_k_rope - ab_cache[1]).abs().max())),
        "absorbed": {"counted_total": ab_counter.get_total_flops(),
                     "counted": {k: ab_counted.get(k, 0) for k in absorbed_mla_terms(config, context, batch)},
                     "formula": absorbed_mla_terms(config, context, batch)},
        "hf": {"counted_total": hf_total, "counted_modules": hf_mods,
               "counted_attention_matmuls": hf_total - sum(hf_mods.values()),
               "formula": hf_mla_decode_terms(config, context, batch)},
    }
