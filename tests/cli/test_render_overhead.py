"""The table layout's arithmetic against rich: `render.output._overhead` works out the padding
and separators of `new_table`'s tables instead of asking rich to measure each one; it must be
what rich measures, for any number of columns, title and cells."""

from __future__ import annotations

import random

import pytest

from flopcalc.render import output

pytestmark = pytest.mark.invariant


def rich_overhead(table) -> int:
    from rich.console import Console

    natural = Console(width=100_000).measure(table).maximum
    return natural - sum(n for _, n in output._cell_widths(table))


def test_overhead_is_what_rich_measures():
    rng = random.Random(7)
    words = ["", "x", "attention", "1,234,567", "a b c", "two\nlines here", "Σ·²", "—"]
    for columns in range(1, 7):
        for _ in range(20):
            title = "t" * rng.choice([0, 3, 30, 80, 200])
            table = output.new_table(title, [rng.choice(words[1:]) for _ in range(columns)],
                                     numeric_from=rng.randrange(columns + 1))
            for _ in range(rng.randrange(4)):
                table.add_row(*(rng.choice(words) for _ in range(columns)))
            assert output._overhead(table) == rich_overhead(table), (columns, title)


def test_a_long_title_widens_the_table():
    # min_width = min(len(title), the title width cap): a 40-character title over two 1-wide
    # columns (1 + 2 + 1 = 4 natural) leaves 36 columns of overhead.
    table = output.new_table("T" * 40, ["a", "b"])
    assert output._overhead(table) == 40 - 2 == rich_overhead(table)
