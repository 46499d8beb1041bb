"""Mixtures of experts of their own shape (flopcalc/models/hf/moe.py): DeepSeek-V2 and
MiniCPM3 (latent attention), PhiMoE, DBRX, JetMoE, Granite MoE, GLM-4.5, ERNIE 4.5 MoE, Hunyuan
MoE, MiniMax-M2, dots.llm1, LongCat-Flash.

Tiny sizes keep every feature: GQA, value heads narrower than query heads, dense-first layers,
shared experts, groups of experts, windows shorter than the longer length."""

from . import Case

TIED, UNTIED = dict(tie_word_embeddings=True), dict(tie_word_embeddings=False)
LENGTHS = (1, 6)
# 4 experts of 16, top-2; d 32 with 4 query heads of 8 and 2 KV heads.
SMALL = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=64, max_position_embeddings=64)
EXPERTS = dict(moe_intermediate_size=16, n_routed_experts=4, num_experts_per_tok=2)
# latent attention: q rank 16, kv rank 12, query/key heads 8 + 4 (rope), value heads 6
MLA = dict(SMALL, num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8,
           qk_rope_head_dim=4, v_head_dim=6)

def longcat_routing(config, batch: int, seq: int) -> int:
    """LongCat-Flash's zero-computation experts: which of its k picks a token sends to the E
    real experts depends on the data, and flopcalc counts the expectation under uniform routing
    (k·E/(E + Z) per token). Replaying the forward the sweep measures (the same seeded model and
    inputs) gives the real picks; each one more than expected is a real expert's 2·d·2f (gate
    and up) + 2·f·d (down) more FLOPs."""
    import torch

    from . import build

    model = build(Case("longcat_flash"), config, "cpu").train()
    picks = []
    routers = [m for m in model.modules() if type(m).__name__ == "LongcatFlashTopkRouter"]
    for router in routers:
        router.register_forward_hook(lambda module, args, out: picks.append(out[2]))
    torch.manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    with torch.no_grad():
        model(input_ids=ids, use_cache=False)
    e, z, k = config.n_routed_experts, config.zero_expert_num, config.moe_topk
    real = sum(int((p < e).sum()) for p in picks)
    expected = len(routers) * batch * seq * k * e // (e + z)
    return (real - expected) * 6 * config.hidden_size * config.expert_ffn_hidden_size


DBRX_FIX = dict(attn_config={"rope_theta": 500000.0})

CASES = [
    # num_experts_per_tok is null by default (published files set it: 6)
    Case("deepseek_v2", shrink={**MLA, **EXPERTS, "n_shared_experts": 1},
         fix=dict(num_experts_per_tok=6), lengths=LENGTHS,
         variants=(dict(q_lora_rank=None, first_k_dense_replace=1),
                   dict(mlp_bias=True, attention_bias=True, n_shared_experts=2,
                        first_k_dense_replace=1),
                   dict(topk_method="group_limited_greedy", n_group=2, topk_group=1,
                        n_shared_experts=0, **TIED))),
    Case("minicpm3", shrink=MLA, lengths=LENGTHS,
         variants=(dict(q_lora_rank=None, v_head_dim=None),
                   dict(attention_bias=True, mlp_bias=True, **UNTIED),
                   dict(scale_depth=None, dim_model_base=None))),
    Case("phimoe", shrink={**SMALL, "intermediate_size": 16, "num_local_experts": 4},
         lengths=(1, 6),
         # the sparsemixer routes to 2 experts whatever num_experts_per_tok says
         variants=(dict(attention_bias=True, lm_head_bias=True),
                   dict(sliding_window=4, num_experts_per_tok=1), TIED)),
    # DBRX's attention config has no rope_theta in 5.24 (the published files set 500,000), and
    # without clip_qkv its forward fails (torch.clamp with neither bound). The shrink replaces
    # the sub-configs, so the second case checks other ones for FLOPs.
    # seeded: no tying: transformers rejects it for DBRX
    Case("dbrx", fix=DBRX_FIX, lengths=LENGTHS,
         shrink=dict(d_model=32, n_heads=4, n_layers=2, max_seq_len=64, vocab_size=64,
                     attn_config={"kv_n_heads": 2, "clip_qkv": 8.0, "rope_theta": 10000.0},
                     ffn_config={"ffn_hidden_size": 16, "moe_num_experts": 4,
                                 "moe_top_k": 2}),
         variants=(dict(n_layers=40, d_model=6144, n_heads=48, vocab_size=100352,
                        max_seq_len=32768,
                        attn_config={"kv_n_heads": 8, "clip_qkv": 8, "rope_theta": 500000.0},
                        ffn_config={"ffn_hidden_size": 10752, "moe_num_experts": 16,
                                    "moe_top_k": 4}),),
         seeded_skip=("tie_word_embeddings",)),
    Case("dbrx", fix=DBRX_FIX, lengths=(6,),
         shrink=dict(d_model=32, n_heads=4, n_layers=2, max_seq_len=64, vocab_size=64,
                     attn_config={"kv_n_heads": 4, "clip_qkv": 8.0, "rope_theta": 10000.0},
                     ffn_config={"ffn_hidden_size": 24, "moe_num_experts": 3, "moe_top_k": 1,
                                 "ffn_act_fn": {"name": "gelu"}})),
    # 4 attention experts of 2 KV heads of 8, top-2: 4 query heads per token
    Case("jetmoe", shrink=dict(hidden_size=32, intermediate_size=16, num_hidden_layers=2,
                               num_key_value_heads=2, kv_channels=8, num_local_experts=4,
                               num_experts_per_tok=2, vocab_size=64, max_position_embeddings=64),
         lengths=LENGTHS,
         variants=(UNTIED, dict(num_experts_per_tok=1, kv_channels=12, num_key_value_heads=4))),
    Case("granitemoe", shrink={**SMALL, "intermediate_size": 16, "num_local_experts": 4},
         lengths=LENGTHS,
         variants=(dict(attention_bias=True, **TIED),
                   dict(embedding_multiplier=12.0, attention_multiplier=0.015625,
                        residual_multiplier=0.22, logits_scaling=8.0))),
    Case("granitemoeshared",
         shrink={**SMALL, "intermediate_size": 16, "num_local_experts": 4,
                 "shared_intermediate_size": 24}, lengths=LENGTHS,
         variants=(dict(shared_intermediate_size=1024, attention_bias=True),
                   dict(shared_intermediate_size=0))),
    # 6 heads of 32 // 6 = 5 (transformers floors; its default 4096 // 96 = 42 too)
    Case("glm4_moe", shrink={**SMALL, **EXPERTS, "num_hidden_layers": 3, "n_shared_experts": 1},
         lengths=LENGTHS,
         variants=(dict(use_qk_norm=True, attention_bias=True, num_attention_heads=6,
                        num_key_value_heads=2),
                   dict(first_k_dense_replace=0, n_group=2, topk_group=1, n_shared_experts=2,
                        num_nextn_predict_layers=0, **TIED),
                   dict(n_shared_experts=0, head_dim=12))),
    Case("ernie4_5_moe",
         shrink={**SMALL, "num_hidden_layers": 4, "moe_intermediate_size": 16,
                 "moe_num_experts": 4, "moe_k": 2, "moe_num_shared_experts": 1},
         lengths=LENGTHS,
         variants=(dict(use_bias=True, moe_layer_interval=2),
                   dict(moe_layer_start_index=2, moe_layer_end_index=2,
                        moe_num_shared_experts=0, **UNTIED),
                   dict(moe_layer_start_index=9))),
    # head_dim is null by default, which transformers cannot build
    Case("hunyuan_v1_moe", shrink={**SMALL, "head_dim": 8, "num_experts": 4, "moe_topk": 2},
         fix=dict(head_dim=128), lengths=LENGTHS,
         variants=(dict(attention_bias=True, **TIED),
                   dict(moe_topk=[2, 2], num_experts=3, num_hidden_layers=2),
                   dict(num_key_value_heads=8))),
    Case("minimax_m2",
         shrink={**SMALL, "head_dim": 12, "intermediate_size": 16, "num_local_experts": 4,
                 "num_experts_per_tok": 2, "bos_token_id": 1, "eos_token_id": 2},
         lengths=LENGTHS,
         variants=(dict(num_key_value_heads=48), TIED)),
    # the expert counts are null by default (transformers cannot build them): dots.llm1's
    # published 128 routed, 2 shared, top-6; windows on the layers from max_window_layers on
    Case("dots1",
         shrink={**SMALL, **EXPERTS, "num_hidden_layers": 3, "n_shared_experts": 1,
                 "first_k_dense_replace": 1, "sliding_window": 4, "max_window_layers": 1},
         fix=dict(n_routed_experts=128, n_shared_experts=2, num_experts_per_tok=6),
         lengths=LENGTHS,
         variants=(dict(attention_bias=True, n_group=2, topk_group=1, **TIED),
                   dict(max_window_layers=62, first_k_dense_replace=0))),
    # 4 routed + 2 zero-computation experts, top-3: 2 computing per token on average
    # seeded: no expert count or top-k: flopcalc refuses those where top_k x experts / (experts +
    # zero_experts) is not whole
    Case("longcat_flash",
         shrink={**MLA, "num_layers": 2, "head_dim": 4, "ffn_hidden_size": 48,
                 "expert_ffn_hidden_size": 16, "n_routed_experts": 4, "zero_expert_num": 2,
                 "moe_topk": 3},
         lengths=LENGTHS, extra_flops=longcat_routing,
         note="the experts' FLOPs are the expectation under uniform routing; transformers "
              "computes the picks this input makes",
         variants=(dict(attention_bias=True, **TIED),),
         seeded_skip=("n_routed_experts", "moe_topk")),
    Case("longcat_flash", lengths=(6,),
         shrink={**MLA, "num_layers": 3, "head_dim": 4, "ffn_hidden_size": 48,
                 "expert_ffn_hidden_size": 16, "n_routed_experts": 4, "zero_expert_num": 0,
                 "moe_topk": 2}),
    # K-EXAONE: 4 shrunk layers (a window of 4, every 4th full); variants: dense and sparse
    # interleaved, two fused shared experts, tied, every 2nd layer full, head_dim ≠ d / heads
    Case("exaone_moe",
         shrink=dict(vocab_size=97, hidden_size=64, intermediate_size=96,
                     moe_intermediate_size=24, num_attention_heads=4, num_key_value_heads=2,
                     num_experts=4, num_experts_per_tok=2, num_hidden_layers=4,
                     sliding_window=4),
         lengths=(5, 13),
         variants=(dict(num_hidden_layers=4, mlp_layer_types=["sparse", "dense", "sparse",
                                                                "sparse"],
                        num_shared_experts=2, sliding_window_pattern=2, head_dim=24, **TIED),)),
]
