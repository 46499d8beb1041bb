"""Forward FLOPs at many sequence lengths in closed form: what lets `flopcalc sweep` count each
length in constant time, exactly.

Each FLOP family of a forward pass is, piece by piece along the length axis s, a polynomial in s
with integer values: the weights' family linear, attention at most quadratic. The kinds say where
the pieces are: a window, a band or a top-k selection ends one at its size (the masks'
`segment_end`, from which the crossover solves segment by segment); a chunked mask, and a chunked
scan that pads the sequence to its chunk (`Kind.count_period`), repeat every c lengths, and there
the count is a polynomial in (k, r) for s = k·c + r + 1, 0 <= r < c: in k as chunks add up, in r
within one.

Nothing is assumed that is not checked. A piece is interpolated from the direct count at
consecutive lengths (Newton's forward differences, integer arithmetic, degree 3 in each variable:
one more than any count needs), then compared with the direct count at the next length (and
across a grid one wider in each variable), at the piece's last length, at a chunk's last length,
at the largest and the middle length asked for in it. Agreement at the next length alone proves
the fit exact wherever the count is a polynomial of degree <= 4 in that piece; the other points
catch a piece cut in the wrong place. A piece that disagrees, or that holds fewer of the asked
lengths than fitting it costs, is counted directly at each length. Last, a few of the asked
lengths are counted in full the direct way and compared; any difference and every length is
counted directly. Counts stay Python ints throughout.

To keep each evaluation cheap, the layers whose kinds repeat every c lengths are counted kind by
kind (once per distinct kind and slot, times its layers), one sum per period; the rest of the
model (every other layer, the embeddings' projections, the head) is the whole forward minus those
sums, a polynomial between the finitely many ends of windows and bands.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from math import factorial
from operator import lt
from typing import Callable, Optional, Sequence

from ..kinds.base import Convention, Kind, Scan, families
from ..models.spec import ModelSpec
from .model import model_flops, workload

DEGREE = 3  # interpolation degree in each variable; the counts here are at most quadratic
MAX_ENDS = 64  # a mask with more leading pieces than this is counted directly
SPOT_CHECKS = 8  # asked lengths counted in full the direct way, as a last comparison

Vector = tuple[int, ...]  # one count per family, in the model's order of families
Count = Callable[[int], Vector]


class _GiveUp(Exception):
    """The closed forms cannot be trusted for this model: count every length directly."""


def forward_families(spec: ModelSpec, lengths: Sequence[int], batch: int = 1,
                     attention: Convention = "full", scan: Scan = "chunked"
                     ) -> list[dict[str, int]]:
    """Forward FLOPs by family at each of `lengths` (sorted, ascending, >= 1), each equal to
    `kinds.base.families(model_flops(spec, workload(spec, s, None, batch, attention, scan)))`
    (an encoder-decoder model's target length = its source length), in closed form where the
    checks above pass and directly where they do not."""
    def direct(s: int) -> dict[str, int]:
        return families(model_flops(spec, workload(spec, s, None, batch, attention, scan)))

    if not lengths:
        return []
    if lengths[0] < 1 or not all(map(lt, lengths, lengths[1:])):
        return [direct(s) for s in lengths]
    first = direct(lengths[0])
    keys = tuple(first)
    try:
        columns = _closed_forms(spec, lengths, batch, attention, scan, keys)
        picks = sorted({round(i * (len(lengths) - 1) / (SPOT_CHECKS - 1))
                        for i in range(SPOT_CHECKS)})
        for i in picks:
            if list(direct(lengths[i]).items()) != [(k, c[i]) for k, c in zip(keys, columns)]:
                raise _GiveUp
    except _GiveUp:
        return [first] + [direct(s) for s in lengths[1:]]
    return [dict(zip(keys, counts)) for counts in zip(*columns)]


def _closed_forms(spec: ModelSpec, lengths: Sequence[int], batch: int,
                  attention: Convention, scan: Scan, keys: tuple[str, ...]) -> list[list[int]]:
    """One column of counts per family (in `keys` order), a row per length."""
    index = {key: i for i, key in enumerate(keys)}
    d = spec.d_model

    def at(s: int):  # the sweep's workload at length s
        return workload(spec, s, None, batch, attention, scan)

    try:
        ends, repeating = _structure(spec)
    except AttributeError:  # a kind defined elsewhere whose masks say no `period`
        raise _GiveUp from None
    sums: dict[int, Count] = {}
    for period, terms in repeating.items():
        sums[period] = _kind_sum(terms, d, at, index)

    def rest(s: int) -> Vector:
        whole = families(model_flops(spec, at(s)))
        if tuple(whole) != keys:
            raise _GiveUp
        out = list(whole.values())
        for count in sums.values():
            for i, value in enumerate(count(s)):
                out[i] -= value
        return tuple(out)

    columns = _evaluate(rest, _pieces(ends, None), lengths, len(keys))
    for period, count in sums.items():
        part = _evaluate(count, _pieces(_ends_of(repeating[period]), period), lengths, len(keys))
        columns = [[a + b for a, b in zip(x, y)] for x, y in zip(columns, part)]
    return columns


# ------------------------------------------------------------------------ where pieces end

Term = tuple[int, Kind, str, str]  # (layers, kind, stack, slot)


def _shape(kind: Kind) -> tuple[set[int], set[int]]:
    """The last lengths of a kind's leading pieces (a window's w, a band's r + 1) and the
    periods of its repeating ones (a chunked mask's size, `count_period`)."""
    ends: set[int] = set()
    periods: set[int] = set()
    for _, mask in kind.pair_terms():
        if mask is None:
            continue
        if mask.period:
            periods.add(mask.period)
            continue
        s = 1
        for _ in range(MAX_ENDS):
            end = mask.segment_end(s)
            if end is None:
                break
            if end < s:
                raise _GiveUp
            ends.add(end)
            s = end + 1
        else:
            raise _GiveUp
    chunk = kind.count_period()
    if chunk:
        periods.add(chunk)
    return ends, periods


def _structure(spec: ModelSpec) -> tuple[set[int], dict[int, list[tuple[Term, set[int]]]]]:
    """The ends of the pieces of the layers that do not repeat, and the layers that do, by
    period (each distinct kind in a slot once, with its number of layers and its own ends)."""
    ends: set[int] = set()
    repeating: dict[int, dict[tuple[int, str, str], list]] = {}
    for g in spec.groups():
        for name, kind in g.layer.slots():
            kind_ends, periods = _shape(kind)
            if not periods:
                ends |= kind_ends
                continue
            if len(periods) > 1:
                raise _GiveUp
            seen = repeating.setdefault(periods.pop(), {})
            key = (id(kind), g.layer.stack, name)
            if key in seen:
                seen[key][0] += g.count
            else:
                seen[key] = [g.count, kind, g.layer.stack, name, kind_ends]
    return ends, {period: [((n, kind, stack, slot), e) for n, kind, stack, slot, e in
                           terms.values()] for period, terms in repeating.items()}


def _ends_of(terms: list[tuple[Term, set[int]]]) -> set[int]:
    return set().union(*(e for _, e in terms))


def _kind_sum(terms: list[tuple[Term, set[int]]], d: int, at: Callable[[int], object],
              index: dict[str, int]) -> Count:
    """The forward of these layers at length s, by family: each kind counted once, times its
    layers (what `counting.layers.layer_flops` sums for them)."""
    def count(s: int) -> Vector:
        w = at(s)
        out = [0] * len(index)
        for (layers, kind, stack, slot), _ in terms:
            for part in kind.forward(d, w.span(stack, slot)):  # type: ignore[attr-defined]
                i = index.get(part.family)
                if i is None:
                    raise _GiveUp
                out[i] += layers * part.value
        return tuple(out)

    return count


Piece = tuple[int, Optional[int], Optional[int]]  # (first length, last length or None, period)


def _pieces(ends: set[int], period: Optional[int]) -> list[Piece]:
    """The length axis cut after each end; with a period, each stretch further cut into whole
    blocks of lengths (k·c, (k+1)·c] (one repeating piece when there are enough of them, else
    one piece per block) and the partial blocks at its edges."""
    bounds = [1] + [e + 1 for e in sorted(ends) if e >= 1]
    stretches = [(lo, hi - 1) for lo, hi in zip(bounds, bounds[1:])] + [(bounds[-1], None)]
    if period is None:
        return [(lo, hi, None) for lo, hi in stretches]
    c, out = period, []
    for lo, hi in stretches:
        first = -(-(lo - 1) // c) * c + 1  # the first length that starts a block
        last = None if hi is None else (hi // c) * c  # the last length that ends one
        if last is not None and last < first:
            out.append((lo, hi, None))
            continue
        if first > lo:
            out.append((lo, first - 1, None))
        blocks = None if last is None else (last - first + 1) // c
        if blocks is None or blocks >= DEGREE + 2:
            out.append((first, last, c))
        else:
            out += [(first + j * c, first + (j + 1) * c - 1, None) for j in range(blocks)]
        if last is not None and hi is not None and last < hi:
            out.append((last + 1, hi, None))
    return out


# ------------------------------------------------------------------------------- fitting


def _evaluate(count: Count, pieces: list[Piece], lengths: Sequence[int], width: int
              ) -> list[list[int]]:
    """`count` at each of `lengths`, as `width` columns, piece by piece: in closed form where a
    checked fit holds enough lengths to pay for itself, else directly."""
    columns: list[list[int]] = [[] for _ in range(width)]
    for lo, hi, period in pieces:
        start = bisect_left(lengths, lo)
        stop = len(lengths) if hi is None else bisect_right(lengths, hi)
        asked = lengths[start:stop]
        if not asked:
            continue
        fit = (_fit_line(count, lo, hi, asked) if period is None
               else _fit_blocks(count, lo, hi, period, asked))
        if fit is None:
            for column, values in zip(columns, zip(*[count(s) for s in asked])):
                column += values
        else:
            for column, values in zip(columns, fit.columns(asked)):
                column += values
    return columns


def _differences(values: Sequence[Vector]) -> list[Vector]:
    """Forward differences at the first value: Δ⁰, Δ¹, ... (integer vectors)."""
    out, row = [], list(values)
    while row:
        out.append(row[0])
        row = [tuple(b - a for a, b in zip(x, y)) for x, y in zip(row, row[1:])]
    return out


def _falling(j: int) -> list[int]:
    """Coefficients (constant first) of t·(t−1)···(t−j+1) = j!·C(t, j)."""
    coefs = [1]
    for i in range(j):  # times (t − i)
        coefs = [a - i * b for a, b in zip([0] + coefs, coefs + [0])]
    return coefs


def _trim(coefs: list[int]) -> list[int]:
    while len(coefs) > 1 and coefs[-1] == 0:
        coefs.pop()
    return coefs


def _horner(coefs: Sequence[int], xs: Sequence[int]) -> list[int]:
    """Σ_a coefs[a]·x^a at each x, a pass per coefficient over the list."""
    out = [coefs[-1]] * len(xs)
    for c in reversed(coefs[:-1]):
        out = [c + x * y for x, y in zip(xs, out)]
    return out


class _Fit:
    """A polynomial in (u, v) per family from Newton's forward differences Δ_uⁱΔ_vʲ at (0, 0):
    p = Σ_ij Δ_uⁱΔ_vʲ·C(u, i)·C(v, j), kept as whole coefficients of u^a·v^b over one common
    denominator (i!·j! divides it), so that it is evaluated in integers, exactly. A 1-D fit has
    no v; for blocks, u = k − k0 and v = r, where s = k·c + r + 1."""

    def __init__(self, diffs: list[list[Vector]], origin: int, period: Optional[int]):
        self.origin, self.period = origin, period
        di, dj = len(diffs) - 1, len(diffs[0]) - 1
        self.denominator = factorial(di) * factorial(dj)
        self.coefs = []  # per family: per power of v, the coefficients in u
        for f in range(len(diffs[0][0])):
            grid = [[0] * (di + 1) for _ in range(dj + 1)]
            for i in range(di + 1):
                fu = _falling(i)
                for j in range(dj + 1):
                    delta = diffs[i][j][f]
                    if not delta:
                        continue
                    scale = delta * self.denominator // (factorial(i) * factorial(j))
                    fv = _falling(j)
                    for b, cv in enumerate(fv):
                        for a, cu in enumerate(fu):
                            grid[b][a] += scale * cu * cv
            self.coefs.append(_trim([_trim(row) for row in grid]) if any(map(any, grid))
                              else [[0]])

    def _uv(self, asked: Sequence[int]) -> tuple[list[int], list[int]]:
        if self.period is None:
            return [s - self.origin for s in asked], []
        c, k0 = self.period, self.origin
        pairs = [divmod(s - 1, c) for s in asked]
        return [k - k0 for k, _ in pairs], [r for _, r in pairs]

    def columns(self, asked: Sequence[int]) -> list[list[int]]:
        us, vs = self._uv(asked)
        den = self.denominator
        out = []
        for per_v in self.coefs:
            column = _horner(per_v[-1], us)
            for coefs in reversed(per_v[:-1]):
                column = [c + v * y for c, v, y in zip(_horner(coefs, us), vs, column)]
            out.append(column if den == 1 else [x // den for x in column])
        return out

    def __call__(self, s: int) -> Vector:
        return tuple(column[0] for column in self.columns([s]))


def _fit_line(count: Count, lo: int, hi: Optional[int], asked: Sequence[int]) -> Optional[_Fit]:
    """A checked polynomial for `count` on lengths lo..hi, or None (too few lengths asked to
    pay for it, too short a piece to check it, or a check failed)."""
    m = DEGREE
    if len(asked) <= m + 5 or (hi is not None and hi - lo < m + 1):
        return None
    diffs = _differences([count(lo + t) for t in range(m + 1)])
    poly = _Fit([[d] for d in diffs], lo, None)
    checks = {lo + m + 1, asked[-1], asked[len(asked) // 2]} | ({hi} if hi is not None else set())
    return poly if all(count(s) == poly(s) for s in sorted(checks)) else None


def _fit_blocks(count: Count, lo: int, hi: Optional[int], period: int, asked: Sequence[int]
                ) -> Optional[_Fit]:
    """A checked polynomial in (k, r) for `count` on the whole blocks lo..hi of `period`
    lengths, or None (as `_fit_line`)."""
    m, c = DEGREE, period
    mr = min(m, c - 1)  # a block of c lengths holds at most c − 1 differences
    if len(asked) <= (m + 2) * (mr + 2) + 6:
        return None
    k0 = (lo - 1) // c

    def value(u: int, v: int) -> Vector:
        return count((k0 + u) * c + v + 1)

    rows = [_differences([value(u, v) for v in range(mr + 1)]) for u in range(m + 1)]
    diffs = [list(col) for col in zip(*[_differences([rows[u][j] for u in range(m + 1)])
                                        for j in range(mr + 1)])]
    poly = _Fit(diffs, k0, c)
    # A grid one wider in each variable (a polynomial of degree <= m + 1 in each that agrees
    # on it is this one), each end of a block, and the lengths asked for.
    grid = [(m + 1, v) for v in range(mr + 1)]
    if c > mr + 1:
        grid += [(u, mr + 1) for u in range(m + 2)]
    grid += [(0, c - 1), (m + 1, c - 1)]
    checks = {(k0 + u) * c + v + 1 for u, v in grid} | {asked[-1], asked[len(asked) // 2]}
    if hi is not None:
        checks.add(hi)
    return poly if all(count(s) == poly(s) for s in sorted(checks)) else None
