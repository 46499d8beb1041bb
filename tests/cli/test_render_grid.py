"""The cells of a plain (uncoloured) table are written by `render.output._grid` rather than by
rich, which costs a fifth of a run to lay out a few hundred cells (docs/startup.md). rich is
the referee: every table must come out byte for byte as rich writes it, for random tables and
for the tables every command prints."""

from __future__ import annotations

import random

import pytest

from flopcalc.render import output

pytestmark = pytest.mark.invariant


def both(build, width: int = 0):
    """The text of `build`'s renderables with the grid written here, and written by rich."""
    import io

    stream = io.StringIO()
    fast = output.render(build, stream)
    saved, output._grid = output._grid, lambda table: None
    try:
        slow = output.render(build, stream)
    finally:
        output._grid = saved
    return fast, slow


def test_random_tables_come_out_as_rich_writes_them():
    rng = random.Random(11)
    words = ["", "x", "attention", "1,234,567", "a b c", "12.5%", "Σ·²", "—", "  lead",
             "trail  ", "≈ 3 × 10²", "a" * 70]
    titles = ["", "t", "Parameters of one decoder layer: latent attention, full causal, MoE",
              "w " * 90]
    grids = 0
    for columns in range(1, 7):
        for _ in range(25):
            title, caption = rng.choice(titles), rng.choice([None, "c", "a caption " * 12])
            heads = [rng.choice(["name", "params", "FLOPs\n(full)", "% layer", "a\nb\nc"])
                     for _ in range(columns)]
            rows = [[rng.choice(words) for _ in range(columns)] for _ in range(rng.randrange(5))]
            split = rng.randrange(columns + 1)

            def build(nums, title=title, caption=caption, heads=heads, rows=rows, split=split):
                table = output.new_table(title, heads, caption, numeric_from=split)
                for row in rows:
                    table.add_row(*row)
                return [output.plain("a heading line"), table]

            fast, slow = both(build)
            assert fast == slow, (title, heads, rows)
            grids += output._grid(build(None)[1]) is not None
    assert grids > 100  # the grid was written here, not handed back to rich, for most of them


COMMANDS = [
    ["model", "deepseek-v3"],
    ["model", "qwen3-next-80b-a3b", "--seq", "32k"],
    ["model", "gpt3", "--seq", "1M"],
    ["sweep", "llama-3.1-405b", "--seqs", "1k..128k", "--points", "12"],
    ["compare", "gpt3", "llama-3.1-70b", "mixtral-8x7b", "--seq", "8k"],
    ["conventions", "llama-3.1-405b"],
    ["infer", "llama-3.1-8b", "--prompt", "2k", "--gen", "256", "--accelerator", "h100"],
    ["memory", "llama-3.1-70b", "--seq", "8k", "--accelerator", "h100"],
    ["serve", "gemma-3-27b", "--accelerator", "h100", "--tp", "2"],
    ["step", "llama-3.1-70b", "--accelerator", "h100", "--count", "512", "--tp", "8", "--pp",
     "4", "--global-batch", "512", "--seq", "8k"],
    ["list"],
    ["accelerators"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_every_command_table_comes_out_as_rich_writes_it(cli, monkeypatch, args):
    monkeypatch.delenv("COLUMNS", raising=False)
    fast = cli(*args)
    assert fast.code == 0, fast.err
    monkeypatch.setattr(output, "_grid", lambda table: None)
    slow = cli(*args)
    assert fast.out == slow.out
