"""Training memory against PyTorch, where PyTorch can say: the bytes of the tensors autograd
saves for one transformer block written plainly here (its tensors named after Korthikanti et
al. 2022, §4.1), and the bytes of AdamW's state and of the gradients after one step.

Needs torch; skipped without it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

# A GPT block at small sizes: h = 64, a = 4 heads, f = 4h, pre-LayerNorm, GELU, dropout.
S, B, H, A = 24, 3, 64, 4

BLOCK = """n_layers: 1
d_model: 64
n_heads: 4
d_ff: 256
bias: true
positions: rotary
vocab_size: 10
"""


class Block(torch.nn.Module):
    """Korthikanti et al.'s block, op by op, so that every saved tensor is one they name."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(H), torch.nn.LayerNorm(H)
        self.q, self.k, self.v = (torch.nn.Linear(H, H) for _ in range(3))
        self.o = torch.nn.Linear(H, H)
        self.fc1, self.fc2 = torch.nn.Linear(H, 4 * H), torch.nn.Linear(4 * H, H)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln1(x)
        heads = lambda t: t.view(B, S, A, H // A).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(y)), heads(self.k(y)), heads(self.v(y))
        scores = (q @ k.transpose(-1, -2)) / (H // A) ** 0.5
        probs = self.drop(scores.softmax(-1))
        attn = (probs @ v).transpose(1, 2).reshape(B, S, H)
        x = x + self.drop(self.o(attn))
        return x + self.drop(self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)))))


def saved_bytes(model: torch.nn.Module, x: torch.Tensor) -> int:
    """Bytes of the tensors autograd saves, each storage once; parameters are not activations
    and are left out."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x).sum()
    return sum(seen.values())


def test_saved_tensors_of_a_block(cli, tmp_path):
    model = Block().to(torch.bfloat16).train()
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    saved = saved_bytes(model, x)
    path = tmp_path / "block.yaml"
    path.write_text(BLOCK)
    doc = cli("memory", str(path), "--seq", S, "--batch", B, "--dropout", "on", "--no-flash",
              "-f", "json").json()  # the eager softmax this block keeps
    ours = doc["activations"]["per_layer"]
    # Korthikanti's sbh(34 + 5as/h): 34·24·3·64 + 5·4·24²·3 = 156,672 + 34,560 = 191,232.
    assert ours == 34 * S * B * H + 5 * A * S * S * B == 191_232
    # PyTorch keeps every one of these tensors, and on the CPU two things more:
    # - its dropout keeps the mask in the tensor's dtype, 2 bytes, where the paper (and the
    #   CUDA kernels it measured) keep 1 byte: as²b + 2·sbh more (6,912 + 9,216);
    # - each LayerNorm keeps its mean and 1/σ per token, 2 norms x 2 x s·b x 2 bytes (576),
    #   which the paper leaves out as O(sb).
    masks = A * S * S * B + 2 * S * B * H
    stats = 2 * 2 * S * B * 2
    assert saved == ours + masks + stats == 207_936


def test_adamw_state_and_gradients_after_one_step(cli, tmp_path):
    """fp32 training with AdamW: 4 bytes of weights, 4 of gradients and 8 of moments per
    parameter (PyTorch also keeps one fp32 step counter per tensor: 4 bytes x tensors)."""
    model = Block().train()
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(B, S, H)).sum().backward()
    optimizer.step()
    n = sum(p.numel() for p in model.parameters())
    moments = sum(t.nbytes for state in optimizer.state.values()
                  for name, t in state.items() if name != "step")
    steps = sum(state["step"].nbytes for state in optimizer.state.values())
    grads = sum(p.grad.nbytes for p in model.parameters())
    path = tmp_path / "block.yaml"
    path.write_text(BLOCK + "final_norm: false\n")
    doc = cli("memory", str(path), "--seq", S, "--precision", "fp32", "-f", "json").json()
    embedding = 10 * H  # flopcalc's model file adds a 10-token table the block above lacks
    assert doc["params"]["total"] - embedding == n
    m = doc["memory"]
    assert m["gradients"] - 4 * embedding == grads == 4 * n
    assert m["optimizer"] - 8 * embedding == moments == 8 * n
    assert steps == 4 * len(list(model.parameters()))  # not counted by flopcalc
