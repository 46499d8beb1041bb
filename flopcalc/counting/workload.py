"""The workload a forward pass is counted for."""

from __future__ import annotations


from ..records import dataclass
from ..kinds.base import CONVENTIONS, SCANS, Convention, Scan, Span


@dataclass(frozen=True, slots=True)
class Workload:
    """What one forward pass processes: `batch` sequences of `seq` tokens (the encoder's
    source length of an encoder-decoder model, whose decoder reads `tgt_seq`), with attention
    counted under `attention` (`full`: every pair; `causal`: the pairs each layer's mask lets
    through). `images` per sequence of `image_size` (height, width) run through the model's
    vision towers first; their tokens are already in `seq` (`counting.images`). `scan`: how
    chunked scans count their core (`kinds.base.SCANS`: `chunked` as Hugging Face computes it,
    or `recurrent`, token by token). `packed`: the lengths of the samples packed one after
    another into each sequence (they sum to the self-attending stack's length), each attending
    only within itself (`Span.pairs`); empty: one sample per sequence. Only attention pairs
    change: the projections, MLPs and linear-time mixers see the same tokens either way."""

    seq: int
    tgt_seq: int
    batch: int = 1
    attention: Convention = "full"
    images: int = 0
    image_size: tuple[int, int] = (0, 0)
    scan: Scan = "chunked"
    packed: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        # the kinds compare with "full" and "causal": any other text would count as one of them
        if self.attention not in CONVENTIONS:
            raise ValueError(f"attention is one of {', '.join(CONVENTIONS)}, got "
                             f"{self.attention!r}")
        if self.scan not in SCANS:
            raise ValueError(f"scan is one of {', '.join(SCANS)}, got {self.scan!r}")
        if self.packed and (min(self.packed) < 1 or sum(self.packed) != self.tgt_seq
                            or self.tgt_seq != self.seq):
            raise ValueError(f"packed samples {self.packed} must be >= 1 and fill one "
                             f"stack's sequence of {self.seq}")

    def length(self, stack: str) -> int:
        """Tokens per sequence a layer of `stack` processes."""
        return self.seq if stack == "encoder" else self.tgt_seq

    def span(self, stack: str, slot: str) -> Span:
        """What a sublayer of `stack` processes: its own tokens, or for cross-attention the
        decoder's queries over the encoder's keys."""
        if slot in ("cross_attn", "ngram_attn"):  # ProphetNet's streams read the source too
            return Span(self.batch, self.tgt_seq, self.seq, self.attention, self.scan)
        n = self.length(stack)
        return Span(self.batch, n, n, self.attention, self.scan, self.packed)
