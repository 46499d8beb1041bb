"""The crossover's root finder (`counting.crossover._first_root`) against brute force: the
smallest integer n in [lo, hi] where a·n² + b·n + c >= 0, the exact root when it is rational
and a float of it when it is not."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import pytest

from flopcalc.counting.crossover import _first_root

pytestmark = pytest.mark.invariant


def brute(a, b, c, lo, hi):
    for n in range(lo, (hi if hi is not None else 20_000) + 1):
        if (a * n + b) * n + c >= 0:
            return n
    return None


CASES = [
    (F(0), F(3), F(-100), 1, None),  # linear: 100/3, n = 34
    (F(0), F(0), F(-1), 1, None),  # never
    (F(0), F(-2), F(-1), 1, None),
    (F(1), F(0), F(-50), 1, None),  # √50: irrational
    (F(1), F(-3), F(2), 1, None),  # f(1) = 0
    (F(1), F(-10), F(16), 2, None),  # f(2) = 0
    (F(1), F(-10), F(16), 3, None),  # root 8
    (F(1), F(-10), F(16), 3, 7),  # past hi
    (F(1), F(-10), F(16), 3, 8),  # at hi
    (F(4), F(0), F(-9), 1, None),  # 3/2
    (F(1, 3), F(-7, 2), F(-5), 1, None),
    (F(1, 1000), F(-5), F(-3), 1, None),
    (F(0), F(1, 7), F(-50), 10, 400),
]
rng = random.Random(7)
CASES += [(F(rng.randint(0, 5), rng.randint(1, 9)), F(rng.randint(-300, 30), rng.randint(1, 9)),
           F(rng.randint(-5000, 50), rng.randint(1, 9)), rng.randint(1, 20),
           rng.choice([None, rng.randint(20, 400)])) for _ in range(60)]


@pytest.mark.parametrize("a, b, c, lo, hi", CASES)
def test_first_root_is_the_smallest_integer_where_attention_catches_up(a, b, c, lo, hi):
    expected = brute(a, b, c, lo, hi)
    found = _first_root(a, b, c, lo, hi)
    if expected is None:
        assert found is None
        return
    assert found is not None
    n, root, approx = found
    assert n == expected
    if (a * lo + b) * lo + c >= 0:
        assert (root, approx) == (None, float(lo))
        return
    real = (-b / a / 2 + math.sqrt(float(b * b - 4 * a * c)) / (2 * float(a))) if a else -c / b
    assert approx == pytest.approx(float(real), rel=1e-12)
    disc = b * b - 4 * a * c
    square = math.isqrt(disc.numerator * disc.denominator) ** 2 == \
        disc.numerator * disc.denominator
    if a == 0 or square:  # a rational root, given exactly
        assert root is not None and (a * root + b) * root + c == 0
        assert n == max(lo, math.ceil(root))
    else:
        assert root is None

def test_exact_roots_by_hand():
    assert _first_root(F(0), F(3), F(-100), 1, None) == (34, F(100, 3), 100 / 3)
    assert _first_root(F(4), F(0), F(-9), 1, None) == (2, F(3, 2), 1.5)
    assert _first_root(F(1), F(-10), F(16), 3, None) == (8, F(8), 8.0)
    n, root, approx = _first_root(F(1), F(0), F(-50), 1, None)
    assert (n, root) == (8, None) and approx == pytest.approx(50 ** 0.5, rel=1e-15)
