"""Sparse and interleaved attention: DeepSeek-V3.2 (latent attention + the lightning indexer) and
Llama 4's text model (chunked RoPE layers, global NoPE layers, MoE interleaved with dense)."""

from . import Case


def llama4_all_experts(config, batch: int, seq: int) -> int:
    """transformers runs every routed expert on every token (`Llama4TextMoe` repeats the tokens
    E times, scaled by sigmoid(score), 0 for the unselected, and `Llama4TextExperts` is two
    dense bmm over all E): 6·N·d·I per expert, so E − k experts per token more than the model
    routes it to, in each MoE layer."""
    moe = [i for i in config.moe_layers if 0 <= i < config.num_hidden_layers]
    extra = config.num_local_experts - config.num_experts_per_tok
    return len(moe) * extra * 6 * batch * seq * config.hidden_size * config.intermediate_size


# A variant's keys that the shrink also sets are overridden by it for the FLOP check (they still
# count in the parameter check at full size).
CASES = [
    Case("deepseek_v32",
         # topk 3: lengths below and above it; 2 groups of 2 experts, top-2; with the default
         # first_k_dense_replace 3, three dense layers and one MoE layer.
         shrink=dict(hidden_size=32, intermediate_size=24, moe_intermediate_size=8,
                     num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
                     q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4,
                     v_head_dim=6, index_n_heads=3, index_head_dim=8, index_topk=3,
                     n_routed_experts=4, num_experts_per_tok=2, n_group=2, topk_group=1,
                     vocab_size=64, max_position_embeddings=64),
         variants=(dict(first_k_dense_replace=0, attention_bias=True, tie_word_embeddings=True),
                   dict(mlp_layer_types=["sparse", "dense", "sparse", "dense"],
                        num_hidden_layers=4, n_shared_experts=2),
                   dict(first_k_dense_replace=1, num_nextn_predict_layers=0),
                   dict(num_attention_heads=16, num_key_value_heads=16, index_n_heads=32,
                        index_head_dim=64, q_lora_rank=384, num_hidden_layers=4,
                        first_k_dense_replace=4)),
         lengths=(1, 3, 4, 13), cache=True,
         note="the eager path scores every key (the top-k only masks): --attention full"),
    Case("llama4_text",
         shrink=dict(hidden_size=32, intermediate_size=12, intermediate_size_mlp=20,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                     attention_chunk_size=4, floor_scale=3, vocab_size=64,
                     max_position_embeddings=64),
         variants=(dict(num_hidden_layers=4, num_local_experts=3, interleave_moe_layer_step=2,
                        attention_bias=True, tie_word_embeddings=True),
                   dict(num_hidden_layers=5, moe_layers=[0, 3], num_local_experts=4,
                        num_experts_per_tok=2, use_qk_norm=False),
                   dict(num_hidden_layers=6, attention_chunk_size=None, no_rope_layer_interval=2,
                        attn_temperature_tuning=False, num_local_experts=2),
                   dict(num_hidden_layers=8, interleave_moe_layer_step=4, num_key_value_heads=1,
                        head_dim=16)),
         lengths=(1, 3, 5, 9), extra_flops=llama4_all_experts,
         note="transformers computes every expert on every token; flopcalc counts top-k"),
]
