"""`--packed`: sample lengths packed into each training sequence, read and checked.

A packed sequence holds several samples one after another, and each token attends only to the
tokens of its own sample (a block-diagonal mask: FlashAttention's variable-length kernels with
cu_seqlens, Transformer Engine's THD layout, Megatron-Core's packed_seq_params). The pairs one
head scores are then Σ Lᵢ² (every pair of each sample) or Σ Lᵢ(Lᵢ+1)/2 (causal inside each
sample), a window or chunk mask applying inside each sample too (`kinds.base.Span.pairs`).

The form is a list of lengths, `1k,2k,1k` (k = 1024), where an entry `LxN` stands for N samples
of length L (`4kx8` = eight samples of 4,096): the count depends only on how many samples of
each length a sequence holds, so a histogram written this way is an exact length distribution.
A random distribution (uniform between two lengths, say) would make the count random, so none
is offered: draw the lengths and give them as a list.
"""

from __future__ import annotations

from typing import Any, Optional

from ..errors import FlopcalcError
from ..numbers import parse_length

MAX_SAMPLES = 65_536  # samples per sequence: a bound on the work, above any recipe's packing
MAX_TEXT = 100_000  # characters of --packed


def parse_packed(text: Optional[str], seq: int, spec: Any, name: str) -> tuple[int, ...]:
    """The sample lengths of `--packed TEXT` (empty without it), checked against the sequence
    length `seq` they must fill and the model's context, which no sample may exceed."""
    if text is None or text == "":
        return ()
    if spec.is_encoder_decoder:
        raise FlopcalcError(f"--packed: {name} is an encoder-decoder model; packing is counted "
                            "for one stack's self-attention: drop --packed")
    if len(text) > MAX_TEXT:
        raise FlopcalcError(f"--packed: {len(text):,} characters is too long (at most "
                            f"{MAX_TEXT:,}); write repeated lengths as LxN, e.g. 4kx8")
    lengths: list[int] = []
    for entry in text.split(","):
        entry = entry.strip()
        length, times = entry, "1"
        if "x" in entry.lower():
            length, times = entry.lower().split("x", 1)
        if not length.strip() or not times.strip():
            raise FlopcalcError(f"--packed: {entry!r} is not a length or LENGTHxCOUNT; give "
                                "lengths such as 1k,2k,1k or 4kx8")
        size = parse_length(length.strip(), "--packed")
        count = parse_length(times.strip(), "--packed (a count after x)")
        if size < 1 or count < 1:
            raise FlopcalcError(f"--packed: {entry!r}: every sample needs at least 1 token "
                                "(a length and a count >= 1)")
        if len(lengths) + count > MAX_SAMPLES:
            raise FlopcalcError(f"--packed: more than {MAX_SAMPLES:,} samples in one sequence; "
                                "give at most that many")
        lengths += [size] * count
    context = spec.max_seq_len
    if context is not None and max(lengths) > context:
        raise FlopcalcError(f"--packed: a sample of {max(lengths):,} tokens is longer than "
                            f"{name}'s context of {context:,}; give samples of at most that")
    if sum(lengths) != seq:
        raise FlopcalcError(f"--packed: the samples sum to {sum(lengths):,} tokens, not the "
                            f"sequence length {seq:,}; give lengths that fill --seq (pad with "
                            "a last sample)")
    return tuple(lengths)


def packed_line(lengths: tuple[int, ...]) -> str:
    """A "how counted" line: how many samples, their lengths, what packing changes."""
    n, lo, hi = len(lengths), min(lengths), max(lengths)
    size = f"{lo:,} tokens" if lo == hi else f"{lo:,} to {hi:,} tokens"
    return (f"packed: {n:,} sample{'s' if n != 1 else ''} of {size} per sequence; attention "
            "only inside each sample (Σ Lᵢ² pairs, causal Σ Lᵢ(Lᵢ+1)/2)")
