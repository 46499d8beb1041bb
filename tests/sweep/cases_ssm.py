"""State-space models."""

from . import Case

CASES = [
    # seeded: no widths or heads: transformers requires hidden_size x expand = num_heads x head_dim
    Case("mamba2",
         shrink=dict(num_heads=4, head_dim=8, hidden_size=16, expand=2, state_size=8, n_groups=2,
                     conv_kernel=4, chunk_size=8, num_hidden_layers=2, vocab_size=64),
         variants=(dict(num_hidden_layers=3, n_groups=4, tie_word_embeddings=True),
                   dict(num_heads=64, head_dim=32, hidden_size=1024, state_size=64,
                        use_bias=True, use_conv_bias=False, chunk_size=64)),
         lengths=(1, 5, 8, 13), cache=True,
         seeded_skip=("hidden_size", "num_heads", "head_dim")),
]
