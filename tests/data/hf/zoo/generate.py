"""Regenerate the regression configs of the six importer bugs and expected.json next to this file
(PyTorch/transformers only):

    . .venv/bin/activate && python tests/data/hf/zoo/generate.py

Each `<bug>.json` is the config.json transformers 5.24's `save_pretrained` writes for a tiny
config that shows the bug (`KEYS` below); expected.json has the model's parameters on the meta
device and FlopCounterMode's count of one training-mode forward (eager attention and experts,
no cache) at batch 2 x 12 tokens, measured by tests/sweep's helpers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))  # repository root

from tests import sweep  # noqa: E402

TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            pad_token_id=0)
MOE = dict(moe_intermediate_size=32, num_experts_per_tok=2)
KEYS = {
    # 1: Qwen3MoeConfig.attribute_map writes num_experts as num_local_experts.
    "1_qwen3_moe": ("qwen3_moe", {**TINY, **MOE, "head_dim": 16, "num_experts": 4}),
    # 2: DeepseekV3DecoderLayer ignores moe_layer_freq (MoE on every layer from
    # first_k_dense_replace on).
    "2_deepseek_v3": ("deepseek_v3", {**TINY, **MOE, "num_hidden_layers": 4,
                                      "num_key_value_heads": 4, "n_routed_experts": 4,
                                      "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
                                      "first_k_dense_replace": 0, "moe_layer_freq": 2,
                                      "q_lora_rank": 24, "kv_lora_rank": 16,
                                      "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
                                      "v_head_dim": 12}),
    # 3: Qwen2MoeSparseMoeBlock builds shared_expert_gate (d -> 1) whatever the shared width.
    "3_qwen2_moe": ("qwen2_moe", {**TINY, **MOE, "num_experts": 4,
                                  "shared_expert_intermediate_size": 0}),
    # 4: BertLMPredictionHead keeps decoder.bias and bias apart when untied.
    "4_bert": ("bert", {**TINY, "num_key_value_heads": None, "tie_word_embeddings": False}),
    # 5: Gemma 1-3 put attention_bias on q, k, v and o.
    "5a_gemma": ("gemma", {**TINY, "head_dim": 16, "attention_bias": True}),
    "5b_gemma2": ("gemma2", {**TINY, "head_dim": 16, "attention_bias": True,
                             "sliding_window": 4}),
    "5c_gemma3_text": ("gemma3_text", {**TINY, "head_dim": 16, "attention_bias": True,
                                       "sliding_window": 4}),
    # 6: Qwen2MoeAttention's q/k/v biases follow qkv_bias.
    "6_qwen2_moe": ("qwen2_moe", {**TINY, **MOE, "num_experts": 4,
                                  "shared_expert_intermediate_size": 48, "qkv_bias": False}),
}
SEQ, BATCH = 12, 2


def main() -> None:
    expected = {}
    for name, (model_type, keys) in KEYS.items():
        keys = {k: v for k, v in keys.items() if v is not None}
        auto = "masked_lm" if model_type == "bert" else "causal_lm"
        case = sweep.Case(model_type, auto=auto)
        config = sweep.config_of(model_type, keys)
        data = sweep.saved(config)
        data.pop("transformers_version", None)
        (HERE / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        expected[name] = {"model_type": model_type, "params": sweep.hf_params(case, config),
                          "seq": SEQ, "batch": BATCH,
                          "forward": sweep.hf_flops(case, config, BATCH, SEQ)}
        print(name, expected[name])
    (HERE / "expected.json").write_text(json.dumps(
        {"generator": "tests/data/hf/zoo/generate.py", "transformers": "5.24.0",
         "torch": "2.13.0+cpu", "bugs": expected}, indent=1) + "\n")


if __name__ == "__main__":
    main()
