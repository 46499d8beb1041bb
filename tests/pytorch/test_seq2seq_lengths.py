"""Encoder-decoders at a source length other than the target length, against FlopCounterMode
(the sweep runs them at one length): cross-attention's queries from the target, keys and
values from the source. Whisper's source is 2·max_source_positions mel frames, so its `--seq`
is max_source_positions and only the target length varies."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.sweep import Case, build, config_of, flopcalc_report, saved  # noqa: E402
from tests.sweep.cases_encoders import CASES  # noqa: E402

pytestmark = pytest.mark.torch
BY_TYPE = {c.model_type: c for c in CASES}


def counted(model, inputs) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        model(**inputs, use_cache=False)
    return counter.get_total_flops()


@pytest.mark.parametrize("model_type, variant", [("bart", 2), ("umt5", 0), ("marian", 0),
                                                 ("pegasus", 1)])
def test_source_and_target_lengths(model_type, variant):
    import torch

    case: Case = BY_TYPE[model_type]
    config = config_of(model_type, {**case.variants[variant], **case.shrink})
    data = saved(config)
    model = build(case, config, "cpu").train()
    target_vocab = getattr(config, "decoder_vocab_size", None) or config.vocab_size
    for batch, source, target in ((1, 7, 3), (2, 4, 9)):
        torch.manual_seed(1)
        inputs = {"input_ids": torch.randint(0, config.vocab_size, (batch, source)),
                  "decoder_input_ids": torch.randint(0, target_vocab, (batch, target))}
        ours = flopcalc_report(data, seq=source, batch=batch, tgt_seq=target).flops.forward
        assert ours == counted(model, inputs), (batch, source, target)


def test_whisper_target_lengths():
    import torch

    case = BY_TYPE["whisper"]
    config = config_of("whisper", {**case.variants[0], **case.shrink})
    data = saved(config)
    model = build(case, config, "cpu").train()
    frames, source = 2 * config.max_source_positions, config.max_source_positions
    for batch, target in ((1, 3), (2, 11)):
        torch.manual_seed(1)
        inputs = {"input_features": torch.randn(batch, config.num_mel_bins, frames),
                  "decoder_input_ids": torch.randint(0, config.vocab_size, (batch, target))}
        ours = flopcalc_report(data, seq=source, batch=batch, tgt_seq=target).flops.forward
        assert ours == counted(model, inputs), (batch, target)
