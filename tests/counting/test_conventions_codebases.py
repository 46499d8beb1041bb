"""The `megatron_lm`, `megatron_lm_hybrid` and `maxtext` rows of `flopcalc conventions` against
independent transcriptions of the codebases' own functions:

- Megatron-LM, `megatron/training/training.py` at d98e8a64ddf34856e74b24714e3bedb2f5a39553:
  `num_floating_point_operations` with its nested `transformer_flops` (the GPT path) and
  `hybrid_flops` (models with a hybrid_layer_pattern), and `get_hybrid_layer_counts` /
  `parse_hybrid_pattern` (megatron/core/models/hybrid/hybrid_layer_allocation.py);
- MaxText, `src/maxtext/utils/maxtext_utils.py` at e591f30cbbf217ed67ef71263ec0538239f9c3b8:
  `calculate_tflops_training_per_device` and the helpers it calls.

The transcriptions keep the upstream structure and names line by line, with one change: every
division is exact (`Fraction`) where upstream divides in floats, so a figure can be compared to
the unit. Megatron-LM's per-layer helpers, nested inside num_floating_point_operations
upstream, sit at module level here so that the term-by-term tests can call them. Left out (no
preset needs them): Megatron-LM's gated delta product layers; MaxText's Gemma 4, DeepSeek 4,
Qwen3 custom-MoE, Engram, multimodal and DPO branches (they raise here).

Each model's upstream arguments are written by hand below from its published config (the
preset's YAML), never read from flopcalc.
"""

from __future__ import annotations

import csv
import io
from fractions import Fraction as F
from types import SimpleNamespace
from typing import Any

import pytest

import flopcalc
from flopcalc.kinds.attention import Attention
from flopcalc.kinds.gated_deltanet import GatedDeltaNet
from flopcalc.kinds.latent import LatentAttention
from flopcalc.kinds.mamba2 import Mamba2
from flopcalc.kinds.masks import Mask
from flopcalc.kinds.mlp import Mlp
from flopcalc.kinds.moe import Moe
from flopcalc.kinds.sparse_latent import SparseLatentAttention

pytestmark = pytest.mark.engine

CODEBASES = ("megatron_lm", "megatron_lm_hybrid", "maxtext")


# ============================================================ Megatron-LM, transcribed (d98e8a64)

def mlp_layer_flops(total_tokens, hidden_size, expansion=4, swiglu=False):
    scale_factor = F(3, 2) if swiglu else 1
    return 4 * expansion * scale_factor * total_tokens * hidden_size**2


def moe_layer_flops(total_tokens, hidden_size, moe_ffn_hidden_size,
                    shared_expert_ffn_hidden_size, num_experts_routed_to,
                    moe_latent_size=None, swiglu=False):
    scale_factor = F(3, 2) if swiglu else 1
    if moe_latent_size is None:
        routed_flops = (4 * total_tokens * hidden_size *
                        moe_ffn_hidden_size * num_experts_routed_to * scale_factor)
    else:
        routed_flops = (4 * total_tokens * moe_latent_size *
                        moe_ffn_hidden_size * num_experts_routed_to * scale_factor)
        routed_flops += (4 * total_tokens * hidden_size * moe_latent_size)
    shared_flops = 4 * total_tokens * hidden_size * shared_expert_ffn_hidden_size * scale_factor
    return routed_flops + shared_flops


def attn_layer_flops(total_tokens, seqlen_squared_sum, hidden_size, num_heads, gqa=True,
                     gqa_groups=8, kv_channels=None):
    p = F(kv_channels * num_heads, hidden_size) if kv_channels else 1
    g = gqa_groups if gqa else num_heads
    return (
        4 * total_tokens * hidden_size * p
        * (hidden_size + hidden_size * F(g, num_heads))
        + 2 * seqlen_squared_sum * hidden_size * p
    )


def mamba_layer_flops(total_tokens, hidden_size, state_dim=16, head_dim=64, num_groups=1,
                      num_heads=128):
    d_in = 2 * hidden_size
    if num_heads:
        nheads = num_heads
    else:
        nheads = d_in // head_dim
    return (
        (2 * total_tokens * hidden_size * (2 * d_in + 2 * num_groups * state_dim + nheads))
        + (7 * total_tokens * d_in * state_dim)
        + (2 * total_tokens * d_in * hidden_size)
    )


def gdn_layer_flops(total_tokens, hidden_size, qk_head_dim=128, v_head_dim=128,
                    num_qk_heads=16, num_v_heads=32, conv_kernel_dim=4, use_gdn2=False):
    qk_dim = qk_head_dim * num_qk_heads
    v_dim = v_head_dim * num_v_heads
    if use_gdn2:
        in_proj_dim = 4 * qk_dim + 3 * v_dim
    else:
        in_proj_dim = 2 * qk_dim + 2 * v_dim + 2 * num_v_heads
    return (
        2 * total_tokens * (
            hidden_size * in_proj_dim
            + conv_kernel_dim * (2 * qk_dim + v_dim)
            + num_v_heads * (v_head_dim ** 2) * 4
            + hidden_size * v_dim
        )
    )


def hybrid_flops(total_tokens, seqlen_squared_sum, hidden_size,
                 num_attn_layers, num_mamba_layers, num_mlp_layers, num_moe_layers,
                 gdp_num_householder, num_gdn_layers=0,
                 mamba_state_dim=128, mamba_head_dim=64, mamba_num_groups=8, mamba_num_heads=128,
                 num_attn_heads=32, gqa=True, gqa_groups=8, kv_channels=None,
                 mlp_expansion=4, swiglu=False, moe_latent_size=None,
                 moe_ffn_hidden_size=2048, shared_expert_ffn_hidden_size=2048,
                 num_experts_routed_to=1, use_gated_delta_product=False,
                 gdn_qk_head_dim=128, gdn_v_head_dim=128, gdn_num_qk_heads=16, gdn_num_v_heads=32,
                 gdn_conv_kernel_dim=4, gdn_use_gdn2=False, vocab_size=256000, mtp_num_layers=0):
    assert not use_gated_delta_product, "gated delta product layers: not transcribed"
    mamba_flops = mamba_layer_flops(total_tokens, hidden_size, mamba_state_dim, mamba_head_dim,
                                    mamba_num_groups, mamba_num_heads)
    flops_fwd = (
        num_attn_layers * attn_layer_flops(total_tokens, seqlen_squared_sum, hidden_size,
                                           num_attn_heads, gqa, gqa_groups, kv_channels)
        + num_mlp_layers * mlp_layer_flops(total_tokens, hidden_size, mlp_expansion, swiglu)
        + num_mamba_layers * mamba_flops
        + num_moe_layers * moe_layer_flops(total_tokens, hidden_size, moe_ffn_hidden_size,
                                           shared_expert_ffn_hidden_size, num_experts_routed_to,
                                           moe_latent_size, swiglu)
        + num_gdn_layers * gdn_layer_flops(total_tokens, hidden_size, gdn_qk_head_dim,
                                           gdn_v_head_dim, gdn_num_qk_heads, gdn_num_v_heads,
                                           gdn_conv_kernel_dim, gdn_use_gdn2)
        + (2 * total_tokens * hidden_size * vocab_size * (1 + mtp_num_layers))
    )
    return flops_fwd * 3


def get_hybrid_layer_counts(pattern: str) -> dict[str, int]:
    """hybrid_layer_allocation.py: layer symbols of the main pattern (pipes skipped), plus the
    MTP pattern once per depth ('/'-separated, all alike)."""
    main, *mtp = pattern.split("/")
    counts = {symbol: 0 for symbol in "MG*D+-E"}
    for char in main:
        if char in counts:
            counts[char] += 1
    if mtp and any(mtp):
        assert all(part == mtp[0] for part in mtp)
        for char in mtp[0]:
            counts[char] += len(mtp)
    return counts


def transformer_flops(args, total_real_tokens_in_batch, seqlen_squared_sum_in_batch):
    if not args.group_query_attention:
        args.num_query_groups = args.num_attention_heads
    if args.num_experts is None:
        num_dense_layers = args.num_layers
        num_moe_layers = 0
        num_experts_routed_to = 0
        last_layer_is_moe = 0
    else:
        if isinstance(args.moe_layer_freq, int):
            moe_layer_pattern = [
                1 if (i % args.moe_layer_freq == 0) else 0 for i in range(args.num_layers)
            ]
        elif isinstance(args.moe_layer_freq, list):
            moe_layer_pattern = args.moe_layer_freq
        else:
            raise RuntimeError("Illegal --moe-layer-freq argument provided!")
        assert len(moe_layer_pattern) == args.num_layers
        num_moe_layers = sum(moe_layer_pattern)
        num_dense_layers = args.num_layers - num_moe_layers
        num_experts_routed_to = args.moe_router_topk
        last_layer_is_moe = moe_layer_pattern[-1]

    if args.mtp_num_layers is not None:
        mtp_num_layers = args.mtp_num_layers
        num_moe_layers += last_layer_is_moe * mtp_num_layers
        num_dense_layers += (1 - last_layer_is_moe) * mtp_num_layers
        num_layers = args.num_layers + mtp_num_layers
    else:
        mtp_num_layers = 0
        num_layers = args.num_layers

    moe_ffn_hidden_size = (args.moe_ffn_hidden_size if args.moe_ffn_hidden_size is not None
                           else args.ffn_hidden_size)
    moe_latent_size = args.moe_latent_size
    shared_expert_ffn_hidden_size = (0 if args.moe_shared_expert_intermediate_size is None
                                     else args.moe_shared_expert_intermediate_size)

    forward_backward_expansion_factor = 3
    fma_expansion_factor = 2
    ffn_expansion_factor = 3 if args.swiglu else 2

    if args.multi_latent_attention:
        assert not args.group_query_attention
        if args.q_lora_rank is None:
            q_term = (args.hidden_size * args.num_attention_heads
                      * (args.qk_head_dim + args.qk_pos_emb_head_dim))
        else:
            q_term = args.q_lora_rank * (
                args.hidden_size
                + args.num_attention_heads * (args.qk_head_dim + args.qk_pos_emb_head_dim)
                + 1
            )
        standard_self_attn_term = (
            forward_backward_expansion_factor
            * fma_expansion_factor
            * (
                q_term
                + args.kv_lora_rank
                * (args.hidden_size
                   + args.num_attention_heads * (args.qk_head_dim + args.v_head_dim) + 1)
                + args.hidden_size * args.qk_pos_emb_head_dim
                + (args.num_attention_heads * args.v_head_dim) * args.hidden_size
            )
        )
        standard_self_attn_core_term = (
            forward_backward_expansion_factor
            * fma_expansion_factor
            * (
                F(args.num_attention_heads * (args.qk_head_dim + args.qk_pos_emb_head_dim), 2)
                + F(args.num_attention_heads * args.v_head_dim, 2)
            )
        )
    else:
        query_projection_size = args.kv_channels * args.num_attention_heads
        key_projection_size = args.kv_channels * args.num_query_groups
        value_projection_size = args.kv_channels * args.num_query_groups
        gate_projection_size = query_projection_size if args.attention_output_gate else 0
        standard_self_attn_term = (
            forward_backward_expansion_factor
            * fma_expansion_factor
            * (
                args.hidden_size
                * (query_projection_size + key_projection_size + value_projection_size
                   + gate_projection_size)
                + query_projection_size * args.hidden_size
            )
        )
        standard_self_attn_core_term = (
            forward_backward_expansion_factor
            * fma_expansion_factor
            * F(query_projection_size, 2)
            * 2
        )

    if args.experimental_attention_variant in ("gdn", "gdn2", "gated_delta_net"):
        if isinstance(args.linear_attention_freq, int):
            linear_attention_pattern = [
                0 if ((i + 1) % args.linear_attention_freq == 0) else 1 for i in range(num_layers)
            ]
        elif isinstance(args.linear_attention_freq, list):
            linear_attention_pattern = args.linear_attention_freq
            assert len(linear_attention_pattern) == num_layers
        else:
            raise ValueError("linear_attention_freq")
        num_linear_attention_layers = sum(linear_attention_pattern)
        num_standard_attention_layers = num_layers - num_linear_attention_layers
        qk_head_dim = args.linear_key_head_dim
        v_head_dim = args.linear_value_head_dim
        num_qk_heads = args.linear_num_key_heads
        num_v_heads = args.linear_num_value_heads
        qk_dim = qk_head_dim * num_qk_heads
        v_dim = v_head_dim * num_v_heads
        if args.experimental_attention_variant == "gdn2":
            in_proj_dim = 4 * qk_dim + 3 * v_dim
        else:
            in_proj_dim = 2 * qk_dim + 2 * v_dim + 2 * num_v_heads
        linear_self_attn_term = (
            forward_backward_expansion_factor
            * fma_expansion_factor
            * (
                args.hidden_size * in_proj_dim
                + args.linear_conv_kernel_dim * (2 * qk_dim + v_dim)
                + num_v_heads * (v_head_dim ** 2) * 4
                + args.hidden_size * v_dim
            )
        )
    else:
        num_linear_attention_layers = 0
        linear_self_attn_term = 0
        num_standard_attention_layers = num_layers

    self_attn_term = (linear_self_attn_term * num_linear_attention_layers
                      + standard_self_attn_term * num_standard_attention_layers)
    self_attn_core_term = standard_self_attn_core_term * num_standard_attention_layers

    return (
        total_real_tokens_in_batch
        * (
            forward_backward_expansion_factor
            * fma_expansion_factor
            * args.hidden_size
            * (
                (args.ffn_hidden_size * ffn_expansion_factor) * num_dense_layers
                + (
                    (moe_ffn_hidden_size * num_experts_routed_to * ffn_expansion_factor)
                    if moe_latent_size is None
                    else (
                        F(moe_ffn_hidden_size * num_experts_routed_to * ffn_expansion_factor
                          * moe_latent_size, args.hidden_size)
                        + 2 * moe_latent_size
                    )
                )
                * num_moe_layers
                + (shared_expert_ffn_hidden_size * ffn_expansion_factor) * num_moe_layers
            )
            + self_attn_term
            + forward_backward_expansion_factor
            * fma_expansion_factor
            * mtp_num_layers
            * (3 * args.hidden_size + 2 * args.hidden_size * args.hidden_size)
            + forward_backward_expansion_factor
            * fma_expansion_factor
            * args.hidden_size
            * args.padded_vocab_size
            * (mtp_num_layers + 1)
        )
        + seqlen_squared_sum_in_batch * self_attn_core_term
    )


def num_floating_point_operations(args, batch_size, seqlen_squared_sum_in_batch=None,
                                  total_real_tokens_in_batch=None):
    if seqlen_squared_sum_in_batch is None:
        seqlen_squared_sum_in_batch = batch_size * args.seq_length * args.seq_length
    if total_real_tokens_in_batch is None:
        total_real_tokens_in_batch = batch_size * args.seq_length
    if args.hybrid_layer_pattern is not None:  # is_hybrid_model
        counts = get_hybrid_layer_counts(args.hybrid_layer_pattern)
        mtp_num_layers = args.mtp_num_layers
        if mtp_num_layers is None:
            mtp_num_layers = 0
        return hybrid_flops(
            total_tokens=total_real_tokens_in_batch,
            seqlen_squared_sum=seqlen_squared_sum_in_batch,
            hidden_size=args.hidden_size,
            num_attn_layers=counts["*"], num_mamba_layers=counts["M"],
            num_mlp_layers=counts["-"], num_moe_layers=counts["E"], num_gdn_layers=counts["G"],
            mamba_state_dim=args.mamba_state_dim, mamba_head_dim=args.mamba_head_dim,
            mamba_num_groups=args.mamba_num_groups, mamba_num_heads=args.mamba_num_heads,
            gdp_num_householder=args.gdp_num_householder,
            num_attn_heads=args.num_attention_heads, gqa=args.group_query_attention,
            gqa_groups=args.num_query_groups, kv_channels=args.kv_channels,
            mlp_expansion=F(args.ffn_hidden_size, args.hidden_size), swiglu=args.swiglu,
            use_gated_delta_product=False, moe_latent_size=args.moe_latent_size,
            moe_ffn_hidden_size=(args.moe_ffn_hidden_size if args.moe_ffn_hidden_size is not None
                                 else args.ffn_hidden_size),
            shared_expert_ffn_hidden_size=(0 if args.moe_shared_expert_intermediate_size is None
                                           else args.moe_shared_expert_intermediate_size),
            num_experts_routed_to=args.moe_router_topk,
            gdn_qk_head_dim=args.linear_key_head_dim or 128,
            gdn_v_head_dim=args.linear_value_head_dim or 128,
            gdn_num_qk_heads=args.linear_num_key_heads or 16,
            gdn_num_v_heads=args.linear_num_value_heads or 32,
            gdn_conv_kernel_dim=args.linear_conv_kernel_dim or 4,
            gdn_use_gdn2=(args.experimental_attention_variant == "gdn2"),
            vocab_size=args.padded_vocab_size,
            mtp_num_layers=mtp_num_layers,
        )
    return transformer_flops(args, total_real_tokens_in_batch, seqlen_squared_sum_in_batch)


def megatron_args(**given: Any) -> SimpleNamespace:
    """Megatron-LM's args namespace: its argparse defaults for the fields the function reads,
    then what `validate_args` fills in (kv_channels = hidden / heads, ffn_hidden_size = 4h)."""
    args = dict(
        group_query_attention=False, num_query_groups=1, num_experts=None, moe_layer_freq=1,
        moe_router_topk=2, mtp_num_layers=None, moe_ffn_hidden_size=None, moe_latent_size=None,
        moe_shared_expert_intermediate_size=None, swiglu=False, multi_latent_attention=False,
        q_lora_rank=None, kv_lora_rank=32, qk_head_dim=128, qk_pos_emb_head_dim=64,
        v_head_dim=128, attention_output_gate=False, experimental_attention_variant=None,
        linear_attention_freq=None, linear_key_head_dim=None, linear_value_head_dim=None,
        linear_num_key_heads=None, linear_num_value_heads=None, linear_conv_kernel_dim=None,
        hybrid_layer_pattern=None, mamba_state_dim=128, mamba_head_dim=64, mamba_num_groups=8,
        mamba_num_heads=None, gdp_num_householder=1, kv_channels=None, ffn_hidden_size=None)
    args.update(given)
    if args["kv_channels"] is None:
        args["kv_channels"] = args["hidden_size"] // args["num_attention_heads"]
    if args["ffn_hidden_size"] is None:
        args["ffn_hidden_size"] = 4 * args["hidden_size"]
    return SimpleNamespace(**args)


def megatron_per_token(args: SimpleNamespace, seq: int) -> F:
    """num_floating_point_operations for one sequence of `seq` tokens, per token."""
    args.seq_length = seq
    return F(num_floating_point_operations(args, batch_size=1), seq)


# =============================================================== MaxText, transcribed (e591f30c)

def calculate_ffn_mamtul_tflops_per_device(config, mlp_dim, in_dim=None):
    if in_dim is None:
        in_dim = config.emb_dim
    ffn1_flops = (2 * config.per_device_batch_size * config.max_target_length * mlp_dim * in_dim
                  * len(config.mlp_activations))
    ffn2_flops = 2 * config.per_device_batch_size * config.max_target_length * mlp_dim * in_dim
    return ffn1_flops + ffn2_flops


def get_shared_expert_mlp_dim(config):
    return config.mlp_dim if config.decoder_block == "gemma4" else config.moe_mlp_dim


def get_dense_moe_layers(config):
    if config.decoder_block == "deepseek":
        return (config.first_num_dense_layers,
                config.num_decoder_layers - config.first_num_dense_layers)
    if config.decoder_block == "llama4":
        num_moe_layers = config.num_decoder_layers // config.interleave_moe_layer_step
        return config.num_decoder_layers - num_moe_layers, num_moe_layers
    if config.decoder_block in ("qwen3_next", "qwen3_5", "deepseek4"):
        return 0, config.num_decoder_layers
    if config.decoder_block == "default":
        raise ValueError("Unsupported decoder block for dense/MoE layer calculation")
    if config.num_experts > 1:
        return 0, config.num_decoder_layers
    return config.num_decoder_layers, 0


def calculate_routed_and_shared_ffn_tflops_per_device(config):
    gate_flops = (2 * config.per_device_batch_size * config.max_target_length * config.emb_dim
                  * config.num_experts)
    num_dense_layers, num_moe_layers = get_dense_moe_layers(config)
    dense_ffn_flops = calculate_ffn_mamtul_tflops_per_device(config, config.mlp_dim) \
        * num_dense_layers
    shared_experts_flops = calculate_ffn_mamtul_tflops_per_device(
        config, get_shared_expert_mlp_dim(config)) * config.shared_experts
    routed_experts_flops = calculate_ffn_mamtul_tflops_per_device(
        config, config.moe_mlp_dim) * config.num_experts_per_tok
    moe_ffn_flops = (gate_flops + shared_experts_flops + routed_experts_flops) * num_moe_layers
    return dense_ffn_flops + moe_ffn_flops


def calculate_gated_delta_net_flops_per_device(config):
    B, S, E = config.per_device_batch_size, config.max_target_length, config.emb_dim
    H_k, H_v = config.gdn_num_key_heads, config.gdn_num_value_heads
    D_k, D_v = config.gdn_key_head_dim, config.gdn_value_head_dim
    K_conv = config.gdn_conv_kernel_dim
    K_dim, V_dim = H_k * D_k, H_v * D_v
    flops_qkvz_ba = 2 * B * S * E * (2 * K_dim + 2 * V_dim + 2 * H_v)
    flops_out = 2 * B * S * E * V_dim
    flops_projections = flops_qkvz_ba + flops_out
    flops_conv = 2 * B * S * K_conv * (2 * K_dim + V_dim)
    flops_core_per_token = H_v * (D_k * D_v) * 8
    flops_core = B * S * flops_core_per_token
    return flops_projections + flops_conv, flops_core


def calculate_indexer_mask_ratio(indexer_topk, max_target_length):
    T, K = F(max_target_length), F(indexer_topk)
    ratio = K / T
    return ratio - (F(1, 2) * ratio**2)


def calculate_indexer_tflops_per_device(config):
    batch_len = config.per_device_batch_size * config.max_target_length
    q_flops = 2 * batch_len * config.q_lora_rank * config.indexer_n_heads * config.indexer_head_dim
    k_flops = 2 * batch_len * config.emb_dim * config.indexer_head_dim
    head_weight_flops = 2 * batch_len * config.emb_dim * config.indexer_n_heads
    proj_flops = q_flops + k_flops + head_weight_flops
    qk_product_flops = (2 * batch_len * config.max_target_length * config.indexer_n_heads
                        * config.indexer_head_dim)
    head_reduction_flops = 2 * batch_len * config.max_target_length * config.indexer_n_heads
    scoring_flops = F(qk_product_flops + head_reduction_flops, 2)
    return proj_flops, scoring_flops


def calculate_mla_tflops_per_device(config):
    batch_len = config.per_device_batch_size * config.max_target_length
    qk_head_dim_sum = config.qk_nope_head_dim + config.qk_rope_head_dim
    if config.q_lora_rank == 0:
        q_flops = 2 * batch_len * config.emb_dim * config.num_query_heads * qk_head_dim_sum
    else:
        q_flops = 2 * batch_len * (config.emb_dim * config.q_lora_rank
                                   + config.q_lora_rank * config.num_query_heads * qk_head_dim_sum)
    kv_flops = 2 * batch_len * (
        config.emb_dim * (config.kv_lora_rank + config.qk_rope_head_dim)
        + config.kv_lora_rank * config.num_query_heads
        * (config.qk_nope_head_dim + config.v_head_dim))
    qkv_flops = q_flops + kv_flops
    if config.use_indexer and config.max_target_length > config.indexer_topk:
        indexer_proj_flops, indexer_scoring_flops = calculate_indexer_tflops_per_device(config)
        qkv_flops += indexer_proj_flops
        multiplier = calculate_indexer_mask_ratio(config.indexer_topk, config.max_target_length)
        attention_flops = (2 * batch_len * config.max_target_length * config.num_query_heads
                           * (qk_head_dim_sum + config.v_head_dim) * multiplier)
        attention_flops += indexer_scoring_flops
    else:
        attention_flops = (2 * batch_len * config.max_target_length * config.num_query_heads
                           * (qk_head_dim_sum + config.v_head_dim))
        attention_flops = F(attention_flops, 2)
    projection_flops = 2 * batch_len * config.emb_dim * config.num_query_heads * config.v_head_dim
    return qkv_flops, attention_flops, projection_flops


def calculate_gemma2_tflops_training_per_device(config, total_ffn_flops, qkv_flops,
                                                projection_flops, embedding_flops):
    window = min(config.sliding_window_size, config.max_target_length)
    global_causal_flops = (2 * config.per_device_batch_size * config.max_target_length**2
                           * config.num_query_heads * config.head_dim)
    local_causal_flops = (4 * config.per_device_batch_size
                          * (config.max_target_length * window - F(window**2, 2))
                          * config.num_query_heads * config.head_dim)
    causal_attention_flops = global_causal_flops + local_causal_flops
    attention_tflops = F(causal_attention_flops * config.num_decoder_layers * 3, 10**12)
    learnable_weight_tflops = F(((total_ffn_flops + qkv_flops + projection_flops)
                                 * config.num_decoder_layers * 2 + embedding_flops) * 3, 10**12)
    return attention_tflops, learnable_weight_tflops


def calculate_mixed_attention_model_tflops_training_per_device(
        config, total_ffn_flops_all_layers, qkv_flops, projection_flops, embedding_flops,
        attention_pattern_length):
    num_layers = config.num_decoder_layers
    num_global_layers = num_layers // attention_pattern_length
    num_local_layers = num_layers - num_global_layers
    global_causal_flops_per_layer = (2 * config.per_device_batch_size
                                     * config.max_target_length**2 * config.num_query_heads
                                     * config.head_dim)
    window = min(config.sliding_window_size, config.max_target_length)
    local_causal_flops_per_layer = (4 * config.per_device_batch_size
                                    * (config.max_target_length * window - F(window**2, 2))
                                    * config.num_query_heads * config.head_dim)
    causal_attention_flops = (num_global_layers * global_causal_flops_per_layer
                              + num_local_layers * local_causal_flops_per_layer)
    attention_tflops = F(causal_attention_flops * 3, 10**12)
    total_learnable_flops = total_ffn_flops_all_layers
    total_learnable_flops += (qkv_flops + projection_flops) * num_layers + embedding_flops
    learnable_weight_tflops = F(total_learnable_flops * 3, 10**12)
    return attention_tflops, learnable_weight_tflops


def _calculate_chunked_attention_flops_per_layer(config, seq_len, chunk_size):
    num_chunks = seq_len // chunk_size
    rem_chunk_size = seq_len % chunk_size
    chunked_complexity = (num_chunks * chunk_size**2) + (rem_chunk_size**2)
    return (4 * config.per_device_batch_size * chunked_complexity * config.num_query_heads
            * config.head_dim)


def calculate_llama4_attention_tflops(config):
    num_layers = config.num_decoder_layers
    seq_len = config.max_target_length
    chunk_size = config.chunk_attn_window_size
    num_global_layers = num_layers // config.nope_layer_interval
    num_chunked_layers = num_layers - num_global_layers
    global_attention_flops_per_layer = (4 * config.per_device_batch_size * seq_len**2
                                        * config.num_query_heads * config.head_dim)
    chunked_attention_flops_per_layer = _calculate_chunked_attention_flops_per_layer(
        config, seq_len, chunk_size)
    noncausal_attention_flops = (num_global_layers * global_attention_flops_per_layer
                                 + num_chunked_layers * chunked_attention_flops_per_layer)
    causal_attention_flops = F(noncausal_attention_flops, 2)
    return causal_attention_flops * 3 / 10**12


def calculate_tflops_training_per_device(config):
    """Returns (total_tflops, learnable_weight_tflops, attention_tflops), as upstream."""
    assert config.decoder_block not in ("gemma4", "gemma4_small", "deepseek4",
                                        "qwen3_custom_moe"), "not transcribed"
    assert not config.engram_layers and not config.use_multimodal, "not transcribed"
    is_ffn_flops_already_total = False
    if config.num_experts > 1:
        if config.decoder_block in ("deepseek", "llama4", "qwen3_next", "qwen3_5", "gemma4",
                                    "deepseek4"):
            total_ffn_flops = calculate_routed_and_shared_ffn_tflops_per_device(config)
            is_ffn_flops_already_total = True
        else:
            gate_flops = (2 * config.per_device_batch_size * config.max_target_length
                          * config.emb_dim * config.num_experts)
            total_ffn_flops = gate_flops + calculate_ffn_mamtul_tflops_per_device(
                config, config.moe_mlp_dim) * config.num_experts_per_tok
    else:
        total_ffn_flops = calculate_ffn_mamtul_tflops_per_device(config, config.mlp_dim)

    total_ffn_flops_all_layers = (total_ffn_flops if is_ffn_flops_already_total
                                  else total_ffn_flops * config.num_decoder_layers)

    if config.attention_type == "mla":
        qkv_flops, causal_attention_flops, projection_flops = \
            calculate_mla_tflops_per_device(config)
    else:
        kv_multiplier = 1 if config.share_kv_projections else 2
        qkv_flops = (2 * config.per_device_batch_size * config.max_target_length * config.emb_dim
                     * (config.num_query_heads + kv_multiplier * config.num_kv_heads)
                     * config.head_dim)
        noncausal_attention_flops = (4 * config.per_device_batch_size
                                     * config.max_target_length**2 * config.num_query_heads
                                     * config.head_dim)
        projection_flops = (2 * config.per_device_batch_size * config.max_target_length
                            * config.emb_dim * config.num_query_heads * config.head_dim)
        causal_attention_flops = F(noncausal_attention_flops, 2)

    embedding_flops = (2 * config.per_device_batch_size * config.max_target_length
                       * config.emb_dim * config.vocab_size)

    if config.decoder_block == "gemma2":
        attention_tflops, learnable_weight_tflops = calculate_gemma2_tflops_training_per_device(
            config, total_ffn_flops, qkv_flops, projection_flops, embedding_flops)
    elif config.decoder_block == "gemma3":
        attention_tflops, learnable_weight_tflops = \
            calculate_mixed_attention_model_tflops_training_per_device(
                config, total_ffn_flops_all_layers, qkv_flops, projection_flops,
                embedding_flops, attention_pattern_length=6)
    elif config.decoder_block == "gpt_oss":
        attention_tflops, learnable_weight_tflops = \
            calculate_mixed_attention_model_tflops_training_per_device(
                config, total_ffn_flops_all_layers, qkv_flops, projection_flops,
                embedding_flops, attention_pattern_length=2)
    elif config.decoder_block == "llama4":
        attention_tflops = calculate_llama4_attention_tflops(config)
        learnable_weight_tflops = F((total_ffn_flops_all_layers
                                     + (qkv_flops + projection_flops) * config.num_decoder_layers
                                     + embedding_flops) * 3, 10**12)
    elif config.decoder_block == "deepseek":
        learnable_weight_tflops = F((total_ffn_flops_all_layers
                                     + (qkv_flops + projection_flops) * config.num_decoder_layers
                                     + embedding_flops) * 3, 10**12)
        attention_tflops = causal_attention_flops * config.num_decoder_layers * 3 / 10**12
    elif config.decoder_block in ("qwen3_next", "qwen3_5"):
        gdn_weight_flops_per_layer, gdn_attn_flops_per_layer = \
            calculate_gated_delta_net_flops_per_device(config)
        cycle_interval = config.inhomogeneous_layer_cycle_interval
        num_full_attn_layers = config.num_decoder_layers // cycle_interval
        num_linear_attn_layers = config.num_decoder_layers - num_full_attn_layers
        total_weights = (total_ffn_flops_all_layers + embedding_flops
                         + (qkv_flops + projection_flops) * num_full_attn_layers
                         + gdn_weight_flops_per_layer * num_linear_attn_layers)
        learnable_weight_tflops = F(total_weights * 3, 10**12)
        total_attn = (causal_attention_flops * num_full_attn_layers
                      + gdn_attn_flops_per_layer * num_linear_attn_layers)
        attention_tflops = total_attn * 3 / F(10**12)
    else:
        learnable_weight_tflops = F((total_ffn_flops_all_layers
                                     + (qkv_flops + projection_flops) * config.num_decoder_layers
                                     + embedding_flops) * 3, 10**12)
        attention_tflops = causal_attention_flops * config.num_decoder_layers * 3 / F(10**12)

    mtp_num_layers = getattr(config, "mtp_num_layers", 0)
    if mtp_num_layers > 0:
        if config.num_experts > 1:
            gate_flops = (2 * config.per_device_batch_size * config.max_target_length
                          * config.emb_dim * config.num_experts)
            if config.decoder_block in ("deepseek", "llama4", "qwen3_next", "gemma4"):
                shared_flops = calculate_ffn_mamtul_tflops_per_device(
                    config, get_shared_expert_mlp_dim(config)) * config.shared_experts
                routed_flops = calculate_ffn_mamtul_tflops_per_device(
                    config, config.moe_mlp_dim) * config.num_experts_per_tok
                last_layer_ffn_flops = gate_flops + shared_flops + routed_flops
            else:
                routed_flops = calculate_ffn_mamtul_tflops_per_device(
                    config, config.moe_mlp_dim) * config.num_experts_per_tok
                last_layer_ffn_flops = gate_flops + routed_flops
        else:
            last_layer_ffn_flops = calculate_ffn_mamtul_tflops_per_device(config, config.mlp_dim)
        mtp_weight_flops = (last_layer_ffn_flops + qkv_flops + projection_flops) * mtp_num_layers
        mtp_attn_flops = causal_attention_flops * mtp_num_layers
        learnable_weight_tflops += F(mtp_weight_flops * 3, 10**12)
        attention_tflops += mtp_attn_flops * 3 / F(10**12)

    learnable_weight_tflops = learnable_weight_tflops * config.gradient_accumulation_steps
    attention_tflops = attention_tflops * config.gradient_accumulation_steps
    assert not config.use_dpo, "not transcribed"
    reference_model_tflops = 0
    total_tflops = learnable_weight_tflops + attention_tflops + reference_model_tflops
    return total_tflops, learnable_weight_tflops, attention_tflops


def maxtext_config(**given: Any) -> SimpleNamespace:
    """MaxText's config: base.yml's defaults for the fields the function reads, then the
    model's (configs/models/*.yml names)."""
    config = dict(
        per_device_batch_size=1, gradient_accumulation_steps=1, num_experts=1,
        num_experts_per_tok=1, shared_experts=0, mtp_num_layers=0, share_kv_projections=False,
        attention_type="global", use_indexer=False, engram_layers=[], use_multimodal=False,
        use_dpo=False, q_lora_rank=0, kv_lora_rank=512, qk_nope_head_dim=128,
        qk_rope_head_dim=64, v_head_dim=128, mlp_activations=["silu", "linear"],
        first_num_dense_layers=0, interleave_moe_layer_step=1, nope_layer_interval=-1,
        chunk_attn_window_size=0, sliding_window_size=0, inhomogeneous_layer_cycle_interval=1,
        head_dim=128, indexer_head_dim=128, indexer_n_heads=64, indexer_topk=2048,
        moe_mlp_dim=-1, decoder_block="llama2")
    config.update(given)
    return SimpleNamespace(**config)


def maxtext_per_token(config: SimpleNamespace, seq: int) -> F:
    """calculate_tflops_training_per_device's total for one sequence on the device, per token."""
    config.max_target_length = seq
    total, weights, attention = calculate_tflops_training_per_device(config)
    assert total == weights + attention
    return total * 10**12 / F(config.per_device_batch_size * seq)


# ================================================= the models' upstream arguments, by hand

# Megatron-LM's GPT path: args as its training scripts would pass them for each model.
MEGATRON = {
    # GPT-3 175B: MHA, 4h plain GELU MLP, tied (the logits still counted), V = 50,257.
    "gpt3": dict(num_layers=96, hidden_size=12288, num_attention_heads=96,
                 padded_vocab_size=50257),
    "llama-3.1-8b": dict(num_layers=32, hidden_size=4096, num_attention_heads=32,
                         group_query_attention=True, num_query_groups=8, ffn_hidden_size=14336,
                         swiglu=True, padded_vocab_size=128256),
    "mistral-7b": dict(num_layers=32, hidden_size=4096, num_attention_heads=32,
                       group_query_attention=True, num_query_groups=8, ffn_hidden_size=14336,
                       swiglu=True, padded_vocab_size=32000),
    "mixtral-8x7b": dict(num_layers=32, hidden_size=4096, num_attention_heads=32,
                         group_query_attention=True, num_query_groups=8, ffn_hidden_size=14336,
                         swiglu=True, num_experts=8, moe_router_topk=2,
                         moe_ffn_hidden_size=14336, padded_vocab_size=32000),
    "qwen3-235b-a22b": dict(num_layers=94, hidden_size=4096, num_attention_heads=64,
                            group_query_attention=True, num_query_groups=4, kv_channels=128,
                            ffn_hidden_size=12288, swiglu=True, num_experts=128,
                            moe_router_topk=8, moe_ffn_hidden_size=1536,
                            padded_vocab_size=151936),
    # DeepSeek-V3: MLA, 3 dense layers then 58 MoE, one MTP module; V3.2's DSA layers take
    # the same MLA branch (experimental_attention_variant "dsa" is not a linear variant).
    "deepseek-v3": dict(num_layers=61, hidden_size=7168, num_attention_heads=128,
                        multi_latent_attention=True, q_lora_rank=1536, kv_lora_rank=512,
                        qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128,
                        ffn_hidden_size=18432, swiglu=True, num_experts=256,
                        moe_layer_freq=[0] * 3 + [1] * 58, moe_router_topk=8,
                        moe_ffn_hidden_size=2048, moe_shared_expert_intermediate_size=2048,
                        mtp_num_layers=1, padded_vocab_size=129280),
    # Qwen3-Next: gated attention every 4th layer, gated DeltaNet otherwise, all MoE.
    "qwen3-next-80b-a3b": dict(num_layers=48, hidden_size=2048, num_attention_heads=16,
                               group_query_attention=True, num_query_groups=2, kv_channels=256,
                               attention_output_gate=True, experimental_attention_variant="gdn",
                               linear_attention_freq=4, linear_key_head_dim=128,
                               linear_value_head_dim=128, linear_num_key_heads=16,
                               linear_num_value_heads=32, linear_conv_kernel_dim=4,
                               ffn_hidden_size=512, swiglu=True, num_experts=512,
                               moe_router_topk=10, moe_ffn_hidden_size=512,
                               moe_shared_expert_intermediate_size=512,
                               padded_vocab_size=151936),
    # Gemma 3 27B: its gated GELU MLP is Megatron-LM's --quick-geglu, not --swiglu.
    "gemma-3-27b": dict(num_layers=62, hidden_size=5376, num_attention_heads=32,
                        group_query_attention=True, num_query_groups=16, kv_channels=128,
                        ffn_hidden_size=21504, swiglu=False, padded_vocab_size=262208),
    "llama-4-scout": dict(num_layers=48, hidden_size=5120, num_attention_heads=40,
                          group_query_attention=True, num_query_groups=8, kv_channels=128,
                          ffn_hidden_size=16384, swiglu=True, num_experts=16, moe_router_topk=1,
                          moe_ffn_hidden_size=8192, moe_shared_expert_intermediate_size=8192,
                          padded_vocab_size=202048),
    "gpt-oss-120b": dict(num_layers=36, hidden_size=2880, num_attention_heads=64,
                         group_query_attention=True, num_query_groups=8, kv_channels=64,
                         ffn_hidden_size=2880, swiglu=True, num_experts=128, moe_router_topk=4,
                         moe_ffn_hidden_size=2880, padded_vocab_size=201088),
}
MEGATRON["deepseek-v3.2"] = dict(MEGATRON["deepseek-v3"], experimental_attention_variant="dsa")

# Megatron-LM's hybrid path: a hybrid_layer_pattern, one symbol per mixer or channel mixer.
NEMOTRON_H_8B = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"  # its published pattern
HYBRID = {
    "nemotron-h-8b": dict(hybrid_layer_pattern=NEMOTRON_H_8B, hidden_size=4096,
                          num_attention_heads=32, group_query_attention=True, num_query_groups=8,
                          kv_channels=128, ffn_hidden_size=21504, mamba_state_dim=128,
                          mamba_head_dim=64, mamba_num_groups=8, mamba_num_heads=128,
                          padded_vocab_size=131072),
    # Falcon-H1 7B: attention and Mamba-2 side by side in each of 44 layers, then the MLP;
    # its Mamba inner width 24·128 = 3,072 is not the 2·d the formula takes.
    "falcon-h1-7b": dict(hybrid_layer_pattern="*M-" * 44, hidden_size=3072,
                         num_attention_heads=12, group_query_attention=True, num_query_groups=2,
                         kv_channels=128, ffn_hidden_size=12288, swiglu=True,
                         mamba_state_dim=256, mamba_head_dim=128, mamba_num_groups=1,
                         mamba_num_heads=24, padded_vocab_size=130049),
    # Granite 4.0-H Small: attention at layers 5, 15, 25, 35, Mamba-2 elsewhere, MoE in every
    # layer with a shared MLP of 1,536.
    "granite-4.0-h-small": dict(hybrid_layer_pattern="MEMEMEMEME*EMEMEMEME" * 4,
                                hidden_size=4096, num_attention_heads=32,
                                group_query_attention=True, num_query_groups=8, kv_channels=128,
                                swiglu=True, num_experts=72, moe_router_topk=10,
                                moe_ffn_hidden_size=768,
                                moe_shared_expert_intermediate_size=1536, mamba_state_dim=128,
                                mamba_head_dim=64, mamba_num_groups=1, mamba_num_heads=128,
                                padded_vocab_size=100352),
    "qwen3-next-80b-a3b": dict(hybrid_layer_pattern="GEGEGE*E" * 12, hidden_size=2048,
                               num_attention_heads=16, group_query_attention=True,
                               num_query_groups=2, kv_channels=256, linear_key_head_dim=128,
                               linear_value_head_dim=128, linear_num_key_heads=16,
                               linear_num_value_heads=32, linear_conv_kernel_dim=4,
                               ffn_hidden_size=512, swiglu=True, num_experts=512,
                               moe_router_topk=10, moe_ffn_hidden_size=512,
                               moe_shared_expert_intermediate_size=512,
                               padded_vocab_size=151936),
    "llama-3.1-8b": dict(hybrid_layer_pattern="*-" * 32, hidden_size=4096,
                         num_attention_heads=32, group_query_attention=True, num_query_groups=8,
                         ffn_hidden_size=14336, swiglu=True, padded_vocab_size=128256),
}

# MaxText: configs/models/*.yml fields (model sizes from the preset).
MAXTEXT = {
    "gpt3": dict(decoder_block="gpt3", num_decoder_layers=96, emb_dim=12288, num_query_heads=96,
                 num_kv_heads=96, head_dim=128, mlp_dim=49152, mlp_activations=["gelu"],
                 vocab_size=50257),
    "llama-3.1-8b": dict(decoder_block="llama2", num_decoder_layers=32, emb_dim=4096,
                         num_query_heads=32, num_kv_heads=8, head_dim=128, mlp_dim=14336,
                         vocab_size=128256),
    # MaxText's Mistral block has no window: every layer causal.
    "mistral-7b": dict(decoder_block="mistral", num_decoder_layers=32, emb_dim=4096,
                       num_query_heads=32, num_kv_heads=8, head_dim=128, mlp_dim=14336,
                       vocab_size=32000),
    "mixtral-8x7b": dict(decoder_block="mixtral", num_decoder_layers=32, emb_dim=4096,
                         num_query_heads=32, num_kv_heads=8, head_dim=128, mlp_dim=14336,
                         moe_mlp_dim=14336, num_experts=8, num_experts_per_tok=2,
                         vocab_size=32000),
    "qwen3-235b-a22b": dict(decoder_block="qwen3_moe", num_decoder_layers=94, emb_dim=4096,
                            num_query_heads=64, num_kv_heads=4, head_dim=128, mlp_dim=12288,
                            moe_mlp_dim=1536, num_experts=128, num_experts_per_tok=8,
                            vocab_size=151936),
    "deepseek-v3": dict(decoder_block="deepseek", attention_type="mla", num_decoder_layers=61,
                        emb_dim=7168, num_query_heads=128, num_kv_heads=128, mlp_dim=18432,
                        moe_mlp_dim=2048, first_num_dense_layers=3, num_experts=256,
                        num_experts_per_tok=8, shared_experts=1, q_lora_rank=1536,
                        kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
                        v_head_dim=128, mtp_num_layers=1, vocab_size=129280),
    "qwen3-next-80b-a3b": dict(decoder_block="qwen3_next", num_decoder_layers=48, emb_dim=2048,
                               num_query_heads=16, num_kv_heads=2, head_dim=256, mlp_dim=512,
                               moe_mlp_dim=512, num_experts=512, shared_experts=1,
                               num_experts_per_tok=10, inhomogeneous_layer_cycle_interval=4,
                               gdn_conv_kernel_dim=4, gdn_key_head_dim=128,
                               gdn_value_head_dim=128, gdn_num_key_heads=16,
                               gdn_num_value_heads=32, vocab_size=151936),
    "gemma-3-27b": dict(decoder_block="gemma3", num_decoder_layers=62, emb_dim=5376,
                        num_query_heads=32, num_kv_heads=16, head_dim=128, mlp_dim=21504,
                        mlp_activations=["gelu", "linear"], sliding_window_size=1024,
                        vocab_size=262208),
    "llama-4-scout": dict(decoder_block="llama4", num_decoder_layers=48, emb_dim=5120,
                          num_query_heads=40, num_kv_heads=8, head_dim=128, mlp_dim=8192,
                          moe_mlp_dim=8192, num_experts=16, shared_experts=1,
                          num_experts_per_tok=1, nope_layer_interval=4,
                          interleave_moe_layer_step=1, chunk_attn_window_size=8192,
                          vocab_size=202048),
    "gpt-oss-120b": dict(decoder_block="gpt_oss", num_decoder_layers=36, emb_dim=2880,
                         num_query_heads=64, num_kv_heads=8, head_dim=64, mlp_dim=2880,
                         moe_mlp_dim=2880, mlp_activations=["sigmoid", "linear"],
                         num_experts=128, num_experts_per_tok=4, sliding_window_size=128,
                         inhomogeneous_layer_cycle_interval=2, vocab_size=201088),
}
MAXTEXT["deepseek-v3.2"] = dict(MAXTEXT["deepseek-v3"], use_indexer=True, indexer_n_heads=64,
                                indexer_head_dim=128, indexer_topk=2048)


def row(name: str, seq: int, convention: str) -> Any:
    report = flopcalc.conventions(name, seq=seq)
    return next(r for r in report.conventions if r.name == convention)


def row_value(name: str, seq: int, convention: str) -> F:
    r = row(name, seq, convention)
    assert r.applicable and r.per_token_exact is not None, r.notes
    assert r.per_token == (int(r.per_token_exact) if F(r.per_token_exact).denominator == 1
                           else float(F(r.per_token_exact)))
    return F(r.per_token_exact)


# ============================================================== whole models, to the unit

SEQS = (2048, 20000)  # one below every window or chunk a preset has but Gemma's, one past all


@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("name", sorted(MEGATRON))
def test_megatron_lm_row_is_num_floating_point_operations(name, seq):
    assert row_value(name, seq, "megatron_lm") == megatron_per_token(
        megatron_args(**MEGATRON[name]), seq)


@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("name", sorted(HYBRID))
def test_megatron_lm_hybrid_row_is_hybrid_flops(name, seq):
    assert row_value(name, seq, "megatron_lm_hybrid") == megatron_per_token(
        megatron_args(**HYBRID[name]), seq)


@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("name", sorted(MAXTEXT))
def test_maxtext_row_is_calculate_tflops_training_per_device(name, seq):
    assert row_value(name, seq, "maxtext") == maxtext_per_token(
        maxtext_config(**MAXTEXT[name]), seq)


def test_the_paths_differ_where_the_code_does():
    """Llama 3.1 8B: the GPT and hybrid paths agree (MHA/GQA, SwiGLU, no MTP); Qwen3-Next: the
    hybrid path drops the output gate, 2·d·h·d_h per token on each of its 12 attention layers
    (3 passes); (DeepSeek-V3: the hybrid path has no MLA term; that row does not apply)."""
    s = 4096
    assert row_value("llama-3.1-8b", s, "megatron_lm") == \
        row_value("llama-3.1-8b", s, "megatron_lm_hybrid")
    gpt, hybrid = (row_value("qwen3-next-80b-a3b", s, c) for c in CODEBASES[:2])
    assert gpt - hybrid == 3 * 12 * 2 * 2048 * 16 * 256
    # MaxText on gemma-3-27b at 32,768: 52 window layers at 4·(s·w − w²/2)·h·d_h per sequence
    # and 10 global ones at 2·s²·h·d_h, against Megatron-LM's causal s/2 on all 62 (3 passes,
    # per token) — the attention cores differ by that much and the MLPs by one d·f matrix.
    s, w, h, dh, d, f = 32768, 1024, 32, 128, 5376, 21504
    maxtext_core = F(52 * 4 * (s * w - F(w * w, 2)) * h * dh + 10 * 2 * s * s * h * dh, s)
    megatron_core = 62 * 2 * s * h * dh
    diff = row_value("gemma-3-27b", s, "maxtext") - row_value("gemma-3-27b", s, "megatron_lm")
    assert diff == 3 * (maxtext_core - megatron_core + 62 * 2 * d * f)


def test_deepseek_v32_indexer_only_past_index_topk():
    """MaxText bypasses the indexer while s ≤ index_topk = 2,048 (dense causal MLA, V3's
    figure), and counts it past that."""
    assert row_value("deepseek-v3.2", 2048, "maxtext") == row_value("deepseek-v3", 2048,
                                                                    "maxtext")
    assert row_value("deepseek-v3.2", 4096, "maxtext") != row_value("deepseek-v3", 4096,
                                                                    "maxtext")
    notes = " ".join(row("deepseek-v3.2", 4096, "maxtext").notes)
    assert "K/s − (K/s)²/2" in notes


# ============================================================ where a codebase cannot count

@pytest.mark.parametrize("name, convention, why", [
    ("nemotron-h-8b", "megatron_lm", "Mamba-2 128x64"),
    ("nemotron-h-8b", "maxtext", "Mamba-2 128x64"),
    ("falcon-mamba-7b", "megatron_lm_hybrid", "Mamba-1"),
    ("kimi-linear-48b-a3b", "megatron_lm_hybrid", "Kimi delta attention"),
    # hybrid_flops counts only '*' attention: MLA layers ('+' in a pattern) would count 0
    ("deepseek-v3", "megatron_lm_hybrid", "latent attention"),
    ("minimax-text-01", "maxtext", "lightning"),
    ("t5-base", "megatron_lm", "decoder-only"),
    ("bert-base", "maxtext", "decoder-only"),
])
def test_not_applicable_rows_say_why(name, convention, why):
    r = row(name, 512, convention)
    assert r.applicable is False
    assert (r.per_token, r.per_token_exact, r.total, r.delta_pct) == (None, None, None, None)
    assert len(r.notes) == 1 and r.notes[0].startswith("not applicable") and why in r.notes[0]


def test_a_narrower_embedding_is_outside_every_codebase_formula():
    # OPT-350m's shape: a token table 512 wide projected to d = 768; the codebases take the
    # logits d_model wide, so each row says it does not apply, and how wide the table is
    report = flopcalc.conventions("gpt2", seq=512, set=["embed_dim=512"])
    notes = {r.name: tuple(r.notes) for r in report.conventions if not r.applicable}
    assert notes == {
        "megatron_lm": ("not applicable: Megatron-LM's GPT path (transformer_flops) takes the "
                        "logits d_model wide; this model's embedding is 512 wide",),
        "megatron_lm_hybrid": ("not applicable: Megatron-LM's hybrid path (hybrid_flops) takes "
                               "the logits d_model wide; this model's embedding is 512 wide",),
        "maxtext": ("not applicable: MaxText's calculate_tflops_training_per_device takes the "
                    "logits d_model wide; this model's embedding is 512 wide",)}


def test_spread_skips_rows_that_do_not_apply():
    report = flopcalc.conventions("nemotron-h-8b", seq=4096)
    applicable = [r for r in report.conventions if r.applicable]
    assert {report.spread.max, report.spread.min} <= {r.name for r in applicable}


# ========================================================= term by term, kind by kind

def gpt_path_term(seq: int, **given: Any) -> F:
    """One layer's forward FLOPs per token on the GPT path: a one-layer model with no MLP
    (ffn_hidden_size 0) and no vocabulary, divided by its 3 passes and its tokens."""
    args = megatron_args(num_layers=1, padded_vocab_size=0, **given)
    return megatron_per_token(args, seq) / 3


def maxtext_term(seq: int, **given: Any) -> F:
    """One decoder layer's forward FLOPs per token under MaxText, without vocabulary."""
    config = maxtext_config(num_decoder_layers=1, vocab_size=0, **given)
    return maxtext_per_token(config, seq) / 3


CAUSAL = Mask("causal")


@pytest.mark.parametrize("heads, kv_heads, head_dim, gate", [
    (12, 12, 64, False), (32, 8, 128, False), (16, 2, 256, True), (8, 1, 96, False)])
def test_attention_terms(heads, kv_heads, head_dim, gate):
    d, s = 1536, 3000
    a = Attention(heads=heads, kv_heads=kv_heads, qk_dim=head_dim, v_dim=head_dim, mask=CAUSAL,
                  gate=gate)
    gqa = dict(num_attention_heads=heads, group_query_attention=kv_heads != heads,
               num_query_groups=kv_heads, kv_channels=head_dim, hidden_size=d)
    assert a.formula("megatron_lm", d, s, local=True) == gpt_path_term(
        s, ffn_hidden_size=0, attention_output_gate=gate, **gqa)
    # attn_layer_flops, for T = s tokens of one sequence (s² pairs): no gate term
    assert a.formula("megatron_lm_hybrid", d, s, local=True) == F(attn_layer_flops(
        s, s * s, d, heads, kv_heads != heads, kv_heads, head_dim), s)
    assert a.formula("maxtext", d, s, local=True) == maxtext_term(
        s, emb_dim=d, num_query_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        mlp_dim=0)


@pytest.mark.parametrize("s", [500, 1024, 5000])
def test_window_and_chunk_terms(s):
    d, h, kv, dh = 1024, 8, 2, 128
    shape = dict(emb_dim=d, num_query_heads=h, num_kv_heads=kv, head_dim=dh, mlp_dim=0)
    window = Attention(heads=h, kv_heads=kv, qk_dim=dh, v_dim=dh, mask=Mask("window", 1024))
    chunked = Attention(heads=h, kv_heads=kv, qk_dim=dh, v_dim=dh, mask=Mask("chunked", 768))
    # Gemma 3's path with one layer: 1 // 6 = 0 global layers, one local layer
    assert window.formula("maxtext", d, s, local=True) == maxtext_term(
        s, decoder_block="gemma3", sliding_window_size=1024, **shape)
    # Llama 4's path with one layer and a NoPE interval of 2: one chunked layer
    assert chunked.formula("maxtext", d, s, local=True) == maxtext_term(
        s, decoder_block="llama4", nope_layer_interval=2, chunk_attn_window_size=768,
        num_experts=1, **shape)
    causal = maxtext_term(s, **shape)
    for a in (window, chunked):  # a block without local layers counts them causal
        assert a.formula("maxtext", d, s, local=False) == causal
        assert a.formula("megatron_lm", d, s, local=True) == a.formula("megatron_lm", d, s, local=False)


@pytest.mark.parametrize("gated, activation", [(True, "silu"), (True, "gelu"),
                                                (False, "gelu"), (False, "relu2")])
def test_mlp_terms(gated, activation):
    d, f, s = 1024, 2816, 100
    m = Mlp(gated=gated, d_ff=f, activation=activation)
    swiglu = gated and activation == "silu"  # Megatron-LM's only three-matrix flag
    assert m.formula("megatron_lm", d, s, local=True) == gpt_path_term(
        s, hidden_size=d, num_attention_heads=8, kv_channels=0, ffn_hidden_size=f, swiglu=swiglu)
    assert m.formula("megatron_lm_hybrid", d, s, local=True) == F(
        mlp_layer_flops(s, d, F(f, d), swiglu), s)
    acts = ["gelu", "linear"] if gated else ["gelu"]
    config = maxtext_config(emb_dim=d, max_target_length=s, mlp_activations=acts)
    assert m.formula("maxtext", d, s, local=True) == F(calculate_ffn_mamtul_tflops_per_device(config, f), s)
    assert bool(m.formula_notes("megatron_lm", d, s, local=True)) == (gated and not swiglu)


@pytest.mark.parametrize("experts, k, f, shared, latent, activation", [
    (8, 2, 1024, None, None, "silu"), (64, 6, 512, 1024, None, "silu"),
    (16, 4, 256, 256, 384, "silu"), (32, 4, 512, 512, None, "gelu")])
def test_moe_terms(experts, k, f, shared, latent, activation):
    d, s = 2048, 100
    moe = Moe(experts=experts, top_k=k, expert=Mlp(True, f, activation),
              shared=Mlp(True, shared, activation) if shared else None,
              shared_count=1 if shared else 0, latent=latent)
    swiglu = activation == "silu"  # gated GELU experts: --quick-geglu, two matrices
    assert moe.formula("megatron_lm_hybrid", d, s, local=True) == F(
        moe_layer_flops(s, d, f, shared or 0, k, latent, swiglu), s)
    # GPT path, one MoE layer (moe_layer_freq 1) without attention (kv_channels 0)
    assert moe.formula("megatron_lm", d, s, local=True) == gpt_path_term(
        s, hidden_size=d, num_attention_heads=8, kv_channels=0, ffn_hidden_size=4 * d,
        swiglu=swiglu, num_experts=experts, moe_router_topk=k, moe_ffn_hidden_size=f,
        moe_shared_expert_intermediate_size=shared, moe_latent_size=latent)
    if latent:
        assert moe.formula("maxtext", d, s, local=True) is None  # MaxText has no latent MoE
        return
    config = maxtext_config(decoder_block="deepseek", emb_dim=d, max_target_length=s,
                            num_decoder_layers=1, first_num_dense_layers=0, mlp_dim=0,
                            num_experts=experts, num_experts_per_tok=k, moe_mlp_dim=f,
                            shared_experts=(shared or 0) // f)  # shared_experts x moe_mlp_dim
    assert moe.formula("maxtext", d, s, local=True) == F(
        calculate_routed_and_shared_ffn_tflops_per_device(config), s)


def test_zero_computation_experts_have_no_term():
    moe = Moe(experts=8, top_k=4, expert=Mlp(True, 64, "silu"), zero_experts=8)
    assert all(moe.formula(c, 256, 16, local=True) is None for c in CODEBASES)


@pytest.mark.parametrize("q_rank", [None, 1536])
def test_latent_attention_terms(q_rank):
    d, s, h = 7168, 4096, 128
    mla = LatentAttention(heads=h, kv_heads=h, qk_dim=192, v_dim=128, mask=CAUSAL,
                          q_rank=q_rank, kv_rank=512, rope_dim=64)
    assert mla.formula("megatron_lm", d, s, local=True) == gpt_path_term(
        s, hidden_size=d, num_attention_heads=h, ffn_hidden_size=0, multi_latent_attention=True,
        q_lora_rank=q_rank, kv_lora_rank=512, qk_head_dim=128, qk_pos_emb_head_dim=64,
        v_head_dim=128)
    assert mla.formula("megatron_lm_hybrid", d, s, local=True) is None  # hybrid_flops counts no '+' layer
    config = maxtext_config(emb_dim=d, max_target_length=s, num_query_heads=h,
                            q_lora_rank=q_rank or 0)
    assert mla.formula("maxtext", d, s, local=True) == F(sum(calculate_mla_tflops_per_device(config)), s)


@pytest.mark.parametrize("s", [1024, 2048, 2049, 8192])
def test_sparse_latent_attention_terms(s):
    d, h = 7168, 128
    dsa = SparseLatentAttention(heads=h, kv_heads=h, qk_dim=192, v_dim=128,
                                mask=Mask("topk", 2048), q_rank=1536, kv_rank=512, rope_dim=64,
                                index_heads=64, index_dim=128)
    mla = LatentAttention(heads=h, kv_heads=h, qk_dim=192, v_dim=128, mask=CAUSAL,
                          q_rank=1536, kv_rank=512, rope_dim=64)
    assert dsa.formula("megatron_lm", d, s, local=True) == mla.formula("megatron_lm", d, s, local=True)
    config = maxtext_config(emb_dim=d, max_target_length=s, num_query_heads=h, q_lora_rank=1536,
                            use_indexer=True, indexer_n_heads=64, indexer_head_dim=128,
                            indexer_topk=2048)
    assert dsa.formula("maxtext", d, s, local=True) == F(sum(calculate_mla_tflops_per_device(config)), s)


@pytest.mark.parametrize("heads, head_dim, state, groups", [
    (128, 64, 128, 8), (24, 128, 256, 1), (80, 64, 128, 1)])
def test_mamba2_terms(heads, head_dim, state, groups):
    d, s = 4096, 777
    m = Mamba2(heads=heads, head_dim=head_dim, state=state, groups=groups, conv=4, chunk=128)
    assert m.formula("megatron_lm_hybrid", d, s, local=True) == F(
        mamba_layer_flops(s, d, state, head_dim, groups, heads), s)
    assert m.formula("megatron_lm", d, s, local=True) is None and m.formula("maxtext", d, s, local=True) is None


@pytest.mark.parametrize("key_heads, value_heads, key_dim, value_dim", [
    (16, 32, 128, 128), (16, 32, 64, 192), (4, 8, 96, 64)])
def test_gated_deltanet_terms(key_heads, value_heads, key_dim, value_dim):
    d, s = 2048, 300
    g = GatedDeltaNet(key_heads=key_heads, value_heads=value_heads, key_dim=key_dim,
                      value_dim=value_dim, conv=4)
    assert g.formula("megatron_lm_hybrid", d, s, local=True) == F(gdn_layer_flops(
        s, d, key_dim, value_dim, key_heads, value_heads, 4), s)
    # GPT path, one layer that is linear attention (linear_attention_freq as a list)
    assert g.formula("megatron_lm", d, s, local=True) == gpt_path_term(
        s, hidden_size=d, num_attention_heads=8, ffn_hidden_size=0,
        experimental_attention_variant="gdn", linear_attention_freq=[1],
        linear_key_head_dim=key_dim, linear_value_head_dim=value_dim,
        linear_num_key_heads=key_heads, linear_num_value_heads=value_heads,
        linear_conv_kernel_dim=4)
    config = maxtext_config(emb_dim=d, max_target_length=s, gdn_num_key_heads=key_heads,
                            gdn_num_value_heads=value_heads, gdn_key_head_dim=key_dim,
                            gdn_value_head_dim=value_dim, gdn_conv_kernel_dim=4)
    assert g.formula("maxtext", d, s, local=True) == F(sum(calculate_gated_delta_net_flops_per_device(
        config)), s)


# ============================================================================ the command

def test_cli_json_csv_and_table_show_the_rows(cli):
    r = cli("conventions", "nemotron-h-8b", "--seq", "4096", "--format", "json")
    assert r.code == 0 and r.err == ""
    rows = {x["name"]: x for x in r.json()["conventions"]}
    assert list(rows) == ["six_nd", "six_nd_total", "kaplan", "palm", "megatron", "chinchilla",
                          *CODEBASES, "exact_full", "exact_causal"]
    assert rows["megatron_lm"]["applicable"] is False and rows["megatron_lm"]["per_token"] is None
    hybrid = rows["megatron_lm_hybrid"]
    assert hybrid["applicable"] is True and F(hybrid["per_token_exact"]) == megatron_per_token(
        megatron_args(**HYBRID["nemotron-h-8b"]), 4096)
    assert "d98e8a64ddf34856e74b24714e3bedb2f5a39553" in hybrid["source"]
    assert any("mamba_layer_flops" in note for note in hybrid["notes"])
    assert "e591f30cbbf217ed67ef71263ec0538239f9c3b8" in rows["maxtext"]["source"]

    out = cli("conventions", "nemotron-h-8b", "--seq", "4096", "--format", "csv").out
    sheet = {x["name"]: x for x in csv.DictReader(io.StringIO(out))}
    assert sheet["megatron_lm"]["per_token"] == "" and sheet["megatron_lm"]["total"] == ""
    assert "not applicable" in sheet["megatron_lm"]["notes"]
    assert sheet["megatron_lm_hybrid"]["per_token"] == str(hybrid["per_token"])

    table = cli("conventions", "nemotron-h-8b", "--seq", "4096").out
    line = next(x for x in table.splitlines() if x.startswith("megatron_lm "))
    assert "not applicable" in line
    assert "- maxtext: not applicable: MaxText's calculate_tflops_training_per_device" in table


def test_the_mtp_note_counts_its_modules(cli):
    # DeepSeek-V3 has 1 multi-token-prediction module; with 2 the note says so in the plural
    for n, word in (("1", "module counted"), ("2", "modules counted")):
        r = cli("conventions", "deepseek-v3", "--set", f"mtp_layers={n}", "-f", "json")
        assert r.code == 0, r.err
        assert f"the {n} multi-token-prediction {word} as the codebase does" in r.out
